"""The example application (Examples/FingerprintSwitch): the seeds' settings switch (seed
004) and changed-fingers check (seed 003), run as an ordinary user against the real fprintd,
the virtual reader and the product installed with a localauthd of the test's own, which
the programs reach through LOCALAUTH_SERVICE (appbed.AppWorld).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_app_example.py
"""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from appbed import ENROLLED, OTHER, REPO, app_binary, app_world  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


@pytest.fixture(scope="module")
def example():
    return app_binary("fingerprint-switch", REPO / "Examples" / "FingerprintSwitch")


@pytest.fixture
def world(inst, bed, syslog, example):
    with app_world(inst, bed, syslog, example, "la-ex-") as w:
        settings = w.dir / "settings"
        settings.mkdir()
        os.chown(settings, w.user.uid, w.user.gid)
        w.settings = str(settings / "fingerprint-switch.json")
        yield w


def step(world, command, **kw):
    return world.run(command, "--settings", world.settings, **kw)


def test_the_switch_needs_a_finger_and_notices_a_changed_set(world):
    on = step(world, "on", fingers=[ENROLLED])
    assert on.status == 0 and "Fingerprint login is on." in on.output, on.output
    status = step(world, "status")
    assert "fingerprint login: on" in status.output and "enrolled fingers: unchanged" in status.output
    login = step(world, "login", fingers=[ENROLLED])
    assert login.status == 0 and "Signed in with your fingerprint." in login.output, login.output
    # Another finger enrolled: the stored domain state no longer matches (seed 003).
    world.bed.enroll(world.user.name, "left-thumb", "f2")
    changed = step(world, "status")
    assert "enrolled fingers: changed since it was turned on" in changed.output, changed.output
    refused = step(world, "login")
    assert refused.status == 1 and "fingerprint login is off until you turn it on again" in refused.output
    assert refused.verify_starts == []
    assert "fingerprint login: off" in step(world, "status").output


def test_a_wrong_finger_leaves_the_switch_off(world):
    on = step(world, "on", fingers=[OTHER] * 3)
    assert on.status == 1 and "Fingerprint not recognized: fingerprint login stays off." in on.output
    assert "fingerprint login: off" in step(world, "status").output
    assert world.state_values()["failures"] == "3"


def test_after_a_lockout_the_password_unlocks_and_the_finger_turns_it_on(world):
    world.configure(lockout_threshold="1")
    locked = step(world, "on", fingers=[OTHER], password="not-the-password")   # locked out at once
    assert locked.status == 1 and "Password not accepted" in locked.output, locked.output
    assert world.state_values()["failures"] == "1"
    on = step(world, "on", fingers=[ENROLLED], password=world.user.password)
    assert "Fingerprints are locked: enter your password to unlock them." in on.output, on.output
    assert "Password accepted." in on.output and "Fingerprint login is on." in on.output
    assert on.status == 0
    assert world.state_values()["failures"] == "0"


# --- the seeds' own code (Tests/SeedPort), as ported, run by the same user -----------------

@pytest.fixture(scope="module")
def seed_port():
    return app_binary("seed-port", REPO / "Tests" / "SeedPort")


@pytest.fixture
def seeds(inst, bed, syslog, seed_port):
    with app_world(inst, bed, syslog, seed_port, "la-seed-", home=True) as w:   # seed 004's UserDefaults
        yield w


def test_seed_004_switch_turns_on_with_a_finger_and_the_login_screen_signs_in(seeds):
    on = seeds.run("004-on", "4", fingers=[ENROLLED], env=seeds.env)
    assert "打開成功" in on.output and "switch: on" in on.output, on.output
    login = seeds.run("004-login", "4", fingers=[ENROLLED], env=seeds.env)
    assert "logged in" in login.output, login.output


def test_seed_004_after_a_lockout_asks_for_the_password_as_on_ios(seeds):
    seeds.configure(lockout_threshold="1")
    run = seeds.run("004-on", "6", fingers=[OTHER, ENROLLED], password=seeds.user.password, env=seeds.env)
    # "Biometry is locked out." contains "Biometry is": the seed asks for the password
    # (deviceOwnerAuthentication), then turns the switch on with the finger.
    assert "密碼校驗成功" in run.output and "打開成功" in run.output, run.output
    assert seeds.state_values()["failures"] == "0"


def test_seed_001_delegate_hears_each_outcome(seeds):
    ok = seeds.run("001", "3", fingers=[ENROLLED])
    assert "温馨提示: 验证成功！" in ok.output, ok.output
    failed = seeds.run("001", "3", fingers=[OTHER] * 3)
    assert "温馨提示: 验证失败！" in failed.output, failed.output


def test_seed_003_notices_a_changed_set_of_fingers(seeds):
    same = seeds.run("003", "1")
    assert "stored: true" in same.output and "changed: false" in same.output, same.output


# --- the second port (Tests/SecondPort): an iOS app's test seam, kLAError codes and the
# "did the fingers change?" check, as written for Apple's platforms ---------------------------

@pytest.fixture(scope="module")
def second_port():
    return app_binary("second-port", REPO / "Tests" / "SecondPort")


@pytest.fixture
def second(inst, bed, syslog, second_port):
    with app_world(inst, bed, syslog, second_port, "la-2nd-", home=True) as w:
        yield w


def test_second_port_runs_its_own_tests_through_the_seam(second):
    run = second.run("selftest", env=second.env)
    assert run.status == 0 and "FAILED" not in run.output, run.output
    assert run.output.count("ok: ") == 6, run.output


def test_second_port_notices_an_added_finger_as_on_apple(second):
    # A first match: the system now trusts this set of fingers.
    assert "unlocked" in second.run("unlock", "20", fingers=[ENROLLED], env=second.env).output
    assert "remembered: true" in second.run("remember", env=second.env).output
    assert "changed: false" in second.run("changed", env=second.env).output
    second.bed.enroll(second.user.name, "left-thumb", "f2")
    # Apple's preflight still succeeds after a finger is added and gives the new set's
    # domain state: the comparison sees the change (before, it failed and said "not changed").
    changed = second.run("changed", env=second.env)
    assert "changed: true" in changed.output, changed.output
    assert changed.verify_starts == []
    # The finger itself is refused until the password (the system's rule for a set that
    # changed after it was trusted).
    refused = second.run("unlock", "10", env=second.env)
    assert "not unlocked: notAvailable" in refused.output and refused.verify_starts == [], refused.output


def test_second_port_unlocks_with_the_finger_and_maps_three_wrong_ones(second):
    ok = second.run("unlock", "20", fingers=[ENROLLED], env=second.env)
    assert "unlocked" in ok.output and "not unlocked" not in ok.output, ok.output
    failed = second.run("unlock", "20", fingers=[OTHER] * 3, env=second.env)
    assert "not unlocked: failed" in failed.output, failed.output
