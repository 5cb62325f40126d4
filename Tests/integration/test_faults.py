"""The fault matrix: everything that can go wrong around pam_localauth.so, one fault per test.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_faults.py

The module reaches root's side only through localauthd: each test starts one of its own
as where no systemd runs (`localauthd --listen SOCKET --helper PATH`, real_helper.LocalService)
and names it with `service=SOCKET`. Faults on the reader's side run the real helper
(build/libexec/localauth/localauth-helper) behind it against the real fprintd with the
virtual reader (testbed.py); faults that need a helper that misbehaves put the fake helper
(fake_helper.py) behind it, which gets the caller's connection from the service as the
real one does. Every fault checks, through `attempt()` and `check()`:

* the LAError in the module's log line (`result=`) and the PAM code it returned;
* that the host process (the pamenv driver, standing for sudo or login) survived and has
  no child of the module's (the helper is the service's);
* that the password module after ours still worked in the same transaction (or, where the
  fault breaks the conversation itself, in the next one);
* that a log line names the cause.

A module-scoped finalizer prints how many faults were tried, how many ended in a wrongful
success (our line returning PAM_SUCCESS, or the stack succeeding without the password,
when no finger matched) and how many killed the host; both must be 0.

The real helper asks for a finger only when someone can be at the reader; the driver reads
its script from a pipe, so these tests name a graphical display (DISPLAY) instead of a
terminal, except where the missing terminal is the fault.
"""
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pamenv  # noqa: E402
from ctl_support import read_state  # noqa: E402
import real_helper  # noqa: E402
from pamenv import PamWorld, outcomes  # noqa: E402
from real_helper import (ENROLLED, NOBODY, PASSWORD, PRESENT, RECOGNIZED, REAL_HELPER,  # noqa: E402
                         STRANGER, USER, Tally, check, needs_helper,
                         password_prompt_at, prompts)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root (mounts, helper checks)")


# --- the tally ---------------------------------------------------------------------------

TALLY = Tally()


class Real(real_helper.Real):
    tally = TALLY


def attempt(fault, world, service, user=USER, **kw):
    return real_helper.attempt(fault, world, service, user, tally=TALLY, **kw)


@pytest.fixture(scope="module", autouse=True)
def fault_summary(request):
    if not os.environ.get("LOCALAUTH_SKIP_BUILD") and not os.environ.get("LOCALAUTH_PAM_MODULE"):
        subprocess.run([str(pamenv.REPO / "scripts" / "build"), "--c-only"], check=True,
                       capture_output=True)
    yield
    line = (f"fault matrix: {len(TALLY.tried)} faults tried, {len(TALLY.wrongful)} wrongful "
            f"successes, {len(TALLY.crashed)} host crashes")
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
        print(f"\n{line}")
        for what, names in (("wrongful success", TALLY.wrongful), ("host crash", TALLY.crashed)):
            for name in names:
                print(f"  {what}: {name}")
    assert TALLY.tried, "no fault was tried"
    assert TALLY.wrongful == [], line
    assert TALLY.crashed == [], line


# --- the real helper against the bed -----------------------------------------------------

@pytest.fixture
def world():
    with PamWorld() as w:
        yield w


@pytest.fixture
def real(world, bed):
    if not REAL_HELPER.is_file():
        pytest.skip("localauth-helper not built (scripts/build)")
    bed.enroll(USER, "right-index-finger", ENROLLED)
    return Real(world, bed)


# --- fprintd and the reader --------------------------------------------------------------

@needs_helper
def test_fprintd_absent(world, bed_factory):
    """No fprintd on the bus: the service answers itself, no helper runs, the password."""
    r = Real(world, bed_factory(fprintd=False))
    mark = r.syslog.mark()
    res = r.attempt("fprintd absent", r.stack())
    check(res, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL",
          "fprintd is not on the bus and cannot be started there (answered by localauthd)")
    assert outcomes(res.logs)[0]["reason"] == "reader-unreachable"
    assert not [m for m in r.syslog.since(mark, "localauth-helper") if USER in m], "a helper ran"


@needs_helper
def test_fprintd_frozen(real):
    real.bed.freeze_fprintd()
    try:
        r = real.attempt("fprintd frozen", real.stack("bus_timeout=0.5"))
    finally:
        real.bed.thaw_fprintd()
    check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", "did not answer")
    real.match_works(real.stack())


@needs_helper
def test_fprintd_frozen_is_not_waited_for_again_after_the_password(real):
    """The lines after the password (authsucc, account) know from the handle that fprintd
    failed in this transaction: they record the password without asking it again, so the
    person who typed it does not wait `bus_timeout` a second time (issue 21). Counted, not
    timed: after the first line's helper, no helper joins the bus."""
    from testbed import NewClients
    # None started ahead: a spare readies the bus before any request (SpareBus), so its join
    # would say nothing of these lines; with none ahead, each client is a request's helper.
    real.in_namespace([], more=("--spare", "no"))
    watcher = NewClients(real.bed.address, exclude_pid=real.service.pid)
    real.bed.freeze_fprintd()
    try:
        r = real.attempt("fprintd frozen, then the password", real.stack("bus_timeout=0.5", authsucc=True))
    finally:
        real.bed.thaw_fprintd()
        joined = list(watcher.times)
        watcher.close()
    check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", "did not answer")
    assert outcomes(r.logs)[0]["reason"] == "reader-unreachable"
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS")
    assert len(joined) == 1, f"{len(joined)} connections to the bus: only the first line's helper may connect"
    state = read_state(real.state, USER)
    assert state["last_password"] > 0, state   # the account line recorded the password all the same


@pytest.mark.alone("a time bound: the password within bus_timeout + 0.5 s")
@needs_helper
@pytest.mark.parametrize("bus_timeout", [0.5, 1.5])
def test_fprintd_frozen_costs_the_bus_timeout_once(real, bus_timeout):
    real.bed.freeze_fprintd()
    try:
        r = real.attempt("fprintd frozen (timed)", real.stack(f"bus_timeout={bus_timeout}"))
    finally:
        real.bed.thaw_fprintd()
    check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", "")
    assert password_prompt_at(r) - r.times["start"] <= bus_timeout + 0.5


@pytest.mark.alone("a time bound: the password within 1.9 s")
@needs_helper
def test_a_slow_fprintd_costs_the_bus_timeout_once_for_the_whole_start_up(world, bed_factory):
    """Each of the start-up's calls (GetDevices, ListEnrolledFingers, name, scan-type,
    Claim, VerifyStart) is answered within bus_timeout (0.4 s each, against 1 s); together
    they are not (at least 2 s, one after another): the bound is for the whole start-up,
    not per call. slow_fprintd answers each call after exactly that delay, so the verdict
    is the same on a fast machine or a slow one."""
    from slow_fprintd import SlowFprintd
    real = Real(world, bed_factory(fprintd=False))
    with SlowFprintd(real.bed.address, 0.4):
        r = real.attempt("fprintd slow", real.stack("bus_timeout=1"))
    check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", "in time")
    assert outcomes(r.logs)[0]["reason"] == "reader-unreachable"
    # One bound, not one per call: the password comes after about 1 s, far from the 2.4 s
    # the calls would take (the margin is for a slow machine; a per-call bound cannot meet it).
    assert password_prompt_at(r) - r.times["start"] <= 1.9


@needs_helper
def test_the_helpers_own_slow_write_between_claim_and_scan_is_not_fprintds_time(real):
    """The helper counts the coming try while fprintd answers the Claim. Here that write
    waits 1.5 s on the state file's lock, held by the test from before the start until
    fprintd has claimed the reader and 1.5 s more, as an fsync behind a busy disk holds it
    (the likely cause of a CI failure with the VM tier beside it). fprintd answered at once, so
    the 1 s bus bound has not run out: the scan starts and the finger matches. Held by the
    lock, not by load, the verdict is the same on a fast machine or a slow one."""
    lock = os.open(real.state / f"{USER}.lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    log_start = len(real.bed.log("fprintd"))
    claimed = threading.Event()

    def unlock_after_the_claim():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if "claimed device" in real.bed.log("fprintd")[log_start:]:
                claimed.set()
                time.sleep(1.5)
                break
            time.sleep(0.02)
        fcntl.flock(lock, fcntl.LOCK_UN)

    unlocker = threading.Thread(target=unlock_after_the_claim)
    unlocker.start()
    try:
        inj = real.bed.scan_when_ready(ENROLLED, timeout=40)
        # A match is meant here, so the attempt stays out of the tally of wrongful successes;
        # it is a fault tried all the same (the matrix's summary counts it).
        TALLY.tried.append("the helper's own write slow")
        r = real_helper.attempt("the helper's own write slow", real.world,
                                real.stack("bus_timeout=1"), env=PRESENT, account=True)
    finally:
        unlocker.join()
        os.close(lock)
    assert claimed.is_set(), "fprintd never claimed the reader while the lock was held"
    assert inj.wait(15) == ["verify-match"]
    check(r, "success", "PAM_SUCCESS", "", password=False)
    assert "Password: " not in prompts(r)


@pytest.mark.alone("a time bound: the password within 1.5 s of Ctrl-C")
@needs_helper
def test_fprintd_frozen_mid_scan_costs_the_bus_timeout_once_after_ctrl_c(real):
    """The reader waits; fprintd freezes; Ctrl-C: VerifyStop and Release are pending and
    together cost at most bus_timeout."""
    def freeze_when_waiting():
        if real.bed.wait_finger_needed(15):
            real.bed.freeze_fprintd()
    freezer = threading.Thread(target=freeze_when_waiting)
    freezer.start()
    try:
        r = real.attempt("fprintd frozen mid-scan, Ctrl-C", real.stack("bus_timeout=1"),
                         interrupt_on="Swipe", interrupt_delay=0.5)
    finally:
        freezer.join()
        real.bed.thaw_fprintd()
    # No terminal: no skip is offered there, so SIGINT is a cancel (the password follows).
    check(r, "userCancel", "PAM_AUTH_ERR", "Ctrl-C")
    assert password_prompt_at(r) - r.times["interrupt"] <= 1.5


@needs_helper
def test_fprintd_killed_mid_scan(real):
    run = real.in_background("fprintd killed mid-scan", real.stack())
    assert real.bed.wait_finger_needed(15)
    real.bed.kill_fprintd(signal.SIGKILL)
    r = run.result(30)
    check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", "fprintd left the bus")
    real.bed.start_fprintd()
    real.match_works(real.stack())


# Holds an flock on argv[1] until its stdin closes (a process stuck with the lock held).
HOLD_LOCK = ("import fcntl, sys\n"
             "f = open(sys.argv[1], 'r+')\n"
             "fcntl.flock(f, fcntl.LOCK_EX)\n"
             "print('held', flush=True)\n"
             "sys.stdin.read()\n")


@needs_helper
def test_the_installation_secret_lock_held_by_a_stuck_process(real):
    """`.secret.lock` is one lock for every user of the installation, held only while the
    secret is made. A process that holds it and never lets go (a helper frozen in a cgroup
    its caller controls) before the secret exists costs a sign-in a bounded wait, then the
    password: no finger, and the log names the lock. Once the secret exists it is read
    without the lock, so the same holder delays nobody."""
    (real.state / ".secret").unlink(missing_ok=True)
    lock = real.state / ".secret.lock"
    lock.touch(mode=0o600)
    holder = subprocess.Popen([pamenv.PYTHON, "-c", HOLD_LOCK, str(lock)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        mark = real.bed.mark()
        r = real.attempt("installation secret lock held", real.stack())
        check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL",
              ".secret.lock is still held by another process")
        assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"]
    finally:
        holder.stdin.close()
        holder.wait(10)
    real.match_works(real.stack())            # the secret exists now
    holder = subprocess.Popen([pamenv.PYTHON, "-c", HOLD_LOCK, str(lock)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        real.match_works(real.stack())
    finally:
        holder.stdin.close()
        holder.wait(10)


@needs_helper
def test_polkit_refuses(world, bed_factory):
    r = Real(world, bed_factory(polkit="deny"))
    res = r.attempt("polkit refuses", r.stack())
    check(res, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", "PermissionDenied")


@needs_helper
def test_reader_claimed_by_another_session(real):
    mark = real.bed.mark()
    with real.bed.hold_claim("someone-else"):
        r = real.attempt("reader claimed elsewhere", real.stack())
    check(r, "systemCancel", "PAM_AUTHINFO_UNAVAIL", "in use by another session")
    assert "PAM_ERROR_MSG" in [style for style, _ in r.messages]  # the user is told
    assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"]
    # The try is recorded while fprintd answers the Claim; a busy reader gives it back.
    assert read_state(real.state, USER)["failures"] == 0


# --- the helper itself -------------------------------------------------------------------

class FakeBed:
    """The fake helper (fake_helper.py, root's, mode 0755) behind a localauthd of the
    test's own: the service starts it when each request comes (``--spare no``) and hands it
    the caller's connection as it hands every helper one (``--service-spare``), so what it
    writes reaches the module as a helper's frames would. ``--absent-answer no``: every request
    reaches it. The service stops when the world closes."""

    USER, PASSWORD = "la-fake-user", "fake-pw-3"

    def __init__(self, world):
        self.world = world
        self.helper = world.root / "fake-helper"
        shutil.copy(HERE / "fake_helper.py", self.helper)
        os.chown(self.helper, 0, 0)
        os.chmod(self.helper, 0o755)
        self.records = world.root / "records"
        self.records.mkdir()
        os.chmod(self.records, 0o777)
        world.add_user(self.USER, self.PASSWORD)
        self.service = real_helper.LocalService(self.helper, "--spare", "no")
        real_helper.close_with(world, self.service)

    def stack(self, mode="match", *extra, name="la-test"):
        """The module (sufficient) then the password module."""
        args = " ".join([self.service.arg, f"fake_mode={mode}", f"fake_dir={self.records}", *extra])
        return self.world.service(name, [f"auth sufficient {pamenv.MODULE} {args}",
                                         f"auth required {self.world.matrix}"])

    def events(self, kind=None):
        path = self.records / "events.jsonl"
        if not path.exists():
            return []
        found = [json.loads(l) for l in path.read_text().splitlines()]
        return [e for e in found if kind is None or e["event"] == kind]


@pytest.fixture
def fake_bed(world):
    return FakeBed(world)


def fake_attempt(fault, fake_bed, service):
    return attempt(fault, fake_bed.world, service, FakeBed.USER, answers=(FakeBed.PASSWORD,))


def test_helper_refused(fake_bed):
    """localauthd's helper is gone: the service cannot start it, the caller's connection
    closes without a frame, the module's line says so and the password follows; the
    service's own line names why."""
    os.remove(fake_bed.helper)
    mark = fake_bed.service.syslog.mark()
    r = fake_attempt("helper missing", fake_bed, fake_bed.stack("match"))
    check(r, "helperFailure", "PAM_AUTHINFO_UNAVAIL", "helper ended without a result")
    assert fake_bed.events() == []
    said = fake_bed.service.lines("localauthd", mark)
    assert f"could not start the helper: {fake_bed.helper}: No such file or directory" in "\n".join(said), said


def test_helper_not_executable(fake_bed):
    """Root-owned and safe, but without the execute bits: the service's spawn fails."""
    os.chmod(fake_bed.helper, 0o644)
    mark = fake_bed.service.syslog.mark()
    r = fake_attempt("helper not executable", fake_bed, fake_bed.stack("match"))
    check(r, "helperFailure", "PAM_AUTHINFO_UNAVAIL", "helper ended without a result")
    assert fake_bed.events() == []
    said = fake_bed.service.lines("localauthd", mark)
    assert f"could not start the helper: {fake_bed.helper}: Permission denied" in "\n".join(said), said


# What the module says of a helper that misbehaves on the caller's connection.
PROTOCOL_FAULTS = {
    "garbage": ([], "malformed frame payload"),
    "oversized": ([], "frame length out of range"),
    "truncated": ([], "end of file in the middle of a frame"),
    "hang": ([], "sent nothing within"),
}


@pytest.mark.parametrize("mode,fault", [
    ("garbage", "helper writes garbage"),
    ("oversized", "oversized frame"),
    ("truncated", "truncated frame"),
    ("hang", "helper hangs past its timeout"),
])
def test_misbehaving_helper(fake_bed, mode, fault):
    extra, cause = PROTOCOL_FAULTS[mode]
    r = fake_attempt(fault, fake_bed, fake_bed.stack(mode, *extra))
    check(r, "helperFailure", "PAM_AUTHINFO_UNAVAIL", cause)
    assert [e["event"] for e in fake_bed.events()][:1] == ["start"], "the fake never ran"


@needs_helper
def test_helper_killed_mid_scan(real):
    """The service's helper for this request is killed while the reader waits: the module
    says the helper went without a result, the service that it was killed by signal 9."""
    mark = real.syslog.mark()
    run = real.in_background("helper SIGKILL mid-scan", real.stack())
    assert real.bed.wait_finger_needed(15)
    pids = real.service.helpers()
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)
    r = run.result(30)
    check(r, "helperFailure", "PAM_AUTHINFO_UNAVAIL", "helper ended without a result")
    said = real.service.lines("localauthd", mark)
    assert any("killed by signal 9" in m for m in said), said
    # Its bus connection went with it, so fprintd released the reader.
    real.match_works(real.stack())


@needs_helper
def test_real_helper_past_its_timeout(real):
    """fprintd frozen and a bus timeout longer than the module's: the module gives up on the
    connection at helper_timeout, and the service ends the helper whose caller left."""
    real.bed.freeze_fprintd()
    try:
        started = time.monotonic()
        r = real.attempt("real helper past its timeout",
                         real.stack("bus_timeout=30", "helper_timeout=1"))
        assert time.monotonic() - started < 20
    finally:
        real.bed.thaw_fprintd()
    check(r, "helperFailure", "PAM_AUTHINFO_UNAVAIL", "helper timed out after 1 s")
    deadline = time.monotonic() + 15
    while real.service.helpers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert real.service.helpers() == [], "the service's helper outlived its caller"


# --- the state directory and the state files ---------------------------------------------

def no_match(real, service, fault, n=1, **kw):
    """One transaction in which `n` strangers' fingers are presented."""
    inj = real.bed.inject_async([f"SCAN {STRANGER}"] * n, timeout=15)
    r = real.attempt(fault, service, **kw)
    assert inj.wait(20) == ["verify-no-match"] * n
    return r


@needs_helper
def test_state_directory_missing_is_created_private(real):
    missing = real.world.root / "not-yet"
    r = no_match(real, real.stack("max_tries=1", state=missing), "state directory missing")
    check(r, "authenticationFailed", "PAM_AUTH_ERR", "1 failed matches")
    st = missing.stat()
    assert (st.st_mode & 0o7777, st.st_uid) == (0o700, 0)
    assert b"failures=1\n" in (missing / f"{USER}.state").read_bytes()


@contextlib.contextmanager
def tmpfs(path, options):
    """A tmpfs of our own on `path`, always unmounted again."""
    path.mkdir(mode=0o700, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "la-fault-tmpfs", str(path)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def first_match(real, service):
    """One matching transaction: the secret and the user's state file exist afterwards."""
    inj = real.bed.scan_when_ready(ENROLLED)
    r = real.world.drive(service, USER, answers=[PASSWORD], env=PRESENT)
    assert inj.wait(15) == ["verify-match"]
    assert outcomes(r.logs)[0]["result"] == "success"


@needs_helper
def test_state_directory_read_only(real):
    with tmpfs(real.world.root / "ro-state", "mode=0700,size=64k") as d:
        real.restart_service()            # one that sees the tmpfs
        svc = real.stack(state=d)
        first_match(real, svc)
        subprocess.run(["mount", "-o", "remount,ro", str(d)], check=True)
        mark = real.bed.mark()
        r = real.attempt("state directory read-only", svc)
        check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", "Read-only file system")
        assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"]


@needs_helper
def test_state_directory_full(real):
    """Nothing can be written, so no try can be counted: none may start (a try counted
    only afterwards would give one uncounted finger per prompt, and a match would pass)."""
    with tmpfs(real.world.root / "full-state", "mode=0700,size=16k") as d:
        real.restart_service()            # one that sees the tmpfs
        svc = real.stack(state=d)
        first_match(real, svc)
        with contextlib.suppress(OSError):
            with open(d / "filler", "wb") as f:
                f.write(b"\0" * (1 << 20))
        mark = real.bed.mark()
        r = real.attempt("state directory full", svc)
        check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", "No space left on device")
        assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"]
        assert ["PAM_TEXT_INFO", RECOGNIZED] not in r.messages


def good_state(real, svc):
    """The state file as the helper writes it after a match."""
    first_match(real, svc)
    return (real.state / f"{USER}.state").read_bytes()


STATE_FAULTS = {
    "corrupt": ("is corrupt", lambda p, good, root: p.write_bytes(b"not a state file\n")),
    "truncated": ("is corrupt", lambda p, good, root: p.write_bytes(good[:len(good) // 2])),
    "symlink": ("is a symlink",
                lambda p, good, root: (p.unlink(), os.symlink(root / "elsewhere", p))),
    "owned by another user": ("owned by uid 65534",
                              lambda p, good, root: os.chown(p, 65534, 65534)),
}


@needs_helper
@pytest.mark.parametrize("kind", list(STATE_FAULTS))
def test_damaged_state_file(real, kind):
    """Damaged state never unlocks: the password first, then the file is written afresh
    (the damaged one kept aside; a symlink's target never touched)."""
    svc = real.stack(authsucc=True)
    good = good_state(real, svc)
    elsewhere = real.world.root / "elsewhere"
    elsewhere.write_bytes(good)
    os.chmod(elsewhere, 0o600)
    path = real.state / f"{USER}.state"
    cause, spoil = STATE_FAULTS[kind]
    spoil(path, good, real.world.root)
    mark = real.bed.mark()
    r = real.attempt(f"state file {kind}", svc)
    check(r, "biometryLockout", "PAM_AUTHINFO_UNAVAIL", cause)
    assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"]
    assert "PAM_ERROR_MSG" in [style for style, _ in r.messages]  # the user is told
    # The account line after the password rewrote it: a plain root file again.
    assert outcomes(r.logs)[-1]["result"] == "success"
    st = path.lstat()
    assert path.is_file() and not path.is_symlink() and st.st_uid == 0
    assert elsewhere.read_bytes() == good
    if kind != "symlink":
        assert (real.state / f"{USER}.state.damaged").exists()
    real.match_works(svc)


# --- options -----------------------------------------------------------------------------

class HelperLog:
    """The helper's syslog lines: the service of ``real`` runs in a mount namespace whose
    /dev/log is the test's socket (servicebed.namespace_prefix), and its helpers with it,
    so nothing on the machine changes."""

    def __init__(self, real):
        self.syslog = real.syslog
        self.mark = real.syslog.mark()

    @property
    def lines(self):
        return self.syslog.since(self.mark, "localauth-helper")

    def wait_for(self, text, timeout=5):
        found = self.syslog.wait_for(lambda ident, m: ident == "localauth-helper" and text in m,
                                     timeout=timeout, since=self.mark)
        return found is not None


@pytest.fixture
def helper_log(real):
    return HelperLog(real)


@needs_helper
def test_malformed_module_arguments(real, helper_log):
    """Bad values are logged and the defaults kept: three tries, not `zero`."""
    svc = real.stack("max_tries=zero", "bus_timeout=-1", "no_such_option=1",
                     "state_dir=relative/path", "helper_timeout=soon", "debug=perhaps")
    r = no_match(real, svc, "malformed module arguments", n=3)
    check(r, "authenticationFailed", "PAM_AUTH_ERR", "3 failed matches")
    assert any("helper_timeout must be a number of seconds from 1 to 3600; keeping 120"
               in l.message for l in r.logs)
    for text in ("`max_tries` must be a whole number from 1 to 10, not `zero`",
                 "`bus_timeout` must be a number from 0.1 to 30, not `-1`",
                 "unknown option `no_such_option`",
                 "`state_dir` must be an absolute path, not `relative/path`"):
        assert helper_log.wait_for(text), (text, helper_log.lines)


BAD_CONFIG = """# localauth.conf with mistakes
max_tries = 99
lockout_threshold = 0
bus_timeout = fast
this line has no equals sign
policy = sometimes
helper = /tmp/elsewhere
"""


@needs_helper
def test_config_file_with_bad_values(real, helper_log):
    conf = real.world.root / "bad.conf"
    conf.write_text(BAD_CONFIG)
    os.chmod(conf, 0o644)
    svc = real.stack(f"config={conf}")
    r = no_match(real, svc, "config file with bad values", n=3)
    check(r, "authenticationFailed", "PAM_AUTH_ERR", "3 failed matches")
    for text in (f"{conf}:2: `max_tries` must be a whole number from 1 to 10, not `99`",
                 f"{conf}:3: `lockout_threshold` must be a whole number from 1 to 100",
                 f"{conf}:4: `bus_timeout` must be",
                 f"{conf}:5: expected `key = value`",
                 f"{conf}:6: `policy` must be owner or biometrics",
                 f"{conf}:7: `helper` is a module argument only"):
        assert helper_log.wait_for(text), (text, helper_log.lines)


def _untrusted(root: Path, how: str) -> tuple:
    """A site configuration (max_tries = 1) made untrustworthy in one way: the path to
    give as config=, and what the log must say of it."""
    conf = root / "site.conf"
    conf.write_text("max_tries = 1\n")
    os.chmod(conf, 0o644)
    drop = root / "site.conf.d"
    if how == "group-writable":      # config management deploying it 0664
        os.chmod(conf, 0o664)
        return conf, f"{conf} has mode 0664: its group can write it"
    if how == "symlink":
        link = root / "linked.conf"
        link.symlink_to(conf)
        return link, f"{link} is a symlink"
    if how == "not root's":
        os.chown(conf, 65534, 65534)
        return conf, f"{conf} is owned by uid 65534, not root"
    drop.mkdir(mode=0o755)
    (drop / "10-site.conf").write_text("lockout_threshold = 2\n")
    if how == "drop-in world-writable":
        os.chmod(drop / "10-site.conf", 0o646)
        return conf, f"{drop}/10-site.conf has mode 0646: every user can write it"
    os.chmod(drop / "10-site.conf", 0o644)
    os.chmod(drop, 0o775)            # how == "drop-in directory group-writable"
    return conf, f"{drop} has mode 0775: its group can write it"


@needs_helper
@pytest.mark.parametrize("how", ["group-writable", "symlink", "not root's", "drop-in world-writable",
                                 "drop-in directory group-writable"])
def test_a_configuration_that_cannot_be_trusted_means_no_finger(real, helper_log, how):
    # The site's policy could not be read: its defaults are no stand-in (three tries where
    # the site said one). No scan at all, the reason in the message and the log, and the
    # password works.
    conf, why = _untrusted(real.world.root, how)
    svc = real.stack(f"config={conf}", authsucc=True)
    mark = real.bed.mark()
    r = real.attempt(f"configuration {how}", svc)
    check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", f"the configuration cannot be trusted: {why}")
    assert outcomes(r.logs)[0]["reason"] == "config-untrusted", outcomes(r.logs)
    assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"], "a scan started"
    shown = [text for _, text in r.messages]
    assert any(text.startswith("Fingerprint sign-in is off: its configuration file cannot be trusted")
               for text in shown), shown
    assert helper_log.wait_for(f"{why}: not read; fingerprint sign-in is off until it is fixed"), helper_log.lines
    # Made trustworthy again, the finger is back.
    for path in (conf, conf.with_name(conf.name + ".d")):
        if path.is_symlink():
            path.unlink()
            (path.parent / "site.conf").rename(path)
        elif path.exists():
            os.chown(path, 0, 0)
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
            for f in path.iterdir() if path.is_dir() else ():
                os.chmod(f, 0o644)
    real.match_works(real.stack(f"config={conf}"))


# --- user names --------------------------------------------------------------------------

@needs_helper
@pytest.mark.parametrize("name,cause", [
    ("la/fault", "the user name contains `/`"),
    ("..", "the user name contains `..`"),
    ("../la-escape", "the user name contains"),
    ("x" * 300, "the user name is 300 bytes long"),
])
def test_user_name_refused_by_helper(real, name, cause):
    real.world.add_user(name, PASSWORD)
    before = set(real.world.root.rglob("*"))
    mark = real.bed.mark()
    r = real.attempt(f"user name {name[:12]!r}", real.stack(authsucc=True), name)
    check(r, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL", cause)
    assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"]
    created = {p for p in set(real.world.root.rglob("*")) - before}
    assert not [p for p in created if p.suffix in (".state", ".lock")], created


@needs_helper
def test_user_name_with_newline(real):
    """Cannot travel as a request line: the module does not start the helper; pam_matrix
    (a line-based file) knows no such user, so only the prompt itself is checked."""
    r = real.attempt("user name with a newline", real.stack(), "la-fault\nmode=authsucc")
    check(r, "helperFailure", "PAM_AUTHINFO_UNAVAIL", "`user` is not one line",
          password=False)
    assert prompts(r) == ["Password: "]
    assert r.rv != "PAM_SUCCESS"


# --- where nobody can touch the reader ---------------------------------------------------

@needs_helper
def test_remote_host(real):
    mark = real.bed.mark()
    r = real.attempt("PAM_RHOST set", real.stack(), items={"rhost": "198.51.100.4"})
    check(r, "notInteractive", "PAM_AUTHINFO_UNAVAIL", "remote host 198.51.100.4")
    assert real.bed.events(mark) == []


@needs_helper
def test_no_terminal(real):
    mark = real.bed.mark()
    r = real.attempt("no terminal", real.stack(), env=NOBODY)
    check(r, "notInteractive", "PAM_AUTHINFO_UNAVAIL", "no terminal")
    assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"]


@needs_helper
def test_pam_silent(real):
    r = no_match(real, real.stack("max_tries=1"), "PAM_SILENT", flags=["PAM_SILENT"])
    check(r, "authenticationFailed", "PAM_AUTH_ERR", "1 failed matches")


@needs_helper
def test_conversation_fails(real):
    """The application's conversation refuses the prompt shown while the reader waits:
    the helper stops, nothing succeeds, and the next transaction's password works."""
    svc = real.stack("prompt=concurrent")
    r = real.attempt("conversation fails", svc, answers=())
    check(r, "appCancel", "PAM_CONV_ERR", "conversation failed", password=False)
    assert r.rv != "PAM_SUCCESS"
    assert real.world.drive(real.stack(), USER, answers=[PASSWORD], env=NOBODY).rv == "PAM_SUCCESS"
