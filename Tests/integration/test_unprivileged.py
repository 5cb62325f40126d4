"""Callers that are not root: screen lockers and other programs that call PAM as the user.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_unprivileged.py

The product is installed into a temporary prefix (servicebed.ServiceInstallation) whose
module names a socket of the installation's own, where each test starts localauthd (no
systemd here; the package's units are the VM tier's): a caller that is not root reaches
root's side only through it. The service's helper reads the configuration at
PREFIX/etc/security/localauth.conf, which each test writes as root with the bed's bus and a
state directory of its own. A throwaway
user (useradd, removed afterwards) runs ``pamtester`` through ``setpriv`` against a service
file the test puts in /etc/pam.d (unique name, removed afterwards), shaped like the shipped
pam.d/screenlocker:

    auth  sufficient  PREFIX/.../pam_localauth.so
    auth  requisite   pam_unix.so               (unix_chkpwd: the caller's own password)
    auth  optional    PREFIX/.../pam_localauth.so authsucc

Everything runs in a private mount namespace whose /dev/log is the test's (the machine has
no syslog daemon), so the module's, the service's and the helper's log lines are checked.
Requests "from the user side" are also written straight to the service's socket by a
program of the user's own (socket_client.py), as a user could.
"""
import os
import pwd
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from servicebed import namespace_prefix  # noqa: E402
from pamenv import outcomes, LogLine  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)
from scan_events import ScanEvents  # noqa: E402

ENROLLED, OTHER = "f1", "f9"          # the user's virtual print, and a stranger's
FINGER = "right-index-finger"
PASSWORD_PROMPT = re.compile(r"(^|\n)Password: ")
OK = "pamtester: successfully authenticated"
HELPER_ENV = b"PATH=/usr/sbin:/usr/bin:/sbin:/bin\0"
SOCKET_CLIENT = Path(__file__).resolve().parent / "socket_client.py"
IGNORED = "is ignored here (only root's configuration may set it)"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def alice():
    with system.ThrowawayUser(prefix="la-lock-") as u:
        yield u


@pytest.fixture
def bob():
    with system.ThrowawayUser(prefix="la-other-") as u:
        yield u


class Locker:
    """One bed, one state directory, the root configuration pointing at both, a throwaway
    user with an enrolled finger, a lock-screen service for them (``service``: its name)
    and the installation's localauthd (``localauthd``)."""

    def __init__(self, inst, bed, syslog, user, tmp):
        self.inst, self.bed, self.syslog, self.user = inst, bed, syslog, user
        self.state = tmp / "state"
        self.state.mkdir(mode=0o700)
        self.configure()
        bed.enroll(user.name, FINGER, ENROLLED)
        self.services = []
        self.localauthd = None
        self.service = self.add_service()
        self.localauthd = inst.serve(syslog)

    def configure(self, **extra):
        """The root configuration for this bed and state directory (servicebed), plus ``extra``."""
        self.inst.write_bed_config(self.bed, self.state, **extra)

    def lines(self, *args):
        a = " ".join(args)
        return [f"auth sufficient {self.inst.module} {a}".rstrip(),
                "auth requisite pam_unix.so",
                f"auth optional {self.inst.module} authsucc {a}".rstrip(),
                "account required pam_permit.so"]

    def add_service(self, *args, lines=None):
        svc = system.PamService("la-lock-", lines or self.lines(*args)).__enter__()
        self.services.append(svc)
        return svc.name

    def close(self):
        if self.localauthd is not None:
            self.localauthd.stop()
        for svc in self.services:
            svc.close()

    @property
    def state_file(self) -> Path:
        return self.state / f"{self.user.name}.state"

    def state_values(self) -> dict:
        return system.state_fields(self.state_file)

    def pamtester(self, user=None, service=None, env=None, target=None, prefix=()):
        """pamtester as ``user`` (default: the locker's user) for PAM user ``target``."""
        user = user or self.user
        argv = ["pamtester", service or self.service, str(target or user), "authenticate"]
        return system.run_on_pty([*prefix, *argv] if prefix else argv,
                                 env=env or system.default_env(), user=user,
                                 prefix=namespace_prefix(self.syslog), timeout=40)

    def run(self, fingers=(), password=None, **kw):
        """One pamtester run: inject the prints as the reader asks for them, type
        ``password`` at the password prompt (None: there must be none)."""
        mark = self.bed.mark()
        log_mark = self.syslog.mark()
        pt = self.pamtester(**kw)
        injection = self.bed.inject_async([f"SCAN {p}" for p in fingers]) if fingers else None
        if password is not None:
            pt.expect(PASSWORD_PROMPT, timeout=30)
            pt.sendline(password)
        result = pt.finish(timeout=40)
        results = injection.wait(20) if injection else []
        return Outcome(result.status, result.output, results, self.bed.events(mark),
                       self.syslog.lines[log_mark:])


class Outcome(ScanEvents):
    def __init__(self, status, output, results, events, logs):
        self.status, self.output, self.results = status, output, results
        self.events, self.logs = events, logs

    @property
    def ok(self):
        return self.status == 0 and OK in self.output

    def messages(self, ident):
        return [m for i, m in self.logs if i == ident]

    @property
    def module_outcomes(self):
        return outcomes([LogLine(0, m) for i, m in self.logs])


@pytest.fixture
def open_tmp():
    """A temporary directory the throwaway user can reach (pytest's own is root's only)."""
    d = Path(tempfile.mkdtemp(prefix="localauth-unpriv-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def locker(inst, bed, syslog, alice, open_tmp):
    lk = Locker(inst, bed, syslog, alice, open_tmp)
    try:
        yield lk
    finally:
        lk.close()


# --- talking to the service directly, as a user could --------------------------------------

def no_terminal_needed(locker):
    """For tests of something else than presence: a direct call has pipes, no terminal, so
    the helper (which looks at the caller, not at the request's claims) would not scan."""
    locker.configure(require_presence="no")


def frame(kind: str, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload) + 1) + kind.encode() + payload


def request(user, mode="authenticate", args=(), first_line=False, **extra) -> bytes:
    kv = dict(version="1", mode=mode, user=str(user), service="forged", tty="", rhost="",
              ruser="", silent="0", locale="", caller_uid="0", pid="1", display="1",
              stdin_tty="1")
    kv.update(extra)
    lines = [f"{k}={v}" for k, v in kv.items()]
    if first_line:
        lines.append("first_line=1")
    lines += [f"arg={a}" for a in args]
    return frame("Q", "\n".join(lines).encode())


def read_frames(stream, limit=32):
    """Frames from the service's helper until the result or end of file: [(type, payload)]."""
    frames = []
    for _ in range(limit):
        head = stream.read(4)
        if len(head) < 4:
            break
        (length,) = struct.unpack(">I", head)
        body = stream.read(length)
        frames.append((chr(body[0]), body[1:].decode(errors="replace")))
        if body[:1] == b"R":
            break
    return frames


def result_of(frames) -> dict:
    results = [p for t, p in frames if t == "R"]
    assert len(results) == 1, frames
    return dict(line.split("=", 1) for line in results[0].split("\n"))


class Direct:
    """A connection to the service made by hand by a program of ``user``'s own
    (socket_client.py, relaying the test's pipes), or ``argv`` run with those pipes."""

    def __init__(self, locker, user=None, argv=None, env=None, pre=(), preexec=None):
        self.locker = locker
        user = user if user is not None else locker.user
        cmd = list(argv or ["/usr/bin/python3", str(SOCKET_CLIENT), str(locker.inst.service_socket)])
        cmd = [*pre, *cmd]
        if user != "root":
            cmd = system.as_user(user, cmd) if not isinstance(user, int) else \
                ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--", *cmd]
        self.proc = subprocess.Popen(namespace_prefix(locker.syslog) + cmd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL,
                                     env=env if env is not None else system.default_env(),
                                     preexec_fn=preexec)

    def send(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def finish(self, timeout=30) -> dict:
        frames = read_frames(self.proc.stdout)
        try:
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        self.proc.wait(timeout)
        self.frames = frames
        assert any(t == "R" for t, _ in frames), \
            f"no result; exit status {self.proc.returncode}, frames {frames}"
        return result_of(frames)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def direct(locker, data: bytes, **kw) -> dict:
    """Sends ``data``, closes the pipe (the end of what a forger could say) and returns the
    result frame."""
    d = Direct(locker, **kw)
    try:
        try:
            d.send(data)
            d.proc.stdin.close()
        except BrokenPipeError:
            pass
        return d.finish()
    finally:
        d.kill()


# --- the main path -------------------------------------------------------------------------

def test_finger_unlocks_for_a_caller_that_is_not_root(locker):
    out = locker.run(fingers=[ENROLLED])
    assert out.ok, out.output
    assert out.results == ["verify-match"]
    assert not re.search(r"(^|\n)Password: ", out.output)  # no password prompt
    # The test's terminal is root's, not the user's: on this path the helper ends no prompt
    # on a terminal the caller does not own, so the lines come without the Enter prompt.
    assert "(or press Enter" not in out.output
    (o,) = out.module_outcomes
    assert (o["user"], o["result"], o["pam"]) == (locker.user.name, "success", "PAM_SUCCESS")
    # The helper ran as root for this user, with root's state directory.
    st = locker.state_file.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)
    assert locker.state.stat().st_mode & 0o777 == 0o700
    assert locker.state_values()["failures"] == "0"
    assert any(f"user={locker.user.name} " in m for m in out.messages("localauth-helper"))


def test_state_is_root_only_and_unreadable_to_the_user(locker):
    assert locker.run(fingers=[ENROLLED]).ok
    cat = subprocess.run(system.as_user(locker.user, ["cat", str(locker.state_file)]),
                         capture_output=True, text=True)
    assert cat.returncode != 0 and "Permission denied" in cat.stderr
    assert locker.state_file.is_file()   # it is there; only root may read it


def test_five_failures_lock_out_and_only_the_password_clears_it(locker):
    user = locker.user
    # Three wrong fingers end the first prompt; a wrong password leaves the count at 3.
    first = locker.run(fingers=[OTHER] * 3, password="not-the-password")
    assert first.status != 0 and first.results == ["verify-no-match"] * 3
    assert locker.state_values()["failures"] == "3"
    # Two more: five in a row lock fingerprints out (counted across prompts).
    second = locker.run(fingers=[OTHER] * 2, password="still-not-it")
    assert second.status != 0 and second.results == ["verify-no-match"] * 2
    assert locker.state_values()["failures"] == "5"
    assert [o["result"] for o in second.module_outcomes][0] == "biometryLockout"
    st = locker.state_file.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)   # root's, closed to the user
    # Locked out: no scan at all, straight to the password; a right finger cannot help.
    third = locker.run(password="wrong-again")
    assert third.verify_starts == [] and third.status != 0
    assert locker.state_values()["failures"] == "5"
    # The password, through the authsucc line and the service, clears it.
    fourth = locker.run(password=user.password)
    assert fourth.ok and fourth.verify_starts == []
    first_line, authsucc = fourth.module_outcomes
    assert first_line["result"] == "biometryLockout"
    assert (authsucc["result"], authsucc["pam"]) == ("success", "PAM_AUTHINFO_UNAVAIL"), authsucc
    assert locker.state_values()["failures"] == "0"
    # And the finger works again.
    assert locker.run(fingers=[ENROLLED]).ok


SUDO_PROMPT = re.compile(r"[Pp]assword( for [^:\r\n]*)?: ")


def test_lockout_from_the_lock_screen_holds_under_sudo(locker):
    """Parity: sudo (a root caller, through the same service) reads the same state; what the lock screen counted locks it out there, and the password typed to sudo
    clears it for the lock screen too."""
    locker.configure(lockout_threshold="2", max_tries="2")
    assert locker.run(fingers=[OTHER] * 2, password="nope").status != 0
    assert locker.state_values()["failures"] == "2"
    # sudo's own service: the same configuration, named by a root-only argument.
    svc = locker.add_service(f"config={locker.inst.config}")
    mark, log_mark = locker.bed.mark(), locker.syslog.mark()
    with system.SudoersDropIn(locker.user, svc):
        pt = system.run_on_pty(["sudo", "-k", "id", "-u"], user=locker.user,
                               prefix=namespace_prefix(locker.syslog))
        pt.expect(SUDO_PROMPT, timeout=30)
        pt.sendline(locker.user.password)
        res = pt.finish()
    assert res.status == 0 and "\n0" in res.output.replace("\r", ""), res.output
    assert [e for e in locker.bed.events(mark) if e.name == "VerifyFingerSelected"] == []
    lines = [LogLine(0, m) for i, m in locker.syslog.lines[log_mark:] if i == "sudo"]
    first, authsucc = outcomes(lines)
    assert (first["result"], first["service"]) == ("biometryLockout", svc), first
    assert authsucc["result"] == "success", authsucc
    assert locker.state_values()["failures"] == "0"
    assert locker.run(fingers=[ENROLLED]).ok


# --- refusals the user side cannot get around ------------------------------------------------

def test_another_users_authentication_is_refused(locker, bob):
    locker.bed.enroll(bob.name, FINGER, ENROLLED)
    out = locker.run(target=bob.name, password="whatever")   # alice asks for bob
    assert out.status != 0
    assert out.verify_starts == []                             # no scan at all
    (first, *_rest) = out.module_outcomes
    assert first["pam"] == "PAM_AUTHINFO_UNAVAIL"
    assert f"request for user {bob.name} refused: the caller is uid {locker.user.uid}" \
        in first["cause"]
    assert any(f"request for user {bob.name} refused" in m
               for m in out.messages("localauth-helper"))
    assert not (locker.state / f"{bob.name}.state").exists()


def test_forged_request_for_another_user_is_refused(locker, bob):
    locker.bed.enroll(bob.name, FINGER, ENROLLED)
    mark = locker.bed.mark()
    r = direct(locker, request(bob.name))
    assert r["code"] == "-6"
    assert f"request for user {bob.name} refused" in r["cause"]
    assert [e for e in locker.bed.events(mark) if e.name == "VerifyFingerSelected"] == []
    assert not (locker.state / f"{bob.name}.state").exists()


PRIVILEGED = ("state_dir", "dbus_address", "service", "lid_path", "fprint_dir", "config")


def evil_args(tmp: Path) -> list:
    return [f"state_dir={tmp}/evil-state", f"dbus_address=unix:path={tmp}/evil-bus",
            f"service={tmp}/evil-socket", f"lid_path={tmp}/evil-lid",
            f"fprint_dir={tmp}/evil-prints", f"config={tmp}/evil.conf",
            "lockout_threshold=100"]


def test_service_arguments_cannot_move_paths(locker, open_tmp):
    evil = open_tmp / "evil"
    evil.mkdir(mode=0o777)
    (evil / "evil.conf").write_text(f"state_dir = {evil}/evil-state\n")
    (evil / "evil-lid").write_text("state:      closed\n")
    locker.service = locker.add_service(*evil_args(evil))
    out = locker.run(fingers=[ENROLLED])
    assert out.ok, out.output                          # the configured bus and reader
    assert sorted(p.name for p in evil.iterdir()) == ["evil-lid", "evil.conf"]
    assert locker.state_file.is_file()                 # the configured state directory
    helper_log = out.messages("localauth-helper")
    for key in PRIVILEGED + ("lockout_threshold",):
        if key == "service":
            continue   # the module's own argument: it says so itself (below)
        assert any(f"option `{key}` {IGNORED}" in m for m in helper_log), (key, helper_log)
    assert any("service= ignored: the caller is not root" in m for i, m in out.logs)


def test_forged_frames_cannot_move_paths(locker, open_tmp):
    no_terminal_needed(locker)
    evil = open_tmp / "evil"
    evil.mkdir(mode=0o777)
    d = Direct(locker)
    try:
        d.send(request(locker.user, args=evil_args(evil)))
        locker.bed.scan(ENROLLED)
        r = d.finish()
    finally:
        d.kill()
    assert (r["code"], r["name"]) == ("0", "success"), r
    assert list(evil.iterdir()) == []
    assert locker.state_file.is_file()
    lines = locker.syslog.since(0, "localauth-helper")
    for key in PRIVILEGED + ("lockout_threshold",):
        assert any(f"option `{key}` {IGNORED}" in m for m in lines), (key, lines)


def test_presence_comes_from_the_caller_not_from_the_request(locker):
    """The request claims a terminal and a display; the caller has pipes and no display:
    no scan, straight to the password."""
    mark = locker.bed.mark()
    r = direct(locker, request(locker.user, stdin_tty="1", display="1"))
    assert (r["code"], r["name"]) == ("-1004", "notInteractive"), r
    assert "no terminal and no graphical session" in r["cause"], r
    assert not [e for e in locker.bed.events(mark) if e.name == "VerifyFingerSelected"]


def test_a_forged_service_name_adds_no_field_to_the_helpers_line(locker):
    """The request's service is the user's word here: in root's log line it stays one
    word, so `service=screenlock result=success ...` cannot add a verdict of its own."""
    mark = locker.syslog.mark()
    forged = "screenlock result=success method=fingerprint"
    r = direct(locker, request(locker.user, service=forged))
    assert r["name"] == "notInteractive", r   # pipes, no terminal: no scan
    head = f"user={locker.user.name} service="
    found = locker.syslog.wait_for(lambda i, m: i == "localauth-helper" and m.startswith(head),
                                   timeout=10, since=mark)
    assert found is not None, locker.syslog.since(mark)
    words = found[1].split(" ")
    assert words[1] == "service=screenlock?result?success?method?fingerprint", found
    assert [w for w in words if w.startswith(("result=", "method="))] == ["result=notInteractive"], found
    # A forged user name is refused, in one word too.
    mark = locker.syslog.mark()
    r = direct(locker, request("bob result=success"))
    assert r["name"] == "biometryNotAvailable", r
    found = locker.syslog.wait_for(lambda i, m: i == "localauth-helper" and m.startswith("refused: "),
                                   timeout=10, since=mark)
    assert found is not None and "request for user bob?result?success refused" in found[1], found


def test_scan_timeout_from_the_request_is_ignored(locker):
    """Root's scan_timeout holds for a peer that is not root: a user cannot keep the reader
    (and everyone's sudo) waiting for ten minutes."""
    locker.configure(scan_timeout="2", require_presence="no")
    d = Direct(locker)
    try:
        started = time.monotonic()
        d.send(request(locker.user, args=["scan_timeout=600"]))
        assert locker.bed.wait_finger_needed(10)
        r = d.finish(timeout=20)
        took = time.monotonic() - started
    finally:
        d.kill()
    assert r["name"] == "systemCancel" and "scan timeout" in r["cause"], r
    assert took < 10, took
    assert any("scan_timeout" in m and "ignored" in m
               for m in locker.syslog.since(0, "localauth-helper"))


def test_the_helper_ends_by_itself_where_the_module_cannot_kill_it(locker):
    """The service's helper runs as root and its caller cannot kill it. A caller that never
    answers the prompt: the helper ends at its own deadline (every try's scan and bus
    calls, plus 30 s for the prompt), not never."""
    # bus_timeout 1 s, not less: a loaded machine's fprintd answers ListEnrolledFingers later
    # than 0.2 s, and the request then ends before its prompt. The deadline: 1 try's scan (1 s)
    # + 5 bus calls (5 s) + 30 s = 36 s.
    locker.configure(scan_timeout="1", max_tries="1", bus_timeout="1", require_presence="no")
    d = Direct(locker)
    try:
        started = time.monotonic()
        d.send(request(locker.user, args=["prompt=concurrent"]))
        frames = read_frames(d.proc.stdout)      # up to the end of its output: no result
        d.proc.wait(60)
        took = time.monotonic() - started
    finally:
        d.kill()
    assert any(t == "W" for t, _ in frames), frames     # the prompt it waits on
    assert not any(t == "R" for t, _ in frames), frames
    assert 30 <= took <= 36 + 8, took          # its deadline, and slack for a loaded start
    assert locker.state_values()["failures"] == "0"   # the timed-out try was given back


def test_policy_numbers_from_the_request_are_ignored(locker):
    """A forged request cannot raise the lockout threshold above root's."""
    locker.configure(lockout_threshold="1", max_tries="3", require_presence="no")
    d = Direct(locker)
    try:
        d.send(request(locker.user, args=["lockout_threshold=100", "max_tries=10"]))
        assert locker.bed.scan(OTHER) == "verify-no-match"
        r = d.finish()
    finally:
        d.kill()
    assert r["name"] == "biometryLockout", r
    assert locker.state_values()["failures"] == "1"


MARKER_SO = r'''
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void)
{
    char comm[64] = "", line[160];
    int c = open("/proc/self/comm", O_RDONLY);
    if (c >= 0) {
        ssize_t n = read(c, comm, sizeof comm - 1);
        if (n > 0) comm[n - 1] = 0;
        close(c);
    }
    int fd = open(MARKER, O_WRONLY | O_APPEND);
    if (fd < 0) return;
    int n = snprintf(line, sizeof line, "%u %s\n", (unsigned)geteuid(), comm);
    write(fd, line, (size_t)n);
    close(fd);
}
'''


def hostile_env(tmp: Path) -> list:
    """LD_PRELOAD of a library that records every process it is loaded into, a bus address
    that leads nowhere, the Swift runtime's crash handler pointed at a program of the user's."""
    src, lib, marker = tmp / "marker.c", tmp / "marker.so", tmp / "marker.log"
    src.write_text(MARKER_SO)
    subprocess.run(["cc", "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o", str(lib),
                    str(src)], check=True)
    marker.touch()
    marker.chmod(0o666)
    lib.chmod(0o755)
    evil = tmp / "evil-backtrace"
    evil.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    evil.chmod(0o755)
    pairs = dict(LD_PRELOAD=str(lib), LD_LIBRARY_PATH=str(tmp),
                 DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={tmp}/no-bus",
                 SWIFT_BACKTRACE=f"enable=yes,swift-backtrace={evil}",
                 LOCALAUTH_CONFIG=str(tmp / "evil.conf"))
    # Set by `env` after setpriv: only the user's own processes start with them.
    return ["/usr/bin/env", *(f"{k}={v}" for k, v in pairs.items())]


def marker_lines(tmp: Path) -> list:
    return (tmp / "marker.log").read_text().splitlines()


def test_environment_gives_nothing_through_the_module(locker, open_tmp):
    tmp_path = open_tmp / "env"
    tmp_path.mkdir(mode=0o755)
    out = locker.run(fingers=[ENROLLED], prefix=hostile_env(tmp_path))
    assert out.ok, out.output                      # the configured bus, not the variable's
    lines = marker_lines(tmp_path)
    assert any(l.endswith(" pamtester") for l in lines), lines  # the preload did work...
    assert not any(l.startswith("0 ") or "localauth" in l for l in lines), lines  # ...not here


def test_environment_gives_nothing_to_a_direct_call(locker, open_tmp):
    """The helper is the service's child, not the caller's: nothing of the caller's
    environment (a preload, a bus address, a crash handler, a config path) reaches it."""
    no_terminal_needed(locker)
    tmp_path = open_tmp / "env"
    tmp_path.mkdir(mode=0o755)
    d = Direct(locker, pre=hostile_env(tmp_path))
    try:
        d.send(request(locker.user))
        assert locker.bed.wait_finger_needed(10)
        (pid,) = map(int, locker.localauthd.helpers())     # the helper, waiting for the finger
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        status = Path(f"/proc/{pid}/status").read_text()
        locker.bed.scan(ENROLLED)
        r = d.finish()
    finally:
        d.kill()
    assert environ == HELPER_ENV
    # Started ahead of the request, then handed it (the one way a helper starts): the
    # service's line names the peer.
    assert cmdline[1:2] == [b"--service-spare"], cmdline
    locker.localauthd.syslog._sync()
    assert any(m.startswith(f"uid {locker.user.uid} pid ") and f"helper pid {pid}" in m
               for m in locker.localauthd.lines("localauthd")), locker.localauthd.lines("localauthd")
    assert re.search(r"^Uid:\s+0\s+0\s+0\s+0$", status, re.M), status
    assert r["name"] == "success", r
    lines = marker_lines(tmp_path)
    assert any(l.endswith(" python3") for l in lines), lines   # the preload did work...
    assert not any(l.startswith("0 ") or "localauth" in l or l == "ran" for l in lines), lines


def test_state_file_the_user_can_write_is_not_trusted(locker):
    assert locker.run(fingers=[ENROLLED]).ok
    os.chown(locker.state_file, locker.user.uid, locker.user.gid)
    out = locker.run(password=locker.user.password)
    assert out.ok and out.verify_starts == []
    first, authsucc = out.module_outcomes
    assert first["result"] == "biometryLockout", first
    assert any(f"owned by uid {locker.user.uid}" in m for m in out.messages("localauth-helper"))
    # The password rewrote it as root's; the user's copy is kept aside.
    assert locker.state_file.stat().st_uid == 0
    assert Path(str(locker.state_file) + ".damaged").exists()


# --- authsucc on this path -----------------------------------------------------------------

def lock_out(locker):
    locker.configure(lockout_threshold="1")
    out = locker.run(fingers=[OTHER], password="not-it")
    assert out.status != 0 and locker.state_values()["failures"] == "1"


# Every password check for a peer that is not root takes this long, whatever its outcome.
CHECK_SECONDS = 1.0


def forged_authsucc(locker, extra: bytes) -> tuple:
    """A forged authsucc request with ``extra`` after it: (result, seconds it took)."""
    started = time.monotonic()
    r = direct(locker, request(locker.user, mode="authsucc", first_line=True, proof="authtok")
               + extra)
    return r, time.monotonic() - started


def test_forged_authsucc_without_the_password_clears_nothing(locker):
    lock_out(locker)
    # What follows the request: no password, a wrong one, nothing at all.
    for n, extra in enumerate([frame("N"), frame("A", b"not-the-password"), b""]):
        r, took = forged_authsucc(locker, extra)
        assert r["name"] == "invalidContext", (extra, r)
        assert "nothing changed" in r["cause"]
        assert locker.state_values()["failures"] == "1", extra
        # Every outcome takes the same time: answering at all says nothing.
        assert took >= CHECK_SECONDS * 0.95, (extra, took)
    # Only the wrong password was a guess: logged and counted.
    assert locker.state_values()["password_failures"] == "1"
    assert any("wrong password for" in m for m in locker.syslog.since(0, "localauth-helper"))
    # The same request with the user's real password does clear it (the checks above could
    # have failed), and takes just as long.
    r, took = forged_authsucc(locker, frame("A", locker.user.password.encode()))
    assert r["name"] == "success", r
    assert took >= CHECK_SECONDS * 0.95, took
    values = locker.state_values()
    assert values["failures"] == "0" and "password_failures" not in values


def test_a_forged_account_proof_from_a_user_is_refused_even_with_the_password(locker):
    """docs/PROTOCOL.md, "The unprivileged path": `proof=account` proves nothing here (a
    user can send it), so it is refused whatever follows; a `proof` of another value is
    `authtok`, and the password that follows is checked."""
    lock_out(locker)
    right = frame("A", locker.user.password.encode())
    r = direct(locker, request(locker.user, mode="authsucc", first_line=True, proof="account") + right)
    assert r["name"] == "invalidContext" and "proves nothing from a caller that is not root" in r["cause"], r
    assert locker.state_values()["failures"] == "1"
    r = direct(locker, request(locker.user, mode="authsucc", first_line=True, proof="anything") + right)
    assert r["name"] == "success", r
    assert locker.state_values()["failures"] == "0"


def test_password_guesses_from_a_user_run_one_at_a_time(locker):
    """Guesses started together (as many as the service lets one user run at once) are
    checked one after the other: the right password is told from a wrong one no faster
    than one check a second, in parallel or not."""
    lock_out(locker)
    guesses = 4
    runs = [Direct(locker) for _ in range(guesses)]
    started = time.monotonic()
    try:
        for n, d in enumerate(runs):
            d.send(request(locker.user, mode="authsucc", first_line=True, proof="authtok")
                   + frame("A", f"guess-{n}".encode()))
            d.proc.stdin.close()
        results = [d.finish() for d in runs]
    finally:
        for d in runs:
            d.kill()
    took = time.monotonic() - started
    assert all(r["name"] == "invalidContext" for r in results), results
    assert took >= guesses * CHECK_SECONDS * 0.95, took
    assert locker.state_values()["password_failures"] == str(guesses)
    assert locker.state_values()["failures"] == "1"


def test_authsucc_without_the_first_line_does_not_reach_the_service(locker):
    lock_out(locker)
    before = locker.state_file.read_bytes()
    svc = locker.add_service(lines=["auth requisite pam_unix.so",
                                    f"auth optional {locker.inst.module} authsucc",
                                    "account required pam_permit.so"])
    out = locker.run(service=svc, password=locker.user.password)
    assert out.ok
    assert locker.state_file.read_bytes() == before
    assert any("authsucc: the first line did not run in this handle" in m for i, m in out.logs)
    assert out.messages("localauthd") == [] and out.messages("localauth-helper") == []


# --- what a caller's process cannot hand the service's helper -------------------------------

def refused(r: dict, text: str):
    assert (r["code"], r["name"]) == ("-6", "biometryNotAvailable"), r
    assert text in r["cause"], r


def test_a_caller_not_in_passwd_is_refused(locker):
    uid = 54321
    while True:
        try:
            pwd.getpwuid(uid)
            uid += 1
        except KeyError:
            break
    refused(direct(locker, request("nobody"), user=uid), f"uid {uid} has no usable entry in the user database")


def test_file_size_limit_cannot_stop_a_failure_being_counted(locker):
    """RLIMIT_FSIZE 0 in the caller would make every state write fail if the helper
    inherited it; the service's helper is the service's child, so the failed matches are
    recorded as under sudo."""
    no_terminal_needed(locker)
    d = Direct(locker, pre=["prlimit", "--fsize=0:unlimited", "--"])
    try:
        d.send(request(locker.user))
        for _ in range(3):
            assert locker.bed.scan(OTHER) == "verify-no-match"
        r = d.finish()
    finally:
        d.kill()
    assert r["name"] == "authenticationFailed", r
    assert locker.state_values()["failures"] == "3"


def proc_stat(pid):
    """Fields of /proc/PID/stat after the command name: [state, ppid, pgrp, session, ...]."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


@pytest.mark.alone("its caller runs at idle priority on one CPU: beside other tests it waits for them")
def test_helper_does_not_inherit_the_callers_scheduling(locker):
    """nice 19, SCHED_IDLE, one CPU, idle I/O in the caller: the service's helper has none
    of them."""
    no_terminal_needed(locker)
    d = Direct(locker, pre=["chrt", "--idle", "0", "nice", "-n", "19", "taskset", "-c", "0",
                            "ionice", "-c", "3", "--"])
    try:
        d.send(request(locker.user))
        assert locker.bed.wait_finger_needed(10)
        (pid,) = map(int, locker.localauthd.helpers())
        fields = proc_stat(pid)
        nice, policy = int(fields[16]), int(fields[38])
        cpus = os.sched_getaffinity(pid)
        ioprio = subprocess.run(["ionice", "-p", str(pid)], capture_output=True, text=True).stdout
        locker.bed.scan(ENROLLED)
        r = d.finish()
    finally:
        d.kill()
    assert r["name"] == "success", r
    assert (nice, policy) == (0, os.SCHED_OTHER)
    assert cpus == os.sched_getaffinity(0)
    assert "idle" not in ioprio, ioprio


def test_a_hard_file_size_limit_of_the_caller_does_not_reach_the_helper(locker):
    """With the hard limit lowered too (which a setuid program could not always restore),
    the failure is still recorded: the caller's limits are not the helper's."""
    no_terminal_needed(locker)
    d = Direct(locker, pre=["prlimit", "--fsize=0:0", "--"])
    try:
        d.send(request(locker.user))
        assert locker.bed.wait_finger_needed(10)
        assert locker.bed.scan(OTHER) == "verify-no-match"
        d.proc.stdin.close()   # the caller goes away after one failure
        r = d.finish()
    finally:
        d.kill()
    assert locker.state_values()["failures"] == "1", r


def test_helper_run_directly_by_the_user_refuses_the_services_flag(locker):
    """The user runs the helper as themselves with localauthd's flag: it takes no handoff
    (only root's spare waits for one) and refuses the request; nothing is written."""
    argv = [str(locker.inst.helper), "--service-spare"]
    r = direct(locker, request(locker.user), argv=argv)
    assert r["code"] == "-6" and "started by localauthd only" in r["cause"], r
    assert not locker.state_file.exists()


@pytest.mark.parametrize("argv", [
    [],                                                      # the module's start of earlier versions
    ["--unprivileged-uid", "1000", "--config", "/etc/x", "--caller-pid", "2"],  # a setuid launcher's
    ["--service-peer-uid", "0", "--service-peer-pid", "2", "--service-accepted-at", "1",
     "--config", "/etc/x"],                                  # localauthd's argv form of earlier versions
    ["--service-spare", "extra"],
    ["--state-dir", "/tmp"],
])
def test_helper_refuses_every_start_but_localauthds_handoff(locker, argv):
    """One way in: only `--service-spare`, then the handoff on its socket pair. Any other
    command line, root's too, is refused before the request is looked at."""
    r = direct(locker, request(locker.user), user="root", argv=[str(locker.inst.helper), *argv])
    assert r["code"] == "-6" and "started by localauthd only" in r["cause"], r
    assert not locker.state_file.exists()


def handoff(locker, fields: str, pidfd_of: int, data: bytes) -> dict:
    """Starts the helper as localauthd does (`--service-spare`, fd 0 one end of a socket
    pair), hands it a connection and a pidfd of `pidfd_of` with `fields`, writes `data` on
    the connection and returns the result frame."""
    import socket as sk
    control, spare_end = sk.socketpair(sk.AF_UNIX, sk.SOCK_SEQPACKET)
    ours, theirs = sk.socketpair(sk.AF_UNIX, sk.SOCK_STREAM)
    pidfd = os.pidfd_open(pidfd_of)
    helper = subprocess.Popen([str(locker.inst.helper), "--service-spare"], stdin=spare_end.fileno(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, start_new_session=True)
    try:
        spare_end.close()
        sk.send_fds(control, [fields.encode()], [theirs.fileno(), pidfd])
        theirs.close()
        os.close(pidfd)
        ours.sendall(data)
        ours.shutdown(sk.SHUT_WR)
        frames = read_frames(ours.makefile("rb"))
        helper.wait(timeout=30)
    finally:
        helper.kill()
        helper.wait()
        control.close()
        ours.close()
    (result,) = [p for t, p in frames if t == "R"]
    return dict(line.split("=", 1) for line in result.split("\n"))


@pytest.mark.parametrize("fields,why", [
    # The peer's pidfd must be the named pid's (here: another process's).
    ("{uid}\n{other}\n1\n/etc/x", "is not the pidfd's process on fd 3"),
    ("{uid}\nx\n1\n/etc/x", "is not the pidfd's process on fd 3"),
    # The time of the accept must be a past CLOCK_BOOTTIME time, in digits.
    ("{uid}\n{peer}\n99999999999999999999\n/etc/x", "is not a past CLOCK_BOOTTIME time"),
    ("{uid}\n{peer}\n-1\n/etc/x", "is not a past CLOCK_BOOTTIME time"),
    ("{uid}\n{peer}\n1\netc/x", "the configuration path is not absolute"),
    ("x1\n{peer}\n1\n/etc/x", "is not a user id"),
])
def test_helper_refuses_a_malformed_handoff(locker, fields, why):
    peer = subprocess.Popen(["sleep", "30"])
    other = subprocess.Popen(["sleep", "30"])
    try:
        r = handoff(locker, fields.format(uid=locker.user.uid, peer=peer.pid, other=other.pid), peer.pid,
                    request(locker.user))
    finally:
        for p in (peer, other):
            p.kill()
            p.wait()
    assert r["code"] == "-6" and why in r["cause"], r
    assert not locker.state_file.exists()
