"""localauthd, the resident service (docs/ARCHITECTURE.md §1), with the real module under libpam
(pam_wrapper, pamtester), the real helper and the real fprintd with the virtual reader.

The service runs from build/ with ``--listen`` on a socket of the test's own under /run
(no systemd here: the units are the VM tier's), its helper and configuration the shared
installation's, in a mount namespace whose /dev/log is the test's syslog (servicebed):
so a helper line in that syslog is a helper the service started, never one the module
started itself (pamtester is not in the namespace, and the host has no syslog daemon).
The module is pointed at the socket with ``service=PATH``.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_service.py
"""
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pexpect
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)
from servicebed import Service, ServiceInstallation  # noqa: E402
from servicebed import namespace_prefix  # noqa: E402
from pamenv import PamWorld  # noqa: E402
from test_e2e_pam import E2E, ENROLLED, FINGER, OK, PASSWORD, PROMPT, SWIPE, USER  # noqa: E402
from test_e2e_pam import PROMPT_TEXT, only  # noqa: E402
from pamenv import outcomes  # noqa: E402
from wire import read_frames, request_frame, results  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

SERVICE = system.REPO / "build" / "libexec" / "localauth" / "localauthd"
NOBODY = 65534


@pytest.fixture(params=["kernel", "pid"], ids=["SO_PEERPIDFD", "pidfd-from-pid"])
def service(inst, syslog, request):
    """Both ways the service pins a peer: the kernel's SO_PEERPIDFD (Linux 6.5+), and the
    pid checked at accept (Debian 12's 6.1, forced here with --peer-pidfd pid)."""
    s = Service(inst, syslog, "--peer-pidfd", request.param)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def e2e(bed, inst):
    bed.enroll(USER, FINGER, ENROLLED)
    with PamWorld() as world:
        yield E2E(bed, world, inst)


def kernel_has_peer_pidfd() -> bool:
    """SO_PEERPIDFD (77; Linux 6.5): what the service uses unless told --peer-pidfd pid."""
    a, b = socket.socketpair()
    with a, b:
        try:
            a.getsockopt(socket.SOL_SOCKET, 77)
            return True
        except OSError:
            return False


def wait_until(what, check, bound=30.0):
    deadline = time.monotonic() + bound
    while not check():
        assert time.monotonic() < deadline, f"{what} not seen within {bound} s"
        time.sleep(0.05)


# --- the same product through the service ---------------------------------------------

def test_the_finger_through_the_service_as_through_a_helper_of_the_modules_own(e2e, service):
    e2e.args.append(f"service={service.socket}")
    e2e.service = e2e.stack()
    r = e2e.run(password=PASSWORD)
    assert r.status == 0 and r.screen[-2:] == [PROMPT, OK], r.screen
    r = e2e.run([ENROLLED])
    assert (r.status, r.screen, r.results) == (0, [SWIPE, "Fingerprint recognized", OK], ["verify-match"])
    # The helpers ran under the service: their lines reached the service's syslog, and the
    # service saw root's peer (pamtester's module) by the kernel's credentials.
    service.syslog._sync()
    outcomes = [m for m in service.lines("localauth-helper") if "result=" in m]
    assert any("result=success" in m for m in outcomes), service.syslog.lines
    source = "(SO_PEERPIDFD)" if service.pinning == "kernel" and kernel_has_peer_pidfd() else "(pidfd_open)"
    assert any(m.startswith("uid 0 pid ") and source in m for m in service.lines("localauthd")), \
        service.lines("localauthd")
    assert not service.helpers(), "a helper outlived its request"


def test_without_a_service_every_caller_gets_the_password_at_once(e2e):
    """A machine where nothing listens (no systemd, no `localauthd --listen`): the module
    starts nothing (one door), answers at once with one line, and the password follows."""
    e2e.args.append("service=/run/localauth-no-such-service/socket")
    e2e.service = e2e.stack()
    r = e2e.run(password=PASSWORD)
    assert (r.status, r.screen, r.scans_started) == (0, [PROMPT, OK], []), r
    (line,) = [o for o in r.logs if "localauthd is not running" in o["cause"]]
    assert line["pam"] == "PAM_AUTHINFO_UNAVAIL", r.logs


# --- a service that cannot be used: the password at once, never the finger -----------

def stale_socket(directory: Path) -> Path:
    """A root-owned socket file nothing listens on (a service that crashed)."""
    path = directory / "socket"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()
    return path


@pytest.mark.parametrize("kind", ["stale", "not-roots"])
def test_a_service_that_cannot_be_used_gives_the_password_at_once(e2e, kind):
    d = Path(tempfile.mkdtemp(prefix="localauth-service-", dir="/run"))
    listener = None
    try:
        if kind == "stale":
            path = stale_socket(d)
            why = "did not take the connection"
        else:
            # A listening socket a user owns: whoever answers there is not root's service.
            path = d / "socket"
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            listener.listen(4)
            listener.setblocking(False)
            os.chown(path, NOBODY, NOBODY)
            why = "not a socket of root's"
        e2e.args.append(f"service={path}")
        e2e.service = e2e.stack()
        r = e2e.run(password=PASSWORD)
        assert (r.status, r.screen, r.scans_started) == (0, [PROMPT, OK], []), r
        assert any(why in o["cause"] for o in r.logs), r.logs
        if listener is not None:
            with pytest.raises(BlockingIOError):
                listener.accept()        # the module never connected to it
    finally:
        if listener is not None:
            listener.close()
        shutil.rmtree(d, ignore_errors=True)


# --- who asks is the kernel's word -----------------------------------------------------

def test_a_root_peer_cannot_name_another_process_as_the_caller(service):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(service.socket))
        s.sendall(request_frame(mode="status", user="root", pid="1"))
        s.shutdown(socket.SHUT_WR)
        frames = read_frames(s)
    found = results(frames)
    assert len(found) == 1 and found[0]["name"] == "biometryNotAvailable", frames
    assert f"the peer is pid {os.getpid()}" in found[0]["cause"], found


CONNECT_MANY = r"""
import socket, sys
path, n = sys.argv[1], int(sys.argv[2])
held = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    held.append(s)
# The service takes connections in order: the last one is refused (closed at once), the
# others are closed when their bound for a request has passed. Either way: end of file.
states = []
for s in held[::-1]:
    s.settimeout(60)
    states.append("closed" if s.recv(1) == b"" else "data")
print(" ".join(states[::-1]), flush=True)
"""


def test_one_users_requests_are_capped(service):
    """A user's programs cannot hold root's service without end: the fifth connection at
    once of one uid is refused while the four before it wait for their requests; those,
    which never send one, are closed in their bound, and none started a helper."""
    mark = service.syslog.mark()
    r = subprocess.run([sys.executable, "-c", CONNECT_MANY, str(service.socket), "5"], user=NOBODY,
                       group=NOBODY, capture_output=True, text=True, timeout=60)
    states = r.stdout.split()
    assert states == ["closed"] * 5, (r.stdout, r.stderr)
    service.syslog._sync()
    said = [m for i, m in service.syslog.lines[mark:] if i == "localauthd"]
    assert any(m.startswith(f"a request of uid {NOBODY} (pid ") and "4 of its requests run already" in m
               for m in said), said
    assert not [m for m in said if "helper pid" in m], said
    assert not service.helpers()


def test_a_request_killed_mid_scan_ends_its_helper_and_frees_the_reader(e2e, service):
    """The user kills their own sudo while the reader waits: the connection closes with the
    process, the service's helper stops the verify and ends, and the next request gets the
    reader."""
    e2e.args.append(f"service={service.socket}")
    e2e.service = e2e.stack()
    e2e.first_password()
    mark = e2e.bed.mark()
    pt = e2e.world.pamtester(e2e.service, USER, operation=("authenticate", "acct_mgmt"))
    try:
        assert e2e.bed.wait_finger_needed(timeout=30), "the reader never waited for a finger"
        assert len(service.helpers()) == 1, service.helpers()
        # pamtester and whatever wraps it, at once: no module code runs, the kernel closes.
        os.killpg(os.getpgid(pt.child.pid), signal.SIGKILL)
    finally:
        pt.kill()
    wait_until("the helper's end", lambda: not service.helpers())
    service.syslog._sync()
    assert any('result=appCancel cause="the module went away' in m for m in service.lines("localauth-helper")), \
        service.lines("localauth-helper")
    e2e.bed.wait_event("finger-needed", since=mark, timeout=30, where=lambda e: e.args == (False,))
    r = e2e.run([ENROLLED])
    assert (r.status, r.results) == (0, ["verify-match"]), r


def test_the_system_going_to_sleep_ends_the_scan_and_gives_the_try_back(e2e, inst, syslog, tmp_path):
    """logind's PrepareForSleep(true) (the fake on the bed's bus, which root's configuration
    names): the service tells its running helper to end the scan, which releases the reader,
    gives the try back and answers systemCancel; the password module's prompt follows. Sent
    to the service alone: fprintd follows the signal too (it cancels the verify itself, as
    run T showed when it came first), and what is tested here is the service's part, for
    readers and fprintd versions that do not."""
    from logind_bus import LogindBus
    logind = LogindBus(e2e.bed.address)
    logind.start()
    config = tmp_path / "localauth.conf"
    config.write_text(f"dbus_address = {e2e.bed.address}\n")
    service = None
    try:
        service = Service(inst, syslog, config=config)
        e2e.args.append(f"service={service.socket}")
        e2e.service = e2e.stack()
        e2e.first_password()
        pt = e2e.world.pamtester(e2e.service, USER, operation=("authenticate", "acct_mgmt"))
        try:
            assert e2e.bed.wait_finger_needed(timeout=30), "the reader never waited for a finger"
            mark = e2e.bed.mark()
            logind.prepare_for_sleep(True, only_pid=service.proc.pid)
            e2e.bed.wait_event("finger-needed", since=mark, timeout=30, where=lambda e: e.args == (False,))
            pt.expect(PROMPT_TEXT)
            pt.send_secret(PASSWORD)
            res = pt.finish()
        finally:
            pt.kill()
        syslog._sync()
        assert any("the system prepares to sleep: 1 running request(s) told to end their scan" in m
                   for m in service.lines("localauthd")), service.lines("localauthd")
        assert any("result=systemCancel" in m and "the system is going to sleep" in m
                   for m in service.lines("localauth-helper")), service.lines("localauth-helper")
        assert res.status == 0, res
        assert e2e.state_file()["failures"] == "0"          # the try was given back
    finally:
        if service is not None:
            service.stop()
        logind.stop()


# --- logind's sessions: a remote login is recorded by the service, whatever stack it used --

REMOTE_HOST = "192.0.2.7"


def following_logind(e2e, inst, syslog, tmp_path, before_start=()):
    """A logind fake on the bed's bus, ``before_start`` sessions opened on it, then a service
    whose configuration names that bus (the user's state file made first by one password, so
    a record has a place). Yields (logind, service, mark of the syslog before the start)."""
    from logind_bus import LogindBus
    logind = LogindBus(e2e.bed.address)
    logind.start()
    service = None
    try:
        e2e.first_password()
        for session in before_start:
            logind.new_session(*session[:3], **session[3])
        config = tmp_path / "localauth.conf"
        config.write_text(f"dbus_address = {e2e.bed.address}\nstate_dir = {e2e.state}\n")
        mark = syslog.mark()
        service = Service(inst, syslog, config=config)
        e2e.args.append(f"service={service.socket}")
        e2e.service = e2e.stack()
        yield logind, service, mark
    finally:
        if service is not None:
            service.stop()
        logind.stop()


def recorded(syslog, mark, session):
    """The service's line for ``session``'s remote login, waited for (logind's answer is
    asynchronous); None if it did not come."""
    found = syslog.wait_for(lambda i, m: i == "localauthd" and f"(logind session {session}" in m,
                            timeout=30, since=mark)
    return found and found[1]


def takes_the_password_since_a_remote_login(e2e):
    """pamtester on its pseudo-terminal (a place a remote login could drive): no scan, the
    helper's reason is the remote login since the last unlock, and the password works."""
    r = e2e.run(password=PASSWORD)
    assert r.status == 0 and r.scans_started == [], r
    only(r.logs, result="notInteractive", reason="remote-login-since-unlock")


def test_a_remote_login_is_recorded_by_the_service_as_it_opens_and_outlives_it(e2e, inst, syslog, tmp_path):
    """logind announces a remote session of the user (SessionNew, Remote=yes from a host),
    which then ends before any request: no PAM account line of ours ran for it (a stack we
    are not in: xrdp, a remote desktop, sshd without the profile). The service records it in
    root's state as it opens, so after it ended the next request from a terminal takes the
    password. A local session on a seat announced first is no remote login and is not
    recorded. (The session ends here once the record is in: one that ends before the service
    has read its properties, a few milliseconds, is only a line in the log; docs/SERVICE.md.)"""
    for logind, service, mark in following_logind(e2e, inst, syslog, tmp_path):
        assert "last_remote_login" not in e2e.state_file()
        logind.new_session("c1", 4242, USER, remote=False, seat="seat0")
        logind.new_session("c2", 4242, USER, remote=True, host=REMOTE_HOST)
        line = recorded(syslog, mark, "c2")
        logind.end_session("c2")
        assert line == f"remote login of {USER} recorded (logind session c2, from {REMOTE_HOST})", \
            syslog.since(mark, "localauthd")
        assert not any("session c1" in m for m in syslog.since(mark, "localauthd")), syslog.since(mark)
        assert e2e.state_file()["last_remote_login_from"] == REMOTE_HOST
        takes_the_password_since_a_remote_login(e2e)


FLOCK_SYSCALL = {"x86_64": 73, "aarch64": 32}.get(os.uname().machine)


def in_flock(pid) -> bool:
    """Whether a thread of ``pid`` is blocked in flock(2) now (/proc/PID/task/*/syscall)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            number = (task / "syscall").read_text().split()[0]
        except (OSError, IndexError):
            continue
        if number == str(FLOCK_SYSCALL):
            return True
    return False


@pytest.mark.skipif(FLOCK_SYSCALL is None, reason="flock's syscall number is known for x86_64 and aarch64")
def test_a_remote_login_waiting_for_the_state_lock_does_not_hold_the_service(e2e, inst, syslog, tmp_path):
    """Recording a remote login takes the user's state lock, which a helper holds through a
    whole scan. While the lock is held (here by the test) and the service is waiting for it,
    another caller's request is still answered: the wait is not on the service's loop. Once
    the lock is free, the login is recorded."""
    for logind, service, mark in following_logind(e2e, inst, syslog, tmp_path):
        lock = os.open(e2e.state / f"{USER}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            logind.new_session("c5", 4242, USER, remote=True, host=REMOTE_HOST)
            wait_until("the service waiting for the state lock", lambda: in_flock(service.proc.pid))
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(str(service.socket))
                s.sendall(request_frame(mode="status", user="root", pid="1"))
                s.shutdown(socket.SHUT_WR)
                frames = read_frames(s)
            assert [t for t, _ in frames if t == "R"] == ["R"], frames
            assert in_flock(service.proc.pid)          # answered while the record still waits
        finally:
            os.close(lock)
        line = recorded(syslog, mark, "c5")
        assert line == f"remote login of {USER} recorded (logind session c5, from {REMOTE_HOST})", \
            syslog.since(mark, "localauthd")


def test_a_remote_session_open_when_the_service_starts_is_recorded(e2e, inst, syslog, tmp_path):
    """A restart of the service misses no remote session still open: at start it lists
    logind's sessions and records the remote ones (here one on no seat, which sshd's and
    `machinectl shell`'s are, with no remote host named)."""
    sessions = [("c3", 4242, USER, {"remote": False, "seat": ""})]
    for _logind, _service, mark in following_logind(e2e, inst, syslog, tmp_path, before_start=sessions):
        line = recorded(syslog, mark, "c3")
        assert line == f"remote login of {USER} recorded (logind session c3, from logind-session-c3)", \
            syslog.since(mark, "localauthd")
        assert e2e.state_file()["last_remote_login_from"] == "logind-session-c3"
        takes_the_password_since_a_remote_login(e2e)


def test_an_edit_of_root_s_configuration_is_read_without_a_restart(e2e, inst, syslog, tmp_path):
    """The service keeps the bus it follows from root's configuration. An administrator who
    moves dbus_address to another bus (here from one that does not exist to the bed's)
    needs no restart: the edit is seen as it is written (the file's directory is watched),
    and a remote login on the new bus is recorded."""
    from logind_bus import LogindBus
    logind = LogindBus(e2e.bed.address)
    logind.start()
    service = None
    try:
        e2e.first_password()
        config = tmp_path / "localauth.conf"
        config.write_text(f"dbus_address = unix:path={tmp_path}/no-bus\nstate_dir = {e2e.state}\n")
        mark = syslog.mark()
        service = Service(inst, syslog, config=config)
        assert syslog.wait_for(lambda i, m: i == "localauthd" and m.startswith("not following logind"),
                               timeout=30, since=mark), syslog.since(mark)
        edited = tmp_path / "localauth.conf.new"   # as an editor saves: a new file renamed over
        edited.write_text(f"dbus_address = {e2e.bed.address}\nstate_dir = {e2e.state}\n")
        os.rename(edited, config)
        changed = syslog.wait_for(lambda i, m: i == "localauthd" and "configuration changed" in m,
                                  timeout=30, since=mark)
        assert changed and e2e.bed.address in changed[1], syslog.since(mark, "localauthd")
        logind.new_session("c5", 4242, USER, remote=True, host=REMOTE_HOST)
        line = recorded(syslog, mark, "c5")
        logind.end_session("c5")
        assert line == f"remote login of {USER} recorded (logind session c5, from {REMOTE_HOST})", \
            syslog.since(mark, "localauthd")
    finally:
        if service is not None:
            service.stop()
        logind.stop()


# --- fprintd absent: the service answers without a helper --------------------------------

def test_fprintd_absent_is_answered_by_the_service_without_a_helper(bed_factory, inst, syslog, tmp_path):
    """fprintd is neither on the bed's bus nor startable there: the service asks the bus
    daemon, answers the sign-in itself (biometryNotAvailable, reader-unreachable) without
    starting a helper, and the password prompt follows. With --absent-answer no, a helper
    gives the same answer, as it always did."""
    bed = bed_factory(fprintd=False)
    config = tmp_path / "localauth.conf"
    config.write_text(f"dbus_address = {bed.address}\n")
    with PamWorld() as world:
        e2e = E2E(bed, world, inst)
        base = list(e2e.args)
        for answer in ("yes", "no"):
            service = Service(inst, syslog, "--absent-answer", answer, config=config)
            try:
                e2e.args = base + [f"service={service.socket}"]
                e2e.service = e2e.stack()
                mark = syslog.mark()
                r = e2e.run(password=PASSWORD)
                assert r.status == 0 and r.screen[-2] == PROMPT, r
                first = only(r.logs, result="biometryNotAvailable", reason="reader-unreachable",
                             pam="PAM_AUTHINFO_UNAVAIL")
                said = {i: [m for j, m in syslog.lines[mark:] if j == i] for i in ("localauthd", "localauth-helper")}
                if answer == "yes":
                    assert "answered by localauthd" in first["cause"], first
                    assert any("result=biometryNotAvailable reason=reader-unreachable, no helper" in m
                               for m in said["localauthd"]), said
                    # No helper answered the first line (the authsucc and account lines
                    # after the password still go to helpers, which record it).
                    assert not any("fprintd is not running" in m for m in said["localauth-helper"]), said
                else:
                    assert "fprintd is not running" in first["cause"], first
                    assert any("fprintd is not running" in m for m in said["localauth-helper"]), said
                    assert not any("no helper" in m for m in said["localauthd"]), said
            finally:
                service.stop()


# --- a remote host: the service answers without a helper -----------------------------------

REMOTE_TRY = dict(mode="authenticate", user=USER, service="sshd", tty="ssh", rhost="198.51.100.23", silent="0")


def test_a_remote_hosts_sign_in_is_answered_by_the_service_without_a_helper(e2e, service):
    """sshd's first line (PAM_RHOST another machine) through the module: the service
    answers notInteractive itself, the password follows; the account phase after it still
    goes to a helper, which records the remote login."""
    e2e.args.append(f"service={service.socket}")
    e2e.service = e2e.stack()
    e2e.first_password()
    mark = service.syslog.mark()
    r = e2e.run(password=PASSWORD, items={"rhost": "198.51.100.23", "tty": "ssh"})
    assert (r.status, r.screen[-2:], r.scans_started) == (0, [PROMPT, OK], []), r
    first = r.logs[0]
    assert (first["result"], first["reason"], first["pam"]) == ("notInteractive", "remote", "PAM_AUTHINFO_UNAVAIL"), r.logs
    assert "answered by localauthd" in first["cause"], first
    said = [m for i, m in service.syslog.lines[mark:] if i == "localauthd"]
    assert sum("result=notInteractive reason=remote, no helper" in m for m in said) == 1, said
    assert e2e.state_file()["last_remote_login_from"] == "198.51.100.23"


def test_a_flood_of_remote_password_tries_starts_no_helper(service):
    """Anyone who knows a user name can make sshd run the first line as often as it lets
    them try a password. 200 such requests from root's module, 20 at once: each answered
    notInteractive at once, no helper started, none of root's 64 slots held."""
    payload = request_frame(**REMOTE_TRY)
    mark = service.syslog.mark()
    answers = []
    for _ in range(10):
        held = []
        for _ in range(20):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(str(service.socket))
            s.sendall(payload)
            held.append(s)
        for s in held:
            with s:
                frames = read_frames(s)
            answers += [r["name"] for r in results(frames)]
    assert answers == ["notInteractive"] * 200, answers
    service.syslog._sync()
    said = [m for i, m in service.syslog.lines[mark:] if i == "localauthd"]
    assert sum("reason=remote, no helper" in m for m in said) == 200, said[-5:]
    assert not any("helper pid" in m for m in said), [m for m in said if "helper pid" in m]
    assert service.helpers() == [], service.helpers()


# --- the service's own faults: the password at once, nothing lost ------------------------

def test_the_service_killed_mid_scan_leaves_the_password_and_keeps_the_try(e2e, service):
    """The service and its helper end mid-scan (as systemd stops the unit's cgroup when its
    main process dies). The prompt on the screen already takes the password (whatever is
    typed there is the password: the module's `K` prompt); what is typed goes to the
    password module, and the try, counted before the scan, stays counted in a whole state
    file."""
    e2e.args.append(f"service={service.socket}")
    e2e.service = e2e.stack()
    e2e.first_password()
    assert e2e.state_file()["failures"] == "0"
    pt = e2e.world.pamtester(e2e.service, USER, operation=("authenticate", "acct_mgmt"))
    try:
        assert e2e.bed.wait_finger_needed(timeout=30), "the reader never waited for a finger"
        helpers = service.helpers()
        assert len(helpers) == 1, helpers
        service.proc.kill()
        for pid in helpers:
            os.kill(int(pid), signal.SIGKILL)
        service.proc.wait()
        pt.send_secret("not-the-password")
        if pt.expect([PROMPT_TEXT, pexpect.EOF]) == 0:     # a password module that asks again
            pt.send_secret("not-the-password")
        res = pt.finish()
    finally:
        pt.kill()
    causes = [o.get("cause", "") for o in outcomes(res.logs)]
    state = e2e.state_file()
    # The answer could not reach the helper (or its end was read first): one clear line.
    # Which one depends on how far the killed helper's teardown had got when the password
    # was typed: its socket already closed (Broken pipe), the typed frame taken into its
    # buffer and dropped with it (Connection reset by peer: run W), or its end read first.
    gone = any(why in c for c in causes
               for why in ("Broken pipe", "Connection reset by peer", "ended without a result"))
    assert (res.status != 0, state["failures"], gone) == \
        (True, "1", True), (causes, state)


def test_a_service_that_accepts_and_says_nothing_gives_the_password(e2e):
    """Root's socket, a connection taken, then silence (a hung service): the module waits
    its start-up bound for the first frame, then asks the password, never the finger."""
    d = Path(tempfile.mkdtemp(prefix="localauth-service-", dir="/run"))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    taken = []
    try:
        listener.bind(str(d / "socket"))
        listener.listen(4)
        e2e.args.append(f"service={d / 'socket'}")
        e2e.service = e2e.stack()
        holder = __import__("threading").Thread(target=lambda: taken.append(listener.accept()[0]), daemon=True)
        holder.start()
        r = e2e.run(password=PASSWORD)
        assert (r.status, r.screen[-2:], r.scans_started, len(taken)) == (0, [PROMPT, OK], [], 1), r
        assert any("the service sent nothing within" in o.get("cause", "") for o in r.logs), r.logs
    finally:
        for conn in taken:
            conn.close()
        listener.close()
        shutil.rmtree(d, ignore_errors=True)


def test_a_service_restarted_between_two_requests_serves_both(e2e, inst, syslog):
    """A restart (an upgrade, a crash and systemd's Restart=on-failure) between two
    requests: the second is served by the new process on the same socket."""
    first = Service(inst, syslog)
    path = first.socket
    second = None
    try:
        e2e.args.append(f"service={path}")
        e2e.service = e2e.stack()
        e2e.first_password()
        r = e2e.run([ENROLLED])
        assert (r.status, r.results) == (0, ["verify-match"]), r
        first.proc.terminate()
        first.proc.wait(10)
        second = Service(inst, syslog, socket_path=path)
        r = e2e.run([ENROLLED])
        assert (r.status, r.results) == (0, ["verify-match"]), r
        syslog._sync()
        assert [m for m in second.lines("localauthd") if m.startswith("uid 0 pid ")], syslog.lines
    finally:
        if second is not None:
            second.stop()
        first.stop()


# --- the helper started ahead of the next request ---------------------------------------

def ended(pid: str) -> bool:
    """The process is gone or a zombie (reaped by nobody yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_request_is_served_by_the_helper_started_ahead_and_the_next_one_is_started(e2e, inst, syslog):
    """The service starts one helper ahead (`--service-spare`): the next request is
    handed to it (its connection and the peer's pidfd), it serves it as a helper started
    for it would (the finger, the state), and another is started for the request after."""
    service = Service(inst, syslog)
    try:
        wait_until("a spare helper", lambda: len(service.spares()) == 1)
        (first,) = service.spares()
        e2e.args.append(f"service={service.socket}")
        e2e.service = e2e.stack()
        e2e.first_password()
        r = e2e.run([ENROLLED])
        assert (r.status, r.results) == (0, ["verify-match"]), r
        syslog._sync()
        assert any(m.endswith(f"helper pid {first} (started ahead)") for m in service.lines("localauthd")), \
            service.lines("localauthd")
        wait_until("the next spare", lambda: len(service.spares()) == 1 and service.spares() != [first])
        assert ended(first)
    finally:
        service.stop()


def finger_through_a_helper_started_for_it(e2e, syslog):
    """One sign-in with the finger; the service's line for it names a helper it started for
    the request, not one started ahead."""
    mark = syslog.mark()
    r = e2e.run([ENROLLED])
    assert (r.status, r.results) == (0, ["verify-match"]), r
    syslog._sync()
    lines = [m for i, m in syslog.lines[mark:] if i == "localauthd"]
    assert any(" helper pid " in m and "(started ahead)" not in m for m in lines), lines


def test_a_spare_that_ended_or_a_replaced_helper_file_gets_a_helper_started_for_the_request(e2e, inst, syslog):
    """A spare killed before any request is reaped and not used (the request's helper is
    started for it); after the helper file is replaced (an upgrade), the spare started from
    the old file is stopped and not used either. Every request gets the finger."""
    service = Service(inst, syslog)
    try:
        e2e.args.append(f"service={service.socket}")
        e2e.service = e2e.stack()
        e2e.first_password()
        wait_until("a spare helper", lambda: len(service.spares()) == 1)
        (killed,) = service.spares()
        os.kill(int(killed), signal.SIGKILL)
        wait_until("the killed spare reaped", lambda: not Path(f"/proc/{killed}").exists())
        finger_through_a_helper_started_for_it(e2e, syslog)
        assert any(f"helper started ahead (pid {killed}) ended before a request" in m
                   for i, m in syslog.lines if i == "localauthd"), syslog.lines
        # An upgrade: the helper's file replaced by a rename while a spare waits.
        wait_until("a new spare", lambda: len(service.spares()) == 1)
        (old,) = service.spares()
        fresh = inst.helper.with_name(inst.helper.name + ".new")
        shutil.copy2(inst.helper, fresh)
        os.replace(fresh, inst.helper)
        finger_through_a_helper_started_for_it(e2e, syslog)
        wait_until("the old spare gone", lambda: ended(old))
    finally:
        service.stop()


def spare_prepared(syslog, mark, outcome):
    """The spare's debug line on what it prepared on the bus while it waited."""
    return syslog.wait_for(lambda i, m: i == "localauth-helper" and m.startswith(f"a spare helper: {outcome}"),
                           timeout=30, since=mark)


def test_a_spare_prepared_before_fprintd_restarted_serves_its_request(e2e, inst, syslog, tmp_path):
    """A spare connects to the bus and lists fprintd's readers before any request (none of
    it a user's); the request then only asks the user's fingers, claims and scans. When
    fprintd restarted meanwhile (a new unique name), the readers are listed again on the
    same connection: the finger still matches, each time."""
    config = tmp_path / "localauth.conf"
    config.write_text(f"dbus_address = {e2e.bed.address}\nstate_dir = {e2e.state}\ndebug = true\n")
    mark = syslog.mark()
    service = Service(inst, syslog, config=config)
    try:
        e2e.args += [f"service={service.socket}", "debug=yes"]
        e2e.service = e2e.stack()
        assert spare_prepared(syslog, mark, "a bus connection prepared, 1 reader(s) listed"), syslog.since(mark)
        e2e.first_password()
        wait_until("a spare helper", lambda: len(service.spares()) == 1)
        mark = syslog.mark()
        r = e2e.run([ENROLLED])
        assert (r.status, r.results) == (0, ["verify-match"]), r
        assert any("the bus connection prepared ahead is used (1 reader(s) listed)" in m
                   for i, m in syslog.lines[mark:] if i == "localauth-helper"), syslog.since(mark)
        wait_until("the next spare", lambda: len(service.spares()) == 1)
        assert spare_prepared(syslog, mark, "a bus connection prepared"), syslog.since(mark)
        e2e.bed.restart_fprintd()
        r = e2e.run([ENROLLED])
        assert (r.status, r.results) == (0, ["verify-match"]), r
        r = e2e.run([ENROLLED])
        assert (r.status, r.results) == (0, ["verify-match"]), r
    finally:
        service.stop()


def test_a_spare_that_cannot_reach_the_bus_leaves_its_request_to_connect(e2e, inst, syslog, tmp_path):
    """The service's configuration names a bus that is not there: its spare prepares
    nothing (one debug line) and waits as before; the request, whose module names the
    bed's bus (root's argument), connects itself and gets the finger."""
    config = tmp_path / "localauth.conf"
    config.write_text(f"dbus_address = unix:path={tmp_path}/no-bus\nstate_dir = {e2e.state}\ndebug = true\n")
    mark = syslog.mark()
    service = Service(inst, syslog, config=config)
    try:
        e2e.args.append(f"service={service.socket}")
        e2e.service = e2e.stack()
        assert spare_prepared(syslog, mark, "no bus connection prepared"), syslog.since(mark)
        e2e.first_password()
        wait_until("a spare helper", lambda: len(service.spares()) == 1)
        mark = syslog.mark()
        r = e2e.run([ENROLLED])
        assert (r.status, r.results) == (0, ["verify-match"]), r
        assert not any("prepared ahead is used" in m for i, m in syslog.lines[mark:]), syslog.since(mark)
    finally:
        service.stop()


def test_a_stopped_service_leaves_no_spare_behind(inst, syslog):
    service = Service(inst, syslog)
    wait_until("a spare helper", lambda: len(service.spares()) == 1)
    (spare,) = service.spares()
    service.stop()
    wait_until("the spare gone", lambda: not Path(f"/proc/{spare}").exists() or ended(spare))


# --- applications: the library reaches the service; no setuid program is needed ---------

@pytest.fixture(scope="module")
def service_inst_for_apps():
    """The product with a service of its own (servicebed), as the app tests use it."""
    with ServiceInstallation() as inst:
        yield inst


@pytest.fixture
def app_service(service_inst_for_apps, bed, syslog):
    from appbed import app_binary, app_world
    with app_world(service_inst_for_apps, bed, syslog, app_binary("la-probe"), "la-svc-") as world:
        yield world, world.service


def run_app_without_new_privileges(world, socket_path, fingers=()):
    """la-probe `eval biometrics` as the user under NoNewPrivileges (as Flatpak and
    sandboxed units run apps: a setuid program gains nothing there)."""
    from appbed import parse_result
    u = world.user
    argv = ["setpriv", f"--reuid={u.uid}", f"--regid={u.gid}", "--init-groups", "--no-new-privs", "--",
            str(world.app), "eval", "biometrics"]
    env = system.default_env(LOCALAUTH_SERVICE=str(socket_path))
    mark = world.syslog.mark()
    pt = system.run_on_pty(argv, env=env, prefix=namespace_prefix(world.syslog), timeout=60)
    injection = world.bed.inject_async([f"SCAN {p}" for p in fingers]) if fingers else None
    res = pt.finish(timeout=60)
    if injection:
        injection.wait(20)
    results = [parse_result(m) for m in re.findall(r"^RESULT (.*)$", res.output.replace("\r", ""), re.M)]
    assert len(results) == 1, res.output
    return results[0], world.syslog.lines[mark:], res.output.replace("\r", "")


def test_an_app_without_new_privileges_gets_the_finger_through_the_service(app_service):
    world, service = app_service
    result, lines, _ = run_app_without_new_privileges(world, service.socket, fingers=[ENROLLED])
    assert (result["success"], result["code"]) == ("1", "0"), (result, lines)
    assert any(i == "localauth-helper" and f"user {world.user.name} application la-probe" in m
               and "evaluate biometrics: success" in m for i, m in lines), lines


def test_an_app_without_new_privileges_and_no_service_gets_no_finger(app_service):
    """The same app where no service runs: no program is started (none is setuid), the
    root side is unreachable (biometryNotAvailable), and the reason is the app's."""
    world, _ = app_service
    result, lines, output = run_app_without_new_privileges(world, "/run/localauth-no-such-service/socket")
    assert (result["success"], result["code"]) == ("0", "-6"), (result, lines)
    assert "DEBUG localauthd is not running (no socket at /run/localauth-no-such-service/socket)" \
        in output, output
    # Nothing reached a service on the user's behalf (the world's own service, which the
    # test's readiness probe connected to as root, is not the one named here).
    assert not any(i == "localauthd" and m.startswith(f"uid {world.user.uid} ") for i, m in lines), lines
    assert not any(i == "localauth-helper" and world.user.name in m for i, m in lines), lines


# --- localauthctl doctor's look at the service ---------------------------------------------

def service_findings(socket_path) -> dict:
    """doctor's findings about localauthd's socket, by code → message."""
    from ctl_support import localauthctl_binary
    import json
    proc = subprocess.run([localauthctl_binary(), "doctor", "--service", str(socket_path), "--json"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    found = json.loads(proc.stdout)["findings"]
    return {f["code"]: f["message"] for f in found if f["code"].startswith("service.")}


def test_doctor_sees_the_service_answer_and_its_check_is_not_a_bad_request(inst, syslog):
    s = Service(inst, syslog)
    try:
        found = service_findings(s.socket)
        assert found == {"service.ok": f"service {s.socket}: root's socket, answering"}, found
        # The check's connection, closed before a request, is nothing asked: localauthd closes
        # it without a helper, and no error line. The start-up probe's line opened root's
        # interval of such lines, so doctor's is counted in the line that ends it (QuietLog).
        counted = "uid 0: 1 more connections closed before a request in the last 10 s"
        wait_until("localauthd's count of the check's connection", lambda: (
            syslog._sync(), counted in s.lines("localauthd"))[1])
        assert not [m for m in s.lines("localauthd") if "helper pid" in m], s.lines("localauthd")
        assert not [m for m in s.lines("localauth-helper") if "bad request" in m], s.lines("localauth-helper")
    finally:
        s.stop()


def test_doctor_names_a_socket_that_cannot_be_used(tmp_path):
    d = Path(tempfile.mkdtemp(prefix="localauth-service-", dir="/run"))
    try:
        stale = stale_socket(d)
        found = service_findings(stale)
        assert list(found) == ["service.refused"] and "Connection refused" in found["service.refused"], found
        plain = d / "file"
        plain.write_text("")
        assert list(service_findings(plain)) == ["service.not-socket"]
        assert list(service_findings(d / "nothing")) == ["service.missing"]
    finally:
        shutil.rmtree(d, ignore_errors=True)
