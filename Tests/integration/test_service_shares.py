"""localauthd against callers that would take it from everyone else: each user's share of
it (a root peer counted against its real uid, root's pool left to root's own callers), and
nothing a caller sends costs more than it (no helper for a connection that asks nothing, a
rate of helper starts per user, no log line per request for what any uid can repeat).

The service runs from build/ with ``--listen`` (servicebed), as in test_service.py; the
hostile callers are small Python programs run as ``nobody`` or, for a setuid-shaped peer
(real uid a user's, effective uid root: sudo's shape while it runs PAM), as root with
``os.setresuid``. No reader is needed: what is counted is connections, helpers and lines.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_service_shares.py
"""
import os
import pwd
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)
from servicebed import Service  # noqa: E402
from wire import frame, request_frame, results  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

NOBODY = 65534


@pytest.fixture(params=["kernel", "pid"], ids=["SO_PEERPIDFD", "pidfd-from-pid"])
def service(inst, syslog, request):
    s = Service(inst, syslog, "--peer-pidfd", request.param)
    try:
        yield s
    finally:
        s.stop()


def unused_uid() -> int:
    """A uid no account has: the real uid of the setuid-shaped peer (nothing is created)."""
    return next(u for u in range(61234, 62000) if not _has_account(u))


def _has_account(uid) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def localauthd_lines(service, mark):
    service.syslog._sync()
    return [m for i, m in service.syslog.lines[mark:] if i == "localauthd"]


# Each connection: PAYLOAD sent (none for b""), the writing side shut, then everything read
# until the service closes it (a close with bytes it did not read resets the connection:
# closed too). Prints one line per connection: the bytes read, in hex.
SEND_EACH = r"""
import socket, sys
path, payloads = sys.argv[1], [bytes.fromhex(p) for p in sys.argv[2:]]
for payload in payloads:
    data = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(60)
        s.connect(path)
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    print(data.hex() or "-", flush=True)
"""

# Connections opened at once, each with PAYLOAD, then each read to its end (in order).
SEND_ALL_AT_ONCE = r"""
import socket, sys
path, n, payload = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
held = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    s.sendall(payload)
    held.append(s)
for s in held:
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    print(data.hex() or "-", flush=True)
"""

# A setuid-shaped peer: real uid a user's, effective and saved uid root (sudo's, su's and
# polkit's agent helper's shape while they run PAM). Opens N connections, says so, and holds
# them (sending nothing) until its stdin closes.
SETUID_SHAPED_HOLDER = r"""
import os, socket, sys
path, ruid, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.setresuid(ruid, 0, 0)
held = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    held.append(s)
print("connected", flush=True)
sys.stdin.read()
"""


def as_nobody(script, *args):
    r = subprocess.run([sys.executable, "-c", script, *map(str, args)], user=NOBODY, group=NOBODY,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return [bytes.fromhex(l) if l != "-" else b"" for l in r.stdout.split()]


# --- fair shares ---------------------------------------------------------------------------

def test_a_setuid_shaped_peers_idle_connections_leave_roots_pool_to_roots_callers(service):
    """64 connections held idle by a process whose real uid is a user's and whose effective
    uid is root (root's whole pool, when counted by the effective uid) do not stop a caller
    whose real uid is root (the greeter, login, cron) from being served: they count against
    that user's share."""
    ruid = unused_uid()
    mark = service.syslog.mark()
    holder = subprocess.Popen([sys.executable, "-c", SETUID_SHAPED_HOLDER, str(service.socket), str(ruid), "64"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "connected"
        # Connected after all 64: the service takes connections in order.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(60)
            s.connect(str(service.socket))
            s.sendall(request_frame())
            s.shutdown(socket.SHUT_WR)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        assert len(results(data)) == 1, data
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    said = localauthd_lines(service, mark)
    # Pinned by pid, such a peer may also be refused as not provably the peer; otherwise
    # its fifth connection was refused against its real uid's share.
    if not any(f"pid {holder.pid} is not provably the peer" in m for m in said):
        assert any(m.startswith(f"a request of uid {ruid} (a root peer, pid {holder.pid}) refused: 4 of its requests "
                                "run already, the limit for a user") for m in said), said


# --- amplification -------------------------------------------------------------------------

@pytest.mark.parametrize("who", ["nobody", "root"])
def test_a_peer_that_never_writes_is_closed_in_its_bound_and_starts_no_helper(service, who):
    """A connection that sends nothing is closed by the service without a helper, a root
    peer's as a user's (the module and the library write their request as they connect)."""
    mark = service.syslog.mark()
    script = r"""
import socket, sys
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
    s.settimeout(20)
    s.connect(sys.argv[1])
    try:
        print("closed" if s.recv(1) == b"" else "data")
    except TimeoutError:
        print("open")
"""
    user = dict(user=NOBODY, group=NOBODY) if who == "nobody" else {}
    r = subprocess.run([sys.executable, "-c", script, str(service.socket)], capture_output=True, text=True,
                       timeout=120, **user)
    assert r.stdout.strip() == "closed", (r.stdout, r.stderr)
    said = localauthd_lines(service, mark)
    uid = NOBODY if who == "nobody" else 0
    assert any(m.startswith(f"a connection of uid {uid} (pid ") and m.endswith("closed, no helper: "
               "no whole request within 2000 ms") for m in said), said
    assert not [m for m in said if "helper pid" in m], said
    assert service.helpers() == []


MALFORMED = [
    b"",                                           # closed before any byte
    b"\x00\x00\x00\x00",                           # a frame of length 0
    b"\xff\xff\xff\xff",                           # longer than any frame
    frame("C"),                                    # not a request
    frame("Q", b"\xff\xfe\x00"),                   # keys that are not text
    frame("Q", b"version=2\nmode=status"),         # another version
    frame("Q", b"version=1"),                      # no mode
    struct.pack(">I", 100) + b"Qversion=1\n",      # a part of a frame, then the end
]


def test_empty_and_malformed_connections_start_no_helper_and_write_a_line_per_kind(service):
    """Connections that close before a request, or send what is not a request frame, are
    closed by the service: no helper (not even one that answers "bad request"), no answer,
    and at most one line per kind for the uid."""
    mark = service.syslog.mark()
    answers = as_nobody(SEND_EACH, service.socket, *[p.hex() or "" for p in MALFORMED for _ in range(5)])
    assert answers == [b""] * 5 * len(MALFORMED), answers
    said = localauthd_lines(service, mark)
    assert not [m for m in said if "helper pid" in m], said
    assert service.helpers() == []
    closed = [m for m in said if m.startswith(f"a connection of uid {NOBODY} (pid ")]
    assert 1 <= len(closed) <= 2, said       # closed before a request; not a request frame
    assert not [m for m in said if f"uid {NOBODY}" in m and m not in closed], said


def test_a_flood_of_remote_host_sign_ins_from_a_user_writes_no_line_each(service):
    """`rhost` means something only from root's PAM hosts; a user's program that names a
    remote host gets the refusal a remote sign-in gets, without a helper, and 100 of them
    write one line, not 100."""
    mark = service.syslog.mark()
    payload = request_frame(mode="authenticate", user="nobody", service="sshd", tty="ssh", rhost="198.51.100.23")
    answers = as_nobody(SEND_EACH, service.socket, *[payload.hex()] * 100)
    assert [[r["name"] for r in results(a)] for a in answers] == [["notInteractive"]] * 100, answers[:3]
    said = localauthd_lines(service, mark)
    assert len([m for m in said if "reason=remote" in m]) == 1, said
    assert not [m for m in said if "helper pid" in m], said
    assert service.helpers() == []


def test_one_users_helper_starts_are_rate_limited_and_refused_with_the_password(inst, syslog):
    """20 requests of one user at once, each of which needs a helper, with a bucket of 8
    that does not fill again (`--start-rate 8/0`): 8 helpers start, the 12 others are
    refused by the service with systemCancel (the module's password, PAM_AUTHINFO_UNAVAIL),
    and one line says so."""
    s = Service(inst, syslog, "--per-user-limit", "32", "--start-rate", "8/0")
    try:
        mark = syslog.mark()
        answers = as_nobody(SEND_ALL_AT_ONCE, s.socket, 20, request_frame(user="nobody").hex())
        found = [results(a) for a in answers]
        assert all(len(r) == 1 for r in found), answers
        refused = [r[0] for r in found if "refused by localauthd" in r[0].get("cause", "")]
        assert len(refused) == 12, found
        assert {r["name"] for r in refused} == {"systemCancel"}, refused
        said = localauthd_lines(s, mark)
        assert len([m for m in said if m.startswith(f"uid {NOBODY} pid ") and " helper pid " in m]) == 8, said
        assert len([m for m in said if "over its rate of helper starts" in m]) == 1, said
    finally:
        s.stop()
