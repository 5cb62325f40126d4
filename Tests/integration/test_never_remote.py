""""Never remote", decided by logind: the real module, helper and fprintd bed, with a
logind that says what each test needs.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_never_remote.py

This machine runs no logind (no systemd as PID 1), which is one of the answers: the
terminal and PAM_RHOST decide alone, and the log says so. The other answers come from a
logind of the test's own: in a private mount namespace, a directory of the test's is
mounted over /run/systemd (`system/`, which tells sd-login that systemd runs, and
`sessions/ID` with what logind would write there), and the driver moves itself into a
cgroup named the way logind names a session's (`user.slice/user-0.slice/session-ID.scope`,
unique, removed afterwards), which is where sd-login looks up a process's session. The
helper, a child of the driver, inherits both; nothing of the machine's changes.
"""
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launcherbed import Syslog, namespace_prefix  # noqa: E402
from test_faults import (ENROLLED, NOBODY, PRESENT, USER, Real, check, needs_helper,  # noqa: E402
                         prompts)
from pamenv import PamWorld, outcomes  # noqa: E402
from testbed import NewClients  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root (mounts, cgroups)")

UNIFIED = Path("/sys/fs/cgroup/unified")    # where this machine keeps the cgroup2 hierarchy
if not UNIFIED.is_dir() or not (UNIFIED / "cgroup.procs").exists():
    UNIFIED = Path("/sys/fs/cgroup")


class FakeLogind:
    """/run/systemd as logind would have it, and a session scope cgroup."""

    def __init__(self):
        self.id = "la" + secrets.token_hex(4)
        self.run = Path(tempfile.mkdtemp(prefix="localauth-logind-"))
        (self.run / "system").mkdir()
        (self.run / "sessions").mkdir()
        (self.run / "seats").mkdir()
        self.made = []
        self.scope = self._cgroup(["user.slice", "user-0.slice", f"session-{self.id}.scope"])

    def _cgroup(self, parts):
        path = UNIFIED
        for part in parts:
            path = path / part
            if not path.exists():
                path.mkdir()
                self.made.append(path)
        return path

    def session(self, **fields):
        text = "".join(f"{k}={v}\n" for k, v in {"UID": 0, "USER": "root", **fields}.items())
        (self.run / "sessions" / self.id).write_text(text)

    def prefix(self):
        """Runs the driver with this /run/systemd, in a mount namespace of its own."""
        return ["unshare", "-m", "--propagation", "private", "sh", "-c",
                f"mount --bind {self.run} /run/systemd && exec \"$@\"", "sh"]

    def close(self):
        for path in reversed(self.made):
            try:
                path.rmdir()
            except OSError:
                pass
        shutil.rmtree(self.run, ignore_errors=True)


@pytest.fixture
def logind():
    fake = FakeLogind()
    try:
        yield fake
    finally:
        fake.close()
    assert not any(p.exists() for p in fake.made)


@pytest.fixture
def real(bed):
    with PamWorld() as world:
        bed.enroll(USER, "right-index-finger", ENROLLED)
        yield Real(world, bed)


def attempt(real, logind, in_session=True, **kw):
    return real.attempt("logind answer", real.stack(), prefix=logind.prefix(),
                        cgroup=str(logind.scope) if in_session else None, **kw)


@pytest.fixture
def clients(real):
    """New clients of the bed's bus from here on (the helper's connection, if it makes one)."""
    watcher = NewClients(real.bed.address)
    yield watcher
    watcher.close()


def no_scan(real, r, mark, cause, clients):
    check(r, "notInteractive", "PAM_AUTHINFO_UNAVAIL", cause)
    assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"]
    # Not even a connection: the bus start-up begins only once someone can be at the reader.
    assert clients.times == [], "the helper connected to the bus for a session that gets no scan"


@needs_helper
def test_a_local_active_session_on_a_seat_is_asked_for_the_finger(real, logind, clients):
    logind.session(REMOTE=0, SEAT="seat0", ACTIVE=1, TYPE="x11")
    injection = real.bed.scan_when_ready(ENROLLED)
    r = attempt(real, logind)
    assert injection.wait(15) == ["verify-match"]
    assert outcomes(r.logs)[0]["result"] == "success"
    assert "Password: " not in prompts(r)
    assert clients.times, "the watcher saw no client join: the refused cases would prove nothing"


@needs_helper
def test_a_caller_in_no_session_is_not_asked(real, logind, clients):
    """`systemd-run --user --pty sudo ...` from an SSH login, a service, a cron job."""
    logind.session(REMOTE=0, SEAT="seat0", ACTIVE=1)
    mark = real.bed.mark()
    # Without a display: a root caller with no terminal and a display is taken for a login
    # manager's worker, judged by seat0's active session (test_stock_stacks.py).
    no_scan(real, attempt(real, logind, in_session=False, env=NOBODY), mark,
            "in no login session", clients)


@pytest.mark.parametrize("fields,cause", [
    (dict(REMOTE=1, SEAT="seat0", ACTIVE=1), "remote logind session"),
    (dict(REMOTE=1, ACTIVE=1), "remote logind session"),
    (dict(REMOTE=0, ACTIVE=1), "is on no seat"),
    (dict(REMOTE=0, SEAT="seat0", ACTIVE=0), "is not the active one on seat0"),
    (dict(SEAT="seat0", ACTIVE=1), ""),     # REMOTE missing: logind cannot tell
    (None, "could not say whether session"),  # no session file at all
])
@needs_helper
def test_sessions_that_are_remote_or_not_in_front_of_the_reader_are_not_asked(
        real, logind, fields, cause, clients):
    if fields is not None:
        logind.session(**fields)
    mark = real.bed.mark()
    no_scan(real, attempt(real, logind), mark, cause, clients)


@needs_helper
def test_without_logind_the_terminal_decides_and_the_log_says_so(real):
    """This machine's own answer: no logind. A caller that names a display is asked."""
    assert not Path("/run/systemd/system").exists(), "logind runs here: nothing to show"
    syslog = Syslog()
    try:
        injection = real.bed.scan_when_ready(ENROLLED)
        r = real.attempt("no logind", real.stack(), env=PRESENT, prefix=namespace_prefix(syslog))
        assert injection.wait(15) == ["verify-match"]
        assert outcomes(r.logs)[0]["result"] == "success"
        assert syslog.wait_for(lambda ident, m: ident == "localauth-helper"
                               and "logind is not running" in m)
    finally:
        syslog.close()
