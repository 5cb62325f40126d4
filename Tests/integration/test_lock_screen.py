"""The lock screen wins the reader (LockScreenRule, localauthd's LockScreenTurn).

The person who wakes a locked screen touches the reader. Another scan of the same user
running at that moment (a sudo or an application started while the screen was locked, in a
session whose LockedHint the user's own code cleared) must not take that touch: a
lock-screen-shaped request (root, no controlling terminal, a display: GDM's worker) ends
every other running scan of its user, whose caller gets the password, and while it asks,
another request of that user gets no scan.

localauthd from build/ with --listen (servicebed), the real module under pam_wrapper, the
real helper, the real fprintd with the virtual reader. The sudo-shaped caller is pamtester
on a terminal (root's module, the password prompt after the finger line); the lock screen
is the greeter-shaped driver (pamenv.drive in its own session, PAM_XDISPLAY=:0).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_lock_screen.py
"""
import concurrent.futures
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)
from servicebed import Service, ServiceInstallation  # noqa: E402
from pamenv import PamWorld, outcomes  # noqa: E402
from test_e2e_pam import E2E, ENROLLED, FINGER, PASSWORD, PROMPT_TEXT, USER  # noqa: E402
from appbed import RESULT, app_binary, app_world, parse_result  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

LOCK_SCREEN = {"xdisplay": ":0", "tty": ":0"}
LOCK_CAUSE = "a lock screen of this user asks for the reader"


@pytest.fixture
def e2e(bed, inst):
    bed.enroll(USER, FINGER, ENROLLED)
    with PamWorld() as world:
        yield E2E(bed, world, inst)


@pytest.fixture
def served(e2e, inst, syslog):
    """The e2e world's stacks pointed at a service of the test's own; the user's first
    password given (from then on the finger works)."""
    service = Service(inst, syslog)
    try:
        e2e.args.append(f"service={service.socket}")
        e2e.service = e2e.stack()
        e2e.first_password()
        e2e.lock_screen = e2e.world.service(
            "la-lockscreen", [f"auth required {inst.module} policy=biometrics {' '.join(e2e.args)}"])
        yield e2e, service
    finally:
        service.stop()


def lock_screen_in_background(e2e):
    """GDM's worker: root, its own session (no controlling terminal), a display."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(e2e.world.drive, e2e.lock_screen, USER, items=LOCK_SCREEN, prefix=["setsid"])
    pool.shutdown(wait=False)
    return future


def scanning_again_after(bed, mark):
    """The reader stopped waiting after ``mark``, then waits again (the next scan's)."""
    stopped = bed.wait_event("finger-needed", since=mark, timeout=30, where=lambda e: e.args == (False,))
    bed.wait_event("finger-needed", since=stopped.seq, timeout=30, where=lambda e: e.args == (True,))


def test_a_lock_screen_ends_its_users_running_sudo_scan_and_its_touch_unlocks(served):
    e2e, service = served
    pt = e2e.world.pamtester(e2e.service, USER, operation=("authenticate", "acct_mgmt"))
    try:
        assert e2e.bed.wait_finger_needed(timeout=30), "the sudo-shaped scan never waited for a finger"
        mark = e2e.bed.mark()
        lock = lock_screen_in_background(e2e)
        # sudo's scan ends and its caller gets the password prompt; then the lock screen scans.
        scanning_again_after(e2e.bed, mark)
        pt.expect(PROMPT_TEXT)
        assert e2e.bed.scan(ENROLLED) == "verify-match"
        r = lock.result(60)
        pt.send_secret(PASSWORD)
        res = pt.finish()
    finally:
        pt.kill()
    assert r.rv == "PAM_SUCCESS", r
    assert res.status == 0, res          # the password, never the finger, for the sudo
    service.syslog._sync()
    helper = service.lines("localauth-helper")
    assert any("result=systemCancel" in m and LOCK_CAUSE in m for m in helper), helper
    assert sum("result=success" in m for m in helper) == 1, helper   # the lock screen's alone
    assert any("other running request(s) of that user told to end their scan" in m
               for m in service.lines("localauthd")), service.lines("localauthd")
    assert e2e.state_file()["failures"] == "0"     # the sudo's try was given back


def test_while_its_users_lock_screen_asks_a_sudo_gets_no_scan(served):
    e2e, service = served
    mark = e2e.bed.mark()
    lock = lock_screen_in_background(e2e)
    e2e.bed.wait_event("finger-needed", since=mark, timeout=30, where=lambda e: e.args == (True,))
    after = e2e.bed.mark()
    r = e2e.run(password=PASSWORD)      # no finger line: the password prompt at once
    assert r.status == 0, r
    assert e2e.bed.reader.finger_needed(), "the lock screen's scan was ended"
    assert not [e for e in e2e.bed.events(after) if e.name == "finger-needed"], e2e.bed.events(after)
    assert e2e.bed.scan(ENROLLED) == "verify-match"
    assert lock.result(60).rv == "PAM_SUCCESS"
    service.syslog._sync()
    assert any("result=systemCancel" in m and LOCK_CAUSE in m for m in service.lines("localauth-helper")), \
        service.lines("localauth-helper")



# --- an application's scan: its user is the peer's uid, the lock screen's a name ----------

@pytest.fixture(scope="module")
def app_inst():
    """The product with a service of its own (servicebed), as the app tests use it."""
    with ServiceInstallation() as inst:
        yield inst


@pytest.fixture
def app(app_inst, bed, syslog):
    """la-probe run by a throwaway user through a service of the world's own."""
    with app_world(app_inst, bed, syslog, app_binary("la-probe"), "la-lock-") as world:
        yield world


def test_a_lock_screen_ends_its_users_running_application_scan(app):
    """The application's request names its user by the peer's uid, the lock screen's by
    PAM_USER: the service looks the lock screen's up, and the two meet."""
    world = app
    lock_stack = PamWorld()
    try:
        svc = lock_stack.service("la-lockscreen-app", [
            f"auth required {world.inst.module} policy=biometrics service={world.service.socket}"])
        pt = world.start("eval", "biometrics")
        try:
            assert world.bed.wait_finger_needed(timeout=30), "the application's scan never waited for a finger"
            mark = world.bed.mark()
            pool = concurrent.futures.ThreadPoolExecutor(1)
            lock = pool.submit(lock_stack.drive, svc, world.user.name, items=LOCK_SCREEN, prefix=["setsid"])
            pool.shutdown(wait=False)
            scanning_again_after(world.bed, mark)
            assert world.bed.scan(ENROLLED) == "verify-match"
            r = lock.result(60)
            res = pt.finish(timeout=60)
        finally:
            pt.kill()
    finally:
        lock_stack.close()
    assert r.rv == "PAM_SUCCESS", r
    results = [parse_result(m) for m in RESULT.findall(res.output.replace("\r", ""))]
    assert [(x["success"], x["code"]) for x in results] == [("0", "-4")], res.output   # systemCancel
    world.syslog._sync()
    assert any(i == "localauth-helper" and LOCK_CAUSE in m for i, m in world.syslog.lines), world.syslog.lines
    assert world.state_values()["failures"] == "0"     # the application's try was given back
