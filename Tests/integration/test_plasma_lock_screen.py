"""Plasma's lock screen: its installed locker scans while its session is locked, its password
stack `kde` stands aside, and `kde-fingerprint`'s answers are shaped for its worker
(PresenceRule's screen locker, ScreenLockerAnswers).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_plasma_lock_screen.py

kscreenlocker calls PAM as the user, with no terminal and no PAM_TTY, from its greeter
(Plasma 6.3) or a worker per service (6.4 and later), both under kwin in the user's manager.
Here the locker is pamtester, copied by root as `kscreenlocker_worker` or
`kscreenlocker_greet` into a root's directory (what an installed program is: a root's
file in root's directories), run through setpriv as a throwaway user with no terminal,
under pam_wrapper with the services `kde` and `kde-fingerprint` of the test's world, in a
cgroup named like the user manager's or the session's (test_never_remote.FakeLogind: sd-login's
records in the service's mount namespace, logind's bus hints on the bed's bus). The real
localauthd, helper and fprintd with the virtual reader answer. The real Plasma is the VM
tier's (Tests/vm/test_plasma.py).
"""
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installations import service_inst  # noqa: E402,F401  (the inst fixture)
from pamenv import PamWorld, outcomes, parse_logs  # noqa: E402
from real_helper import ENROLLED, needs_helper  # noqa: E402
from servicebed import Service, namespace_prefix  # noqa: E402
from test_never_remote import LOCAL, logind, person  # noqa: E402,F401  (fixtures)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root (mounts, cgroups, users)")

OK = ": successfully authenticated"    # pamtester, by the name it runs as
UNAVAILABLE = "Authentication service cannot retrieve authentication info"


class Program:
    """pamtester under another name in a directory of root's under /tmp (root's, 0755; /tmp
    is sticky), owned by ``owner`` (default root), removed on close."""

    def __init__(self, name, owner=0):
        self.dir = Path(tempfile.mkdtemp(prefix="la-plasma-"))
        self.dir.chmod(0o755)
        self.path = self.dir / name
        shutil.copyfile(shutil.which("pamtester"), self.path)
        os.chown(self.path, owner, owner)
        self.path.chmod(0o755)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def program():
    made = []

    def make(name="kscreenlocker_worker", owner=0):
        made.append(Program(name, owner))
        return made[-1].path
    yield make
    for p in made:
        p.close()


class Plasma:
    """The fake logind with the person's session local, active, locked and idle; their
    stacks `kde-fingerprint` (pam.d/kde-fingerprint's line) and `kde` (common-auth with the
    profiles: pam_unix, whose password the authsucc line checks) under pam_wrapper, with the installation's module
    (which names the installation's socket: a caller that is not root names none); the
    installation's localauthd in the fake logind's mount namespace; root's configuration."""

    def __init__(self, inst, bed, syslog, logind, world, state):
        self.inst, self.bed, self.syslog, self.logind, self.world, self.state = inst, bed, syslog, logind, world, state
        self.person = logind.person
        logind.session(**LOCAL)
        logind.user([logind.id], display=logind.id)
        logind.bus.set_hint(logind.id, "LockedHint", True)
        logind.bus.set_hint(logind.id, "IdleHint", True)
        bed.enroll(self.person.name, "right-index-finger", ENROLLED)
        world.service("kde-fingerprint", [f"auth required {inst.module}"])
        # common-auth as pam-auth-update writes it with the profiles.
        world.service("kde", [f"auth [success=2 default=ignore] {inst.module}",
                              "auth [success=1 default=ignore] pam_unix.so",   # the person's own password
                              "auth requisite pam_deny.so",
                              "auth required pam_permit.so",
                              f"auth optional {inst.module} authsucc"])
        self.configure()
        self.service = Service(inst, syslog, socket_path=inst.service_socket,
                               prefix=[*logind.prefix(), *namespace_prefix(syslog)])

    def configure(self, **extra):
        self.inst.write_bed_config(self.bed, self.state, **extra)

    def close(self):
        self.service.stop()

    def run(self, locker, service, password=None, where="manager"):
        """``locker`` (a program's path) as the person, no terminal, in ``where``'s cgroup;
        ``password`` on its stdin. (exit status, output, module outcome lines, helper lines)."""
        cgroup = {"session": self.logind.scope, "manager": self.logind.app}[where]
        mark = self.syslog.mark()
        argv = ["sh", "-c", 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"', "sh", str(cgroup),
                "setpriv", f"--reuid={self.person.uid}", f"--regid={self.person.gid}", "--clear-groups",
                *self.world.command([str(locker), service, self.person.name, "authenticate"],
                                    # kwin hands its greeter a socket, naming no display
                                    env={"WAYLAND_SOCKET": "9", "WAYLAND_DISPLAY": "", "DISPLAY": ""})]
        p = subprocess.run(argv, input=(password + "\n") if password else "", capture_output=True, text=True,
                           timeout=90, start_new_session=True, env=self.world._base_env())
        self.syslog._sync()
        return p.returncode, p.stdout + p.stderr, outcomes(parse_logs(p.stderr)), \
            self.syslog.since(mark, "localauth-helper")


@pytest.fixture
def plasma(inst, bed, syslog, logind):
    state = Path(tempfile.mkdtemp(prefix="localauth-plasma-state-"))
    state.chmod(0o700)
    with PamWorld() as world:
        p = Plasma(inst, bed, syslog, logind, world, state)
        try:
            yield p
        finally:
            p.close()
            shutil.rmtree(state, ignore_errors=True)


def finished(helper, service):
    """The helper's last line for ``service``."""
    ours = [m for m in helper if f"service={service} result=" in m]
    assert ours, helper
    return ours[-1]


@pytest.mark.parametrize("name,where", [("kscreenlocker_worker", "manager"), ("kscreenlocker_greet", "session")])
@needs_helper
def test_plasmas_locker_scans_while_its_session_is_locked(plasma, program, name, where):
    injection = plasma.bed.scan_when_ready(ENROLLED)
    status, out, ours, helper = plasma.run(program(name), "kde-fingerprint", where=where)
    assert injection.wait(15) == ["verify-match"]
    assert status == 0 and OK in out, out
    assert "result=success method=fingerprint" in finished(helper, "kde-fingerprint"), helper
    assert any("lockscreen=match" in m for m in helper), helper
    assert ours and ours[0]["pam"] == "PAM_SUCCESS", ours


@pytest.mark.parametrize("name,owner", [("la-not-a-locker", 0), ("kscreenlocker_worker", "person")])
@needs_helper
def test_another_program_of_the_user_gets_no_scan_while_locked(plasma, program, name, owner):
    """Any other program, and a locker's name on a file of the user's own."""
    uid = plasma.person.uid if owner == "person" else 0
    mark = plasma.bed.mark()
    status, out, ours, helper = plasma.run(program(name, owner=uid), "kde-fingerprint")
    assert status != 0 and UNAVAILABLE in out, out
    line = finished(helper, "kde-fingerprint")
    assert "result=notInteractive reason=session-locked" in line, helper
    assert not any("lockscreen=" in m for m in helper), helper
    assert not [e for e in plasma.bed.events(mark) if e.name == "VerifyFingerSelected"]


@needs_helper
def test_a_remote_session_open_stops_the_locker_at_once(plasma, program):
    remote = plasma.logind.id + "r"
    plasma.logind.session(sid=remote, REMOTE=1, REMOTE_HOST="192.0.2.9", ACTIVE=0)
    plasma.logind.user([plasma.logind.id, remote], display=plasma.logind.id)
    mark = plasma.bed.mark()
    status, out, ours, helper = plasma.run(program(), "kde-fingerprint")
    assert status != 0 and UNAVAILABLE in out, out
    assert "reason=remote-session-open" in finished(helper, "kde-fingerprint"), helper
    assert any("lockscreen=holds" in m for m in helper), helper
    assert not [e for e in plasma.bed.events(mark) if e.name == "VerifyFingerSelected"]


@needs_helper
def test_after_boot_the_finger_holds_until_the_password_typed_in_kde(plasma, program):
    """The first lock after boot: kde-fingerprint refuses at once (unavailable until this lock
    ends); kde stands aside at once and takes the password, which is recorded; at the next
    lock the finger unlocks."""
    plasma.configure(password_after_reboot="yes")
    locker = program()
    mark = plasma.bed.mark()
    status, out, ours, helper = plasma.run(locker, "kde-fingerprint")
    assert status != 0 and UNAVAILABLE in out, out
    assert "result=biometryLockout" in finished(helper, "kde-fingerprint"), helper
    assert any("lockscreen=holds" in m for m in helper), helper
    assert ours and ours[0]["pam"] == "PAM_AUTHINFO_UNAVAIL", ours

    status, out, ours, helper = plasma.run(locker, "kde", password=plasma.person.password)
    assert status == 0 and OK in out, out
    assert "result=notInteractive reason=finger-stack-beside" in finished(helper, "kde"), helper
    assert ours and ours[0]["pam"] == "PAM_AUTHINFO_UNAVAIL", ours
    assert not [e for e in plasma.bed.events(mark) if e.name == "VerifyFingerSelected"]

    injection = plasma.bed.scan_when_ready(ENROLLED)
    status, out, ours, helper = plasma.run(locker, "kde-fingerprint")
    assert injection.wait(15) == ["verify-match"]
    assert status == 0 and OK in out, out


@needs_helper
def test_no_touch_in_time_is_a_failure_the_worker_asks_again_for(plasma, program):
    plasma.configure(scan_timeout="1")
    status, out, ours, helper = plasma.run(program(), "kde-fingerprint")
    assert status != 0 and "Authentication failure" in out, out
    assert "result=authenticationFailed reason=scan-timeout" in finished(helper, "kde-fingerprint"), helper
    assert any("lockscreen=again" in m for m in helper), helper
    assert ours and ours[0]["pam"] == "PAM_AUTH_ERR", ours


@needs_helper
def test_the_password_typed_while_the_reader_waits_is_taken_at_once(plasma, program):
    """Both stacks at once, as kscreenlocker runs them: kde-fingerprint waits for the finger
    while kde, beside it, asks for the password at once and takes it; the reader still waits
    for kde-fingerprint (one claim on it)."""
    locker = program("kscreenlocker_greet")
    pool = concurrent.futures.ThreadPoolExecutor(1)
    finger = pool.submit(plasma.run, locker, "kde-fingerprint")
    pool.shutdown(wait=False)
    try:
        assert plasma.bed.wait_finger_needed(timeout=30), "kde-fingerprint never waited for a finger"
        mark = plasma.bed.mark()
        status, out, ours, helper = plasma.run(locker, "kde", password=plasma.person.password)
        assert status == 0 and OK in out, out
        assert "reason=finger-stack-beside" in finished(helper, "kde"), helper
        assert not [e for e in plasma.bed.events(mark) if e.name == "VerifyFingerSelected"]
        assert plasma.bed.reader.finger_needed(), "the password stack ended the finger stack's scan"
    finally:
        plasma.bed.scan(ENROLLED)
    status, out, ours, helper = finger.result(60)
    assert status == 0 and OK in out, out
