"""localauthd's ssh-agent door (localauthd(8), AGENT) driven on its socket by Python clients
(ssh_agent_wire), without ssh: hostile peers, one uid against another, a peer that goes away
mid-request, frames that are not the protocol, the messages it does not serve, and the
session-bind rules, each before any scan; then a signature with the finger, its prompt on
the requester's terminal, and the reuse window.

The service runs from build/ with ``--listen`` and ``--agent-listen`` (servicebed), the
installation's helper, the test bed's fprintd and virtual reader; keys are placed in root's
state directory as SSHKeyRecord text (``P256Key.record``), as ``localauthctl ssh create``
leaves them. Clients run as throwaway users, on a pseudo-terminal where a scan is wanted
(the prompt goes to the requester's controlling terminal).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_ssh_agent_door.py
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
import ssh_agent_wire as wire  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)
from servicebed import Service, namespace_prefix  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

ENROLLED, OTHER = "f1", "f9"
FINGER = "right-index-finger"

# A client as the user: connects to the agent socket (argv[1]) and runs the operations of
# argv[2] (JSON) in order, printing one line for each reply:
#   ["ask", HEX]        a message; its reply's body in hex, or "closed"
#   ["raw", HEX]        bytes as they are (a frame the test made itself), then the reply
#   ["wait", ""]        "READY", then waits for a line on its standard input
#   ["echo", ""]        "ECHO on" or "ECHO off": its terminal's echo setting now
#   ["hand-off", HEX]   the message sent, the connection given to a child, and this process
#                       (the peer the service pinned) waits to be killed; the child writes
#                       what comes back ("CHILD ...") to the file $CHILD_OUT (the terminal
#                       hangs up when the peer, its session's leader, is killed)
DRIVER = r"""
import json, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
import ssh_agent_wire as wire
c = wire.Client(sys.argv[1], timeout=60)
def show(tag, r):
    print(tag, "closed" if r is None else r.hex(), flush=True)
for op, arg in json.loads(sys.argv[2]):
    if op == "ask":
        show("REPLY", c.ask(bytes.fromhex(arg)))
    elif op == "raw":
        c.send_raw(bytes.fromhex(arg))
        show("REPLY", c.read_reply())
    elif op == "echo":
        import termios
        print("ECHO", "on" if termios.tcgetattr(0)[3] & termios.ECHO else "off", flush=True)
    elif op == "wait":
        print("READY", flush=True)
        sys.stdin.readline()
    elif op == "hand-off":
        c.send_raw(wire.frame(bytes.fromhex(arg)))
        if os.fork() == 0:
            import signal
            signal.signal(signal.SIGHUP, signal.SIG_IGN)   # its session's leader is killed
            r = c.read_reply()
            with open(os.environ["CHILD_OUT"], "w") as out:
                out.write("CHILD " + ("closed" if r is None else r.hex()) + "\n")
            os._exit(0)
        print("PEER WAITS", flush=True)
        time.sleep(120)
"""


class AgentWorld:
    """Two throwaway users (alice enrolled with the virtual print f1), a state directory, the
    service with its agent socket, and the client driver where the users can run it."""

    def __init__(self, inst, bed, syslog, alice, bob, tmp: Path, socket_path=None, state=None, extra=()):
        self.inst, self.bed, self.syslog, self.alice, self.bob, self.dir = inst, bed, syslog, alice, bob, tmp
        self.state = state or tmp / "state"
        if state is None:
            self.state.mkdir(mode=0o700)
            inst.write_bed_config(bed, self.state)
        bed.enroll(alice.name, FINGER, ENROLLED)
        shutil.copy2(Path(__file__).with_name("ssh_agent_wire.py"), tmp / "ssh_agent_wire.py")
        (tmp / "driver.py").write_text(DRIVER)
        self.socket = tmp / "ssh-agent"
        self.service = Service(inst, syslog, "--agent-listen", str(self.socket), *extra, socket_path=socket_path)

    def add_key(self, user, name="work", **policy) -> wire.P256Key:
        """A key of ``user``'s in root's store, as `localauthctl ssh create` leaves it."""
        key = wire.P256Key()
        d = self.state / "ssh" / str(user.uid)
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        (self.state / "ssh").chmod(0o700)
        f = d / f"{name}.key"
        f.write_text(key.record(name, user.uid, **policy))
        f.chmod(0o600)
        return key

    def argv(self, ops) -> list:
        return ["/usr/bin/python3", str(self.dir / "driver.py"), str(self.socket), json.dumps(ops)]

    def run(self, user, ops, timeout=60):
        """The driver as ``user``, no terminal: its reply lines, and what the reader saw."""
        mark = self.bed.mark()
        p = subprocess.run(system.as_user(user, self.argv(ops)), capture_output=True, text=True,
                           timeout=timeout, env=system.default_env())
        assert p.returncode == 0, p.stderr
        return replies(p.stdout), self.bed.events(mark)

    def on_pty(self, user, ops, env=None):
        """The driver as ``user`` on a pseudo-terminal of its own (its controlling terminal),
        which is made the user's before the driver goes on, as a terminal emulator's is
        (pexpect opens it as root): the agent prompts only on a terminal of the user's."""
        pt = system.run_on_pty(self.argv([["wait", ""]] + ops), env=system.default_env(**(env or {})), user=user,
                               prefix=namespace_prefix(self.syslog), timeout=60)
        pt.expect("READY", timeout=40)
        tty = os.readlink(f"/proc/{driver_pid(user)}/fd/0")
        assert tty.startswith("/dev/pts/"), tty
        os.chown(tty, user.uid, -1)
        pt.sendline("")
        return pt

    def log_since(self, mark, ident="localauth-helper"):
        self.syslog._sync()
        return [m for i, m in self.syslog.lines[mark:] if i == ident]

    def close(self):
        self.service.stop()


def driver_pid(user) -> int:
    """The driver's first process of ``user`` (a hand-off's child comes later)."""
    pids = [int(p) for p in subprocess.run(["pgrep", "-u", str(user.uid), "-f", "driver.py"],
                                           capture_output=True, text=True).stdout.split()]
    return min(pids, key=lambda p: int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[19]))


def replies(text):
    out = []
    for line in text.replace("\r", "").splitlines():
        if line.startswith(("REPLY ", "CHILD ")):
            word = line.split(" ", 1)[1]
            out.append(None if word == "closed" else bytes.fromhex(word))
    return out


def expect(world, pt, log_mark, pattern, timeout=40):
    """``pt.expect``, with the helper's lines in the failure."""
    try:
        pt.expect(pattern, timeout=timeout)
    except Exception:
        raise AssertionError(f"{pattern!r} not shown; the helper said {world.log_since(log_mark)}") from None


def scans(events):
    return [e for e in events if e.name == "VerifyFingerSelected"]


def make_world(inst, bed, syslog, extra=()):
    tmp = Path(tempfile.mkdtemp(prefix="localauth-agent-"))
    tmp.chmod(0o755)
    try:
        with system.ThrowawayUser(prefix="la-ag-") as alice, system.ThrowawayUser(prefix="la-ag-") as bob:
            w = AgentWorld(inst, bed, syslog, alice, bob, tmp, extra=extra)
            try:
                yield w
            finally:
                w.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def world(inst, bed, syslog):
    yield from make_world(inst, bed, syslog)


@pytest.fixture
def slow_world(inst, bed, syslog):
    """The agent's rate of helper starts for a user: one at once, two a second."""
    yield from make_world(inst, bed, syslog, extra=("--agent-start-rate", "1/2"))


def test_each_uid_sees_only_its_own_keys_and_cannot_sign_with_anothers(world):
    key = world.add_key(world.alice, "work")
    ask = [["ask", wire.request_identities().hex()]]
    (mine,), _ = world.run(world.alice, ask)
    assert wire.identities(mine) == [(key.blob, "work")]
    data = wire.sshsig_data("git", b"tree 0\n")
    (theirs, signed), events = world.run(world.bob, ask + [["ask", wire.sign_request(key.blob, data).hex()]])
    assert wire.identities(theirs) == []
    assert signed == bytes([wire.FAILURE]) and scans(events) == []


def test_messages_it_does_not_serve_get_failure_and_the_connection_goes_on(world):
    world.add_key(world.alice, "work")
    bodies = [bytes([wire.ADD_IDENTITY]) + wire.string("ecdsa-sha2-nistp256"),
              bytes([wire.REMOVE_ALL]), bytes([wire.LOCK]) + wire.string("pw"), bytes([wire.UNLOCK]),
              bytes([99]), wire.extension("query"), wire.extension("no-such@example.org", b"\0\0")]
    got, events = world.run(world.alice, [["ask", b.hex()] for b in bodies]
                            + [["ask", wire.request_identities().hex()]])
    assert got[:-1] == [bytes([wire.FAILURE])] * len(bodies)
    assert len(wire.identities(got[-1])) == 1 and scans(events) == []


@pytest.mark.parametrize("raw, why", [
    (wire.u32(wire.MAX_FRAME + 1) + b"\x0b", "a frame of 262145 bytes"),
    (wire.u32(0), "an empty frame"),
    (wire.frame(bytes([wire.SIGN_REQUEST]) + wire.u32(1000) + b"short"), "a message that does not decode"),
], ids=["oversized", "empty", "garbled"])
def test_a_frame_that_is_not_the_protocol_closes_the_connection_with_a_line(world, raw, why):
    mark = world.syslog.mark()
    got, events = world.run(world.alice, [["raw", raw.hex()]])
    assert got == [None] and scans(events) == []
    lines = [m for m in world.log_since(mark) if "ssh-agent connection closed" in m]
    assert len(lines) == 1 and why in lines[0], world.log_since(mark)


def test_session_binds_are_verified_and_never_rebound_all_before_any_scan(world):
    key = world.add_key(world.alice, "work")
    host, stranger = wire.HostKey(), wire.HostKey()
    sid, other = os.urandom(32), os.urandom(32)
    good = wire.session_bind(host.blob, sid, host.sign(sid), False)
    again = wire.session_bind(host.blob, other, host.sign(other), False)
    wrong_session = wire.sign_request(key.blob, wire.userauth_data(other, "git", key.blob, host.blob))
    wrong_host = wire.sign_request(key.blob, wire.userauth_data(sid, "git", key.blob, stranger.blob))
    mark = world.syslog.mark()
    got, events = world.run(world.alice, [["ask", good.hex()], ["ask", wrong_session.hex()],
                                          ["ask", wrong_host.hex()], ["ask", again.hex()]])
    assert got == [bytes([wire.SUCCESS]), bytes([wire.FAILURE]), bytes([wire.FAILURE]), bytes([wire.FAILURE])]
    assert scans(events) == []
    log = world.log_since(mark)
    assert any("session-bind refused: the connection is bound for authentication already" in m for m in log), log
    assert sum("refused-session" in m for m in log) == 2, log


def test_after_a_session_bind_that_fails_nothing_is_signed_on_the_connection(world):
    """On the requester's terminal, where the same signature would ask for the finger
    (test_a_git_signature_asks_the_finger...): refused at once, the prompt never shown,
    even after a bind that verifies."""
    key = world.add_key(world.alice, "work")
    host, stranger = wire.HostKey(), wire.HostKey()
    sid = os.urandom(32)
    forged = wire.session_bind(host.blob, sid, stranger.sign(sid), False)
    good = wire.session_bind(host.blob, sid, host.sign(sid), False)
    sign = wire.sign_request(key.blob, wire.sshsig_data("git", b"tree 5\n"))
    mark, log_mark = world.bed.mark(), world.syslog.mark()
    pt = world.on_pty(world.alice, [["ask", forged.hex()], ["ask", sign.hex()], ["ask", good.hex()],
                                     ["ask", sign.hex()]])
    res = pt.finish(timeout=40)
    assert replies(res.output) == [bytes([wire.FAILURE]), bytes([wire.FAILURE]), bytes([wire.SUCCESS]),
                                   bytes([wire.FAILURE])], res.output
    assert scans(world.bed.events(mark)) == [] and "sign a git commit" not in res.output, res.output
    log = world.log_since(log_mark)
    assert any("session-bind refused: the host key's signature over the session identifier does not verify" in m
               for m in log), log
    refused = [m for m in log if "key work refused-bind-failed" in m]
    assert len(refused) == 2 and all("a session-bind on this connection was refused" in m for m in refused), log


def test_a_forwarded_request_is_refused_without_a_scan_for_a_key_that_does_not_allow_it(world):
    key = world.add_key(world.alice, "work")
    hop = wire.HostKey()
    sid = os.urandom(32)
    bind = wire.session_bind(hop.blob, sid, hop.sign(sid), True)
    sign = wire.sign_request(key.blob, wire.sshsig_data("git", b"commit\n"))
    mark = world.syslog.mark()
    got, events = world.run(world.alice, [["ask", bind.hex()], ["ask", sign.hex()]])
    assert got == [bytes([wire.SUCCESS]), bytes([wire.FAILURE])] and scans(events) == []
    assert any("refused-forwarded" in m and f"forwarded through host key ED25519 {hop.fingerprint()}" in m
               for m in world.log_since(mark)), world.log_since(mark)


def test_data_that_is_neither_a_login_nor_an_sshsig_signature_is_refused(world):
    key = world.add_key(world.alice, "work")
    got, events = world.run(world.alice, [["ask", wire.sign_request(key.blob, b"anything at all").hex()]])
    assert got == [bytes([wire.FAILURE])] and scans(events) == []


def test_a_git_signature_asks_the_finger_on_the_requesters_terminal_and_verifies(world):
    key = world.add_key(world.alice, "work")
    data = wire.sshsig_data("git", b"tree 1\n")
    mark, log_mark = world.bed.mark(), world.syslog.mark()
    pt = world.on_pty(world.alice, [["ask", wire.sign_request(key.blob, data).hex()]])
    expect(world, pt, log_mark, "SSH key work: sign a git commit")
    pt.expect(r"requested by python3", timeout=10)
    world.bed.inject_async([f"SCAN {ENROLLED}"]).wait(30)
    res = pt.finish(timeout=40)
    (reply,) = replies(res.output)
    assert key.verify(wire.signature(reply), data), res.output
    assert len(scans(world.bed.events(mark))) == 1
    log = world.log_since(log_mark)
    assert any(f"user {world.alice.name} key work signed: SSH key work: sign a git commit; program python3" in m
               for m in log), log


def test_inside_the_reuse_window_the_same_scope_signs_without_a_scan(world):
    key = world.add_key(world.alice, "work", reuse=60)
    first, second = wire.sshsig_data("git", b"one\n"), wire.sshsig_data("git", b"two\n")
    other_scope = wire.sshsig_data("file", b"three\n")
    pt = world.on_pty(world.alice, [["ask", wire.sign_request(key.blob, first).hex()]])
    pt.expect("sign a git commit", timeout=40)
    world.bed.inject_async([f"SCAN {ENROLLED}"]).wait(30)
    assert key.verify(wire.signature(replies(pt.finish(timeout=40).output)[0]), first)
    got, events = world.run(world.alice, [["ask", wire.sign_request(key.blob, second).hex()],
                                          ["ask", wire.sign_request(key.blob, other_scope).hex()]])
    assert key.verify(wire.signature(got[0]), second) and scans(events) == []
    # Another namespace is another scope; without a terminal there is no prompt: refused.
    assert got[1] == bytes([wire.FAILURE])


# Connections opened all at once, then one sign request written on each, then every reply
# read: argv[1] the socket, argv[2] the key's blob (hex), argv[3] how many. One line per
# connection: its reply's body in hex, or "closed".
MANY = r"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
import ssh_agent_wire as wire
blob, n = bytes.fromhex(sys.argv[2]), int(sys.argv[3])
clients = [wire.Client(sys.argv[1], timeout=60) for _ in range(n)]
for i, c in enumerate(clients):
    try:
        c.send_raw(wire.frame(wire.sign_request(blob, wire.sshsig_data("git", b"commit %d\n" % i))))
    except (BrokenPipeError, ConnectionResetError):
        pass
for c in clients:
    r = c.read_reply()
    print("REPLY", "closed" if r is None else r.hex(), flush=True)
"""


def test_over_the_rate_of_helper_starts_connections_wait_and_are_all_answered(slow_world):
    """``git rebase`` of signed commits inside the reuse window: ssh-keygen for each commit,
    faster than the rate (here one start at once, two a second). Every connection past the
    rate waits for its helper, within the user's limit of 8, and none is cut off."""
    world = slow_world
    key = world.add_key(world.alice, "work", reuse=60)
    first = wire.sshsig_data("git", b"first\n")
    pt = world.on_pty(world.alice, [["ask", wire.sign_request(key.blob, first).hex()]])
    pt.expect("sign a git commit", timeout=40)
    world.bed.inject_async([f"SCAN {ENROLLED}"]).wait(30)
    assert key.verify(wire.signature(replies(pt.finish(timeout=40).output)[0]), first)
    (world.dir / "many.py").write_text(MANY)
    n = 6
    mark, log_mark = world.bed.mark(), world.syslog.mark()
    p = subprocess.run(system.as_user(world.alice, ["/usr/bin/python3", str(world.dir / "many.py"),
                                                    str(world.socket), key.blob.hex(), str(n)]),
                       capture_output=True, text=True, timeout=120, env=system.default_env())
    assert p.returncode == 0, p.stderr
    got = replies(p.stdout)
    assert len(got) == n and all(r is not None for r in got), (got, world.log_since(log_mark, "localauthd"))
    for i, r in enumerate(got):
        assert key.verify(wire.signature(r), wire.sshsig_data("git", b"commit %d\n" % i)), (i, r)
    assert scans(world.bed.events(mark)) == []


@pytest.fixture
def narrow_world(inst, bed, syslog):
    """Two agent helpers at once for a user (--agent-per-user-limit 2)."""
    yield from make_world(inst, bed, syslog, extra=("--agent-per-user-limit", "2"))


# Connections as parallel ssh logins make them (each closes its agent connection when its
# login is done): argv[1] the socket, argv[2] the key's blob (hex), argv[3] how many opened
# all at once, each with a sign request written; then each reply read, in order, and that
# connection closed. With argv[4] = BOUND (localauthd's bound on a user's held connections),
# first two connections are answered and kept open (their helpers run: the limit of two is
# reached), then BOUND more wait, one more is refused ("OVER"), the one numbered 7 of those
# waiting hangs up, one more comes in its place, and the two first close. One line a
# connection: a tag and its reply's body in hex, or "closed".
PARALLEL = r"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
import ssh_agent_wire as wire
path, blob, n = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3])
bound = int(sys.argv[4]) if len(sys.argv) > 4 else None
def opened(i):
    c = wire.Client(path, timeout=120)
    try:
        c.send_raw(wire.frame(wire.sign_request(blob, wire.sshsig_data("git", b"commit %d\n" % i))))
    except (BrokenPipeError, ConnectionResetError):
        pass
    return c
def held_in_place(i):
    # The freed place is localauthd's once it has seen the hang-up, which a loaded machine
    # sees later than this process closes: a connection refused meanwhile (closed, so
    # readable while the served ones still hold every helper) is opened again.
    import select, time
    for _ in range(300):
        c = opened(i)
        if not select.select([c.sock], [], [], 0.2)[0]:
            return c
        c.close()
        time.sleep(0.1)
    return c
def answer(tag, c, close=True):
    r = c.read_reply()
    print(tag, "closed" if r is None else r.hex(), flush=True)
    if close:
        c.close()
if bound is None:
    clients = [opened(i) for i in range(n)]
    for i, c in enumerate(clients):
        answer("REPLY %d" % i, c)
else:
    served = [opened(i) for i in range(2)]
    for i, c in enumerate(served):
        answer("SERVED %d" % i, c, close=False)
    held = {i: opened(i) for i in range(2, 2 + bound)}
    answer("OVER %d" % (2 + bound), opened(2 + bound))
    held.pop(7).close()
    held[3 + bound] = held_in_place(3 + bound)
    for c in served:
        c.close()
    for i, c in held.items():
        answer("HELD %d" % i, c)
"""


def run_parallel(world, key, *args):
    """PARALLEL as alice: {tag: reply (None: closed)}, in order."""
    (world.dir / "parallel.py").write_text(PARALLEL)
    p = subprocess.run(system.as_user(world.alice, ["/usr/bin/python3", str(world.dir / "parallel.py"),
                                                    str(world.socket), key.blob.hex(), *map(str, args)]),
                       capture_output=True, text=True, timeout=600, env=system.default_env())
    assert p.returncode == 0, p.stderr
    got = {}
    for line in p.stdout.splitlines():
        tag, _, word = line.rpartition(" ")
        got[tag] = None if word == "closed" else bytes.fromhex(word)
    return got


def sign_first_with_the_finger(world, key):
    first = wire.sshsig_data("git", b"first\n")
    pt = world.on_pty(world.alice, [["ask", wire.sign_request(key.blob, first).hex()]])
    pt.expect("sign a git commit", timeout=40)
    world.bed.inject_async([f"SCAN {ENROLLED}"]).wait(30)
    assert key.verify(wire.signature(replies(pt.finish(timeout=40).output)[0]), first)


def verifies(key, tag, reply):
    i = int(tag.split()[-1])
    return reply is not None and key.verify(wire.signature(reply), wire.sshsig_data("git", b"commit %d\n" % i))


def test_over_the_limit_of_helpers_connections_wait_and_are_all_answered(narrow_world):
    """``git submodule update --jobs 6`` over SSH inside the reuse window, with two agent
    helpers at once for the user: the connections past the limit wait for a helper of
    their user's to end (their client closing), first come first served, and none is cut
    off (ssh would go on without the agent and fail its login)."""
    world = narrow_world
    key = world.add_key(world.alice, "work", reuse=60)
    sign_first_with_the_finger(world, key)
    mark, log_mark = world.bed.mark(), world.syslog.mark()
    got = run_parallel(world, key, 6)
    assert list(got) == [f"REPLY {i}" for i in range(6)], got
    unanswered = [tag for tag, r in got.items() if not verifies(key, tag, r)]
    assert unanswered == [], (unanswered, world.log_since(log_mark, "localauthd"))
    assert scans(world.bed.events(mark)) == []


def test_a_connection_that_hangs_up_while_it_waits_frees_its_place(narrow_world):
    """Past the limit of helpers, a user's connections are held up to a bound (64, so that
    a hostile user cannot take localauthd's descriptors); one more is refused. One that
    hangs up while held is closed and its place freed: the next one is held in its place,
    and every one held is answered once the first two close."""
    world = narrow_world
    key = world.add_key(world.alice, "work", reuse=60)
    sign_first_with_the_finger(world, key)
    bound = 64   # AgentDoor.heldPerUser
    mark, log_mark = world.bed.mark(), world.syslog.mark()
    got = run_parallel(world, key, 0, bound)
    assert [verifies(key, t, got[t]) for t in ("SERVED 0", "SERVED 1")] == [True, True], got
    assert got[f"OVER {2 + bound}"] is None, got
    held = [t for t in got if t.startswith("HELD ")]
    assert held == [f"HELD {i}" for i in range(2, 3 + bound + 1) if i not in (7, 2 + bound)], held
    unanswered = [tag for tag in held if not verifies(key, tag, got[tag])]
    assert unanswered == [], (unanswered, world.log_since(log_mark, "localauthd"))
    assert scans(world.bed.events(mark)) == []
    log = world.log_since(log_mark, "localauthd")
    assert any("agent connections of this user are held already (the bound)" in m for m in log), log


def test_a_peer_that_exits_mid_request_gets_nothing(world):
    """The connecting process (the pinned peer) asks, hands the connection to a child and
    is killed while the reader waits: the scan ends, and the child reads FAILURE."""
    key = world.add_key(world.alice, "work")
    data = wire.sshsig_data("git", b"tree 2\n")
    mark, log_mark = world.bed.mark(), world.syslog.mark()
    out = world.dir / "child.out"
    out.touch()
    os.chown(out, world.alice.uid, -1)
    pt = world.on_pty(world.alice, [["hand-off", wire.sign_request(key.blob, data).hex()]],
                      env={"CHILD_OUT": str(out)})
    pt.expect("PEER WAITS", timeout=40)
    deadline = time.monotonic() + 30
    while not scans(world.bed.events(mark)):
        assert time.monotonic() < deadline, "no scan started"
        time.sleep(0.05)
    # The peer is the older of the driver's two processes (the child was forked from it).
    os.kill(driver_pid(world.alice), 9)
    pt.finish(timeout=40)
    deadline = time.monotonic() + 30
    while not out.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert replies(out.read_text()) == [bytes([wire.FAILURE])], out.read_text()
    log = world.log_since(log_mark)
    assert any("the requesting program ended" in m for m in log), log


def test_a_client_that_keeps_asking_for_what_it_cannot_have_is_closed_after_16_refusals(world):
    got, _ = world.run(world.alice, [["ask", bytes([wire.REMOVE_ALL]).hex()]] * 17)
    assert got == [bytes([wire.FAILURE])] * 16 + [None]


def test_a_key_that_allows_the_password_takes_it_on_the_terminal_with_echo_off_and_puts_echo_back(world):
    key = world.add_key(world.alice, "work", requirement="biometry-or-password")
    data = wire.sshsig_data("git", b"tree 3\n")
    log_mark = world.syslog.mark()
    pt = world.on_pty(world.alice, [["ask", wire.sign_request(key.blob, data).hex()], ["echo", ""]])
    expect(world, pt, log_mark, "sign a git commit")
    world.bed.inject_async([f"SCAN {OTHER}"] * 3).wait(60)
    expect(world, pt, log_mark, "Password: ")
    pt.send_secret(world.alice.password)
    res = pt.finish(timeout=40)
    (reply,) = replies(res.output)
    assert key.verify(wire.signature(reply), data), res.output
    assert world.alice.password not in res.output           # not echoed
    assert "ECHO on" in res.output, res.output
    assert any("key work signed" in m and "matched (password)" in m for m in world.log_since(log_mark))


def test_a_finger_only_key_asks_no_password_after_three_wrong_fingers(world):
    key = world.add_key(world.alice, "work")
    log_mark = world.syslog.mark()
    pt = world.on_pty(world.alice, [["ask", wire.sign_request(key.blob, wire.sshsig_data("git", b"t")).hex()]])
    expect(world, pt, log_mark, "sign a git commit")
    world.bed.inject_async([f"SCAN {OTHER}"] * 3).wait(60)
    res = pt.finish(timeout=40)
    assert replies(res.output) == [bytes([wire.FAILURE])] and "Password" not in res.output, res.output


# A program without a terminal gets the desktop's polkit dialog, as a right's authorization
# does (test_rights.py): the bed's polkitd with the product's action and a rule giving it
# auth_self, polkit_dialog.py as the agent registered for the program, polkit's agent helper
# and pam.d/polkit-1 as shipped, in a desktop.Desktop sharing root's state directory with the
# service's helper.
POLICY = system.REPO / "polkit" / "org.localauth.right.policy"
AUTH_SELF = """polkit.addRule(function(action, subject) {
    if (action.id == "org.localauth.right.authorize") return polkit.Result.AUTH_SELF;
});
"""


@pytest.fixture
def dialog_world(inst, bed_factory, syslog):
    from desktop import Desktop
    bed = bed_factory(polkit_rules=AUTH_SELF, polkit_actions=[POLICY])
    tmp = Path(tempfile.mkdtemp(prefix="localauth-agent-"))
    tmp.chmod(0o755)
    try:
        with system.ThrowawayUser(prefix="la-ag-") as alice, system.ThrowawayUser(prefix="la-ag-") as bob, \
                Desktop(inst, bed, syslog) as desktop:
            desktop.pam_file("polkit-1", (system.REPO / "pam.d" / "polkit-1").read_text())
            desktop.configure(dbus_address=bed.address, password_after_reboot="no",
                              password_after_idle="0", password_stale="0")
            # The module in the dialog's stack reaches this service at the installation's socket.
            w = AgentWorld(inst, bed, syslog, alice, bob, tmp, socket_path=inst.service_socket,
                           state=desktop.state)
            w.desktop, w.user = desktop, alice
            try:
                yield w
            finally:
                w.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_without_a_terminal_the_polkit_dialog_shows_the_prompt_and_the_finger_signs(dialog_world):
    from polkit_agents import dialog
    world = dialog_world
    key = world.add_key(world.alice, "work")
    data = wire.sshsig_data("git", b"tree 4\n")
    log_mark = world.syslog.mark()
    run = dialog(world, command=world.argv([["ask", wire.sign_request(key.blob, data).hex()]]),
                 fingers=[ENROLLED])
    status, out = run.subject
    assert status == 0, run
    got = replies("\n".join(out))
    assert len(got) == 1 and key.verify(wire.signature(got[0]), data), (run, world.log_since(log_mark))
    [begin] = run.texts("BEGIN")
    assert "org.localauth.right.authorize SSH key work: sign a git commit" in begin, begin
    assert "requested by python3" in begin, begin
    assert len(run.verify_starts) == 1
    assert any("key work signed" in m and "matched (fingerprint)" in m for m in world.log_since(log_mark))


def test_without_a_terminal_the_password_in_the_dialog_signs_nothing_for_a_finger_only_key(dialog_world):
    from polkit_agents import dialog
    world = dialog_world
    key = world.add_key(world.alice, "work")
    log_mark = world.syslog.mark()
    run = dialog(world, command=world.argv([["ask", wire.sign_request(key.blob, wire.sshsig_data("git", b"t")).hex()]]),
                 fingers=[OTHER] * 3, answers=[world.alice.password])
    assert run.texts("HELPER") == ["SUCCESS"], run           # polkit said yes: the password
    assert replies("\n".join(run.subject[1])) == [bytes([wire.FAILURE])], run
    assert any("password-not-allowed" in m or "needs the finger" in m for m in world.log_since(log_mark)), \
        world.log_since(log_mark)
