"""Who is at the reader, decided by logind: the real module, helper and fprintd bed, with a
logind that says what each test needs.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_never_remote.py

This machine runs no logind (no systemd as PID 1), which is one of the answers: the
terminal and PAM_RHOST decide alone, and the log says so. The other answers come from a
logind of the test's own, in two halves. sd-login's records: in a private mount namespace, a
directory of the test's is mounted over /run/systemd (`system/`, which tells sd-login that
systemd runs; `sessions/ID`, `users/UID` with what logind would write there), and the driver
moves itself into a cgroup named the way logind names a session's
(`user.slice/user-UID.slice/session-ID.scope`) or a user manager's unit
(`user@UID.service/app.slice/app-….scope`), unique and removed afterwards, which is where
sd-login looks up a process's session. logind's bus API (LockedHint, IdleHint, LidClosed):
logind_bus.LogindBus on the bed's bus. Nothing of the machine's changes. The real logind is
tested in the Debian guest (Tests/vm); these are the rule's edge cases.

The driver runs with the user's real uid (as setuid sudo does): a root caller without a
terminal is taken for a greeter or a lock screen, which the lock and idle rules spare.
"""
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logind_bus import LogindBus  # noqa: E402
from real_helper import (ENROLLED, NOBODY, PASSWORD, PRESENT, Real, check, needs_helper,  # noqa: E402
                         prompts)
from pamenv import PamWorld, outcomes  # noqa: E402
from system import ThrowawayUser  # noqa: E402
from testbed import NewClients  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root (mounts, cgroups, users)")

UNIFIED = Path("/sys/fs/cgroup/unified")    # where this machine keeps the cgroup2 hierarchy
if not UNIFIED.is_dir() or not (UNIFIED / "cgroup.procs").exists():
    UNIFIED = Path("/sys/fs/cgroup")

REMOTE_MESSAGE = "You are also signed in remotely - use your password"


class FakeLogind:
    """/run/systemd as logind would have it, cgroups named like its scopes, and its bus API
    on the bed's bus."""

    def __init__(self, bed, person):
        self.person = person
        self.id = "la" + secrets.token_hex(4)
        self.run = Path(tempfile.mkdtemp(prefix="localauth-logind-"))
        for sub in ("system", "sessions", "seats", "users"):
            (self.run / sub).mkdir()
        self.made = []
        uid = person.uid
        self.scope = self._cgroup(["user.slice", f"user-{uid}.slice", f"session-{self.id}.scope"])
        self.app = self._cgroup(["user.slice", f"user-{uid}.slice", f"user@{uid}.service", "app.slice",
                                 f"app-org.gnome.Terminal-{self.id}.scope"])
        self.bus = LogindBus(bed.address).start()

    def _cgroup(self, parts):
        path = UNIFIED
        for part in parts:
            path = path / part
            if not path.exists():
                path.mkdir()
                self.made.append(path)
        return path

    def session(self, sid=None, uid=None, **fields):
        """sessions/ID for the test's session (or another), for the person unless told."""
        uid = self.person.uid if uid is None else uid
        text = "".join(f"{k}={v}\n" for k, v in {"UID": uid, "USER": self.person.name, "CLASS": "user",
                                                  **fields}.items())
        (self.run / "sessions" / (sid or self.id)).write_text(text)

    def user(self, sessions, display=None):
        """users/UID: the person's sessions, and their display session."""
        fields = {"NAME": self.person.name, "STATE": "active", "SESSIONS": " ".join(sessions)}
        if display:
            fields["DISPLAY"] = display
        (self.run / "users" / str(self.person.uid)).write_text("".join(f"{k}={v}\n" for k, v in fields.items()))

    def prefix(self):
        """Runs the driver with this /run/systemd, in a mount namespace of its own."""
        return ["unshare", "-m", "--propagation", "private", "sh", "-c",
                f"mount --bind {self.run} /run/systemd && exec \"$@\"", "sh"]

    def close(self):
        self.bus.stop()
        for path in reversed(self.made):
            try:
                path.rmdir()
            except OSError:
                pass
        shutil.rmtree(self.run, ignore_errors=True)


@pytest.fixture
def person():
    with ThrowawayUser(prefix="la-nr-") as user:
        yield user


@pytest.fixture
def logind(bed, person):
    fake = FakeLogind(bed, person)
    try:
        yield fake
    finally:
        fake.close()
    assert not any(p.exists() for p in fake.made)


@pytest.fixture
def real(bed, person):
    with PamWorld() as world:
        bed.enroll(person.name, "right-index-finger", ENROLLED)
        r = Real(world, bed)
        world.add_user(person.name, PASSWORD)
        yield r


def attempt(real, logind, where="session", **kw):
    """One transaction as the person's setuid program would run it (real uid the person's),
    from the session's scope, the user manager's app scope, or no cgroup of logind's."""
    cgroup = {"session": logind.scope, "manager": logind.app, None: None}[where]
    kw.setdefault("real_uid", logind.person.uid)
    real.in_namespace(logind.prefix())     # its helpers read this /run/systemd
    return real.attempt("logind answer", real.stack(*kw.pop("args", ())), user=logind.person.name,
                        prefix=logind.prefix(), cgroup=str(cgroup) if cgroup else None, **kw)


@pytest.fixture
def clients(real, logind):
    """New clients of the bed's bus from here on (the helper's connection, if it makes one),
    the service already started where its helpers read logind's records (its own
    connections made before). None started ahead (`--spare no`): a spare readies the bus
    before any request comes (SpareBus), so its join would say nothing of the request; with
    none ahead, a client that joins is the request's own helper. The service's own joins are
    not counted: on a loaded machine its connection made at its start can time out, and it
    connects again at the first request."""
    real.in_namespace(logind.prefix(), more=("--spare", "no"))
    watcher = NewClients(real.bed.address, exclude_pid=real.service.pid)
    yield watcher
    watcher.close()


LOCAL = dict(REMOTE=0, SEAT="seat0", ACTIVE=1, TYPE="x11")


def scans(real, r_fn):
    injection = real.bed.scan_when_ready(ENROLLED)
    r = r_fn()
    assert injection.wait(15) == ["verify-match"]
    assert outcomes(r.logs)[0]["result"] == "success", outcomes(r.logs)
    assert "Password: " not in prompts(r)
    return r


def no_scan(real, r, mark, cause, clients=None, reason=None, result="notInteractive", scanned=False):
    check(r, result, "PAM_AUTHINFO_UNAVAIL", cause)
    if reason is not None:
        assert outcomes(r.logs)[0]["reason"] == reason, outcomes(r.logs)
    if not scanned:
        assert not [e for e in real.bed.events(mark) if e.name == "VerifyFingerSelected"]
    if clients is not None:
        # Not even a connection: refused on sd-login's records alone, nothing is asked on a bus.
        assert clients.times == [], "the helper connected to the bus for a session that gets no scan"


# --- the session that vouches -----------------------------------------------------------

@needs_helper
def test_a_local_active_session_on_a_seat_is_asked_for_the_finger(real, logind, clients):
    logind.session(**LOCAL)
    scans(real, lambda: attempt(real, logind))
    assert clients.times, "the watcher saw no client join: the refused cases would prove nothing"


@needs_helper
def test_a_desktop_terminal_in_the_user_manager_is_vouched_for_by_the_display_session(real, logind):
    """GNOME Terminal's and Konsole's shells run in user@UID.service/app.slice: in no session."""
    logind.session(**LOCAL)
    logind.user([logind.id], display=logind.id)
    scans(real, lambda: attempt(real, logind, where="manager"))


@needs_helper
def test_a_user_manager_whose_user_has_no_display_session_is_not_asked(real, logind, clients):
    """`systemd-run --user --pty sudo …` typed over SSH, when nobody is signed in at the seat."""
    logind.user([])
    mark = real.bed.mark()
    no_scan(real, attempt(real, logind, where="manager"), mark, "has no display session", clients,
            reason="no-session")


@needs_helper
def test_a_caller_in_no_session_is_not_asked(real, logind, clients):
    """A service, a cron job: in no session and in no user manager."""
    logind.session(**LOCAL)
    mark = real.bed.mark()
    no_scan(real, attempt(real, logind, where=None, env=NOBODY), mark, "in no login session", clients,
            reason="no-session")


@pytest.mark.parametrize("fields,cause,reason", [
    (dict(REMOTE=1, SEAT="seat0", ACTIVE=1), "is remote", "remote"),
    (dict(REMOTE=1, ACTIVE=1), "is remote", "remote"),
    (dict(REMOTE=0, SEAT="seat0", ACTIVE=1, REMOTE_HOST="127.0.0.1"), "is remote (from 127.0.0.1)", "remote"),
    (dict(REMOTE=0, ACTIVE=1), "is on no seat", "not-active"),
    (dict(REMOTE=0, SEAT="seat0", ACTIVE=0), "is not the active one on seat0", "not-active"),
    (dict(SEAT="seat0", ACTIVE=1), "could not say whether", "remote"),     # REMOTE missing
    (None, "could not say whether", "remote"),                           # no session file at all
])
@needs_helper
def test_sessions_that_are_remote_or_not_in_front_of_the_reader_are_not_asked(
        real, logind, fields, cause, reason, clients):
    if fields is not None:
        logind.session(**fields)
    mark = real.bed.mark()
    no_scan(real, attempt(real, logind), mark, cause, clients, reason=reason)


@needs_helper
def test_another_users_session_does_not_vouch_for_this_user(real, logind, clients):
    """`su bob` (or polkit's agent helper for bob) run in alice's session at the seat."""
    logind.session(uid=logind.person.uid + 1, **LOCAL)
    mark = real.bed.mark()
    no_scan(real, attempt(real, logind), mark, "not to the user authenticated", clients, reason="other-user")


# --- logind's bus: locked, idle, the lid ------------------------------------------------

@pytest.mark.parametrize("hint,reason", [("LockedHint", "session-locked"), ("IdleHint", "session-idle")])
@needs_helper
def test_a_locked_or_idle_session_is_not_asked(real, logind, hint, reason):
    logind.session(**LOCAL)
    logind.bus.set_hint(logind.id, hint, True)
    mark = real.bed.mark()
    no_scan(real, attempt(real, logind), mark, "is " + ("locked" if hint == "LockedHint" else "idle"),
            reason=reason)
    # Unlocked again, the finger is back.
    logind.bus.set_hint(logind.id, hint, False)
    scans(real, lambda: attempt(real, logind))


@needs_helper
def test_the_lock_screen_of_root_is_asked_on_a_locked_session(real, logind):
    """GDM's worker (root, no terminal) unlocks a locked session: that is what it is for."""
    logind.session(**LOCAL)
    logind.bus.set_hint(logind.id, "LockedHint", True)
    scans(real, lambda: attempt(real, logind, real_uid=None))


@needs_helper
def test_locking_the_session_while_the_reader_waits_ends_the_wait(real, logind):
    """The owner walks away and locks: a touch at the lock screen must not reach this sudo."""
    logind.session(**LOCAL)
    mark = real.bed.mark()
    real.in_namespace(logind.prefix())
    future = real.in_background("lock while waiting", real.stack(), user=logind.person.name,
                                prefix=logind.prefix(), cgroup=str(logind.scope), real_uid=logind.person.uid)
    assert real.bed.wait_finger_needed(15), "the reader never waited"
    logind.bus.set_hint(logind.id, "LockedHint", True)
    r = future.result(60)
    no_scan(real, r, mark, "the session was locked", reason="session-locked", result="systemCancel",
            scanned=True)
    # Given back: a wait the lock ended is no failed match.
    assert real.bed.wait_finger_needed(5, value=False)


@needs_helper
def test_a_closed_lid_is_the_password_unless_the_reader_is_elsewhere(real, logind):
    logind.session(**LOCAL)
    logind.bus.set_lid(True)
    mark = real.bed.mark()
    no_scan(real, attempt(real, logind), mark, "the lid is closed", reason="lid-closed",
            result="biometryNotAvailable")
    scans(real, lambda: attempt(real, logind, args=["lid_closed=scan"]))


@needs_helper
def test_a_logind_that_does_not_answer_is_no_scan_within_the_bus_timeout(real, logind):
    logind.session(**LOCAL)
    logind.bus.freeze()
    mark = real.bed.mark()
    r = attempt(real, logind, args=["bus_timeout=0.5"])
    # The lid is asked first, with the session's hints: the first answer missing decides.
    no_scan(real, r, mark, "no reply within the bus timeout", reason="lid-closed", result="biometryNotAvailable")
    first_prompt = next(t for (style, _), t in zip(r.messages, r.times["messages"]) if style.startswith("PAM_PROMPT"))
    # The bound, not D-Bus's 25 s default (with room for a slow machine).
    assert first_prompt - r.times["start"] < 10


# --- also signed in remotely ------------------------------------------------------------

@pytest.mark.parametrize("remote", [
    dict(REMOTE=1, REMOTE_HOST="192.0.2.7", TYPE="tty"),
    dict(REMOTE=0, REMOTE_HOST="127.0.0.1", TYPE="tty"),   # ssh over a loopback tunnel
    dict(REMOTE=0, TYPE="tty", SERVICE="sshd"),              # seatless: someone elsewhere
])
@needs_helper
def test_a_remote_login_of_the_same_user_stops_the_finger_for_callers_it_could_drive(real, logind, clients,
                                                                                      remote):
    """tmux or screen started at the seat and typed into over SSH: the caller's session is the
    local one. The person at the machine is told why."""
    logind.session(**LOCAL)
    ssh = "la" + secrets.token_hex(4)
    logind.session(sid=ssh, ACTIVE=0, **remote)
    logind.user([logind.id, ssh], display=logind.id)
    mark = real.bed.mark()
    for where in ("session", "manager"):
        r = attempt(real, logind, where=where)
        no_scan(real, r, mark, f"remote logind session {ssh}", clients, reason="remote-session-open")
        assert ["PAM_ERROR_MSG", REMOTE_MESSAGE] in r.messages, r.messages


@needs_helper
def test_root_s_own_caller_is_not_stopped_by_a_remote_login(real, logind):
    """The lock screen or a greeter: no remote person can type into it."""
    logind.session(**LOCAL)
    ssh = "la" + secrets.token_hex(4)
    logind.session(sid=ssh, REMOTE=1, ACTIVE=0, TYPE="tty")
    logind.user([logind.id, ssh], display=logind.id)
    scans(real, lambda: attempt(real, logind, real_uid=None))


@needs_helper
def test_a_background_session_of_the_same_user_is_not_a_remote_one(real, logind):
    logind.session(**LOCAL)
    cron = "la" + secrets.token_hex(4)
    logind.session(sid=cron, REMOTE=0, ACTIVE=0, CLASS="background")
    logind.user([logind.id, cron], display=logind.id)
    scans(real, lambda: attempt(real, logind))


# --- no logind --------------------------------------------------------------------------

@needs_helper
def test_without_logind_the_terminal_decides_and_the_log_says_so(real, person):
    """This machine's own answer: no logind. A caller that names a display is asked."""
    assert not Path("/run/systemd/system").exists(), "logind runs here: nothing to show"
    mark = real.syslog.mark()          # the service's and its helpers' lines
    injection = real.bed.scan_when_ready(ENROLLED)
    r = real.attempt("no logind", real.stack(), user=person.name, env=PRESENT)
    assert injection.wait(15) == ["verify-match"]
    assert outcomes(r.logs)[0]["result"] == "success"
    assert real.syslog.wait_for(lambda ident, m: ident == "localauth-helper"
                                and "logind is not running" in m, since=mark)


@needs_helper
def test_a_session_the_users_record_still_names_but_logind_dropped_is_not_a_remote_one(real, logind):
    """logind rewrites a user's record only at the user's next change: after an SSH login
    ended, its id can stay in SESSIONS= with no record of its own (seen on systemd 252)."""
    logind.session(**LOCAL)
    logind.user([logind.id, "la" + secrets.token_hex(4)], display=logind.id)
    scans(real, lambda: attempt(real, logind))
