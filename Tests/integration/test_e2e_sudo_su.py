"""End to end with the real setuid sudo and su, a throwaway user, the installed module and
helper, and the real fprintd with the virtual reader, driven on a pseudo-terminal.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_e2e_sudo_su.py

sudo: a throwaway user, a PAM service file of its own in /etc/pam.d and a sudoers drop-in
naming it (`pam_service`), all removed afterwards (system.py). su's service name is fixed,
so its stack is bind-mounted over /etc/pam.d/su in a private mount namespace that lives as
long as the su command (system.PamServiceOverlay); the machine's file is never changed.
sudo and su are setuid, so sd-bus would ignore DBUS_SYSTEM_BUS_ADDRESS there: the test bus
is named by the module argument `dbus_address=`. The set-up and the driver: sudo_machine.Machine.

The stack (as pam.d/sudo, with the password module `requisite` so the authsucc line is
reached only after the password succeeded, and `nodelay` so a wrong password costs no
time):

    auth sufficient pam_localauth.so ARGS
    auth requisite  pam_unix.so nodelay
    auth optional   pam_localauth.so authsucc ARGS
"""
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from sudo_machine import Machine  # noqa: E402
from messages import ENROLLED, OTHER, SWIPE, FIRST_USE, LOCKED, TRIES_USED, UNAVAILABLE  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)

NOT_RECOGNIZED = re.compile(r"^Fingerprint not recognized - (\d) tr(y|ies) left$")
SU_PROMPT = re.compile(r"(^|\n)Password: ")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


@pytest.fixture
def machine(bed, inst):
    with Machine(inst, bed) as m:
        yield m
    assert m.left_behind() == []          # no user, group, pam.d or sudoers file remains


def not_recognized(lines):
    return [int(m.group(1)) for m in map(NOT_RECOGNIZED.match, lines) if m]


# --- sudo ------------------------------------------------------------------------------

def test_sudo_first_use_asks_password_then_finger_runs_command(machine):
    r = machine.sudo(answers=[machine.user.password])
    assert r.status == 0
    assert r.screen == [FIRST_USE, f"[sudo] password for {machine.user.name}:", "root"], r.screen
    assert r.scans_started == []
    assert machine.state_file()["failures"] == "0"
    r = machine.sudo([ENROLLED])
    assert r.status == 0
    assert r.screen == [SWIPE, "root"], r.screen
    assert r.prompts == 0 and r.hints


def test_sudo_fingerprint_runs_command_without_password(machine):
    machine.first_password()
    for _ in range(2):
        r = machine.sudo([ENROLLED])
        assert r.status == 0
        assert r.screen == [SWIPE, "root"], r.screen
        assert r.prompts == 0
        assert r.results == ["verify-match"]


def test_sudo_three_wrong_fingers_then_password(machine):
    machine.first_password()
    r = machine.sudo([OTHER] * 3, answers=[machine.user.password])
    assert r.status == 0
    assert r.results == ["verify-no-match"] * 3
    assert r.screen == [SWIPE, "Fingerprint not recognized - 2 tries left",
                        SWIPE, "Fingerprint not recognized - 1 try left",
                        SWIPE, TRIES_USED,
                        f"[sudo] password for {machine.user.name}:", "root"], r.screen
    assert machine.state_file()["failures"] == "0"


def test_sudo_password_retry_does_not_scan_again(machine):
    """sudo runs the whole stack again for each password try, in the same PAM handle."""
    machine.first_password()
    r = machine.sudo([OTHER] * 3, answers=["wrong", machine.user.password])
    assert r.status == 0 and r.screen[-1] == "root", r.screen
    assert len(r.verify_starts) == 3                  # one prompt's tries, no second prompt
    assert "Sorry, try again." in r.screen
    assert r.prompts == 2
    assert machine.state_file()["failures"] == "0"


def test_sudo_wrong_passwords_fail(machine):
    machine.first_password()
    r = machine.sudo([OTHER] * 3, answers=["wrong-1", "wrong-2", "wrong-3"])
    assert r.status != 0
    assert r.screen[-1] == "sudo: 3 incorrect password attempts", r.screen
    assert "root" not in r.screen
    assert machine.state_file()["failures"] == "3"


def test_sudo_five_failures_lock_out_until_the_password(machine):
    machine.first_password()
    r = machine.sudo([OTHER] * 3, interrupt=True)       # gives up at the password prompt
    assert r.status != 0 and "root" not in r.screen
    assert not_recognized(r.screen) == [2, 1] and TRIES_USED in r.screen
    r = machine.sudo([OTHER] * 2, interrupt=True)
    assert r.status != 0
    assert r.screen[:4] == [SWIPE, "Fingerprint not recognized - 1 try left", SWIPE, LOCKED]
    assert machine.state_file()["failures"] == "5"
    r = machine.sudo(answers=[machine.user.password])   # locked: no scan, the password
    assert r.status == 0
    assert r.screen == [LOCKED, f"[sudo] password for {machine.user.name}:", "root"], r.screen
    assert r.scans_started == []
    assert machine.state_file()["failures"] == "0"      # cleared by the authsucc line
    r = machine.sudo([ENROLLED])
    assert r.status == 0 and r.screen == [SWIPE, "root"], r.screen


def test_sudo_pam_rhost_is_still_local(machine):
    """With sudoers' pam_rhost flag sudo names this machine in PAM_RHOST."""
    machine.first_password()
    dropin = machine.enter_context(system.SudoersDropIn(machine.user, machine.service.name,
                                                        defaults=["pam_rhost"]))
    machine.made.append(dropin.path)
    r = machine.sudo([ENROLLED])
    assert r.status == 0 and r.screen == [SWIPE, "root"], r.screen
    assert r.prompts == 0


def test_sudo_chinese_messages(machine):
    env = system.default_env(LANG="zh_CN.UTF-8")
    r = machine.sudo(answers=[machine.user.password], env=env)
    assert r.status == 0 and r.screen[0] == "使用指纹前需要先输入密码", r.screen
    r = machine.sudo([OTHER, ENROLLED], env=env)
    assert r.status == 0
    assert r.screen == ["请在指纹读取器上划动右手食指", "指纹未能识别——还可尝试 2 次",
                        "请在指纹读取器上划动右手食指", "root"], r.screen


# --- su: the target's credentials --------------------------------------------------------

@pytest.fixture
def su_setup(machine):
    overlay = machine.su_overlay()
    runner = machine.enter_context(system.ThrowawayUser())
    machine.made.append(runner.name)
    target = machine.user

    def su(fingers=(), answers=(), interrupt=False):
        return machine.drive(["su", "-", target.name, "-c", "id -un"], runner, SU_PROMPT,
                             target.password, fingers, answers, interrupt,
                             prefix=overlay.prefix)
    yield su, target, runner


def test_su_target_finger_runs_command(su_setup, machine):
    su, target, runner = su_setup
    r = su(answers=[target.password])                 # the target was never seen
    assert r.status == 0
    assert r.screen == [UNAVAILABLE, "Password:", target.name], r.screen
    assert r.scans_started == []
    r = su([ENROLLED])
    assert r.status == 0
    # What the touch approves comes first (TouchPurpose: su's -c command and PAM_USER).
    assert r.screen == [f"Touch the reader to run `id -un` as {target.name}", SWIPE, target.name], r.screen
    assert r.prompts == 0
    assert not (machine.state / f"{runner.name}.state").exists()   # the target's state only


def test_su_three_wrong_fingers_then_password(su_setup, machine):
    su, target, _ = su_setup
    su(answers=[target.password])
    r = su([OTHER] * 3, answers=[target.password])
    assert r.status == 0
    assert not_recognized(r.screen) == [2, 1]
    assert r.screen[-3:] == [TRIES_USED, "Password:", target.name], r.screen
    r = su([OTHER] * 3, answers=["wrong"])
    assert r.status != 0 and target.name not in r.screen
    assert "su: Authentication failure" in r.screen
    assert machine.state_file()["failures"] == "3"


def test_su_five_failures_lock_out(su_setup, machine):
    su, target, _ = su_setup
    su(answers=[target.password])
    r = su([OTHER] * 3, answers=["wrong"])
    assert r.status != 0
    r = su([OTHER] * 2, answers=[target.password])
    assert r.status == 0
    assert r.screen == [f"Touch the reader to run `id -un` as {target.name}",
                        SWIPE, "Fingerprint not recognized - 1 try left", SWIPE, UNAVAILABLE,
                        "Password:", target.name], r.screen
    assert machine.state_file()["failures"] == "0"
    r = su([ENROLLED])
    assert r.status == 0 and r.screen[-1] == target.name


def test_su_tells_another_users_terminal_nothing_of_the_account(su_setup, machine):
    """A user at someone else's unlocked terminal runs `su - target`: whether the target is
    locked out or must enter the password first, they see the same line; the target's own
    sudo says which rule applies."""
    su, target, runner = su_setup
    first = su(answers=["wrong"])                      # never seen: the password first
    assert first.screen[0] == UNAVAILABLE, first.screen
    su(answers=[target.password])
    su([OTHER] * 3, answers=["wrong"])
    su([OTHER] * 2, answers=["wrong"])                 # five: locked out
    assert machine.state_file()["failures"] == "5"
    locked = su(answers=["wrong"])
    assert locked.screen[0] == UNAVAILABLE, locked.screen
    assert not [l for l in first.screen + locked.screen if l in (FIRST_USE, LOCKED)]
    own = machine.sudo(answers=[target.password])      # the owner, at their own sudo
    assert own.screen[0] == LOCKED, own.screen


# --- nothing is left behind ------------------------------------------------------------

def test_everything_is_removed_even_after_an_error(bed, inst):
    made = {}
    with pytest.raises(RuntimeError, match="on purpose"):
        with Machine(inst, bed) as m:
            m.su_overlay()
            made = {"user": m.user.name, "service": m.service.path, "sudoers": m.sudoers.path,
                    "state": m.state}
            assert made["service"].is_file() and made["sudoers"].is_file()
            raise RuntimeError("on purpose")
    assert not system._user_exists(made["user"])
    assert not system._group_exists(made["user"])
    for key in ("service", "sudoers", "state"):
        assert not made[key].exists(), made[key]
    assert [p for p in system.pending_cleanups() if any(str(v) in p for v in made.values())] == []
    assert m.left_behind() == []
