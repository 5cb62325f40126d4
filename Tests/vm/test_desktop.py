"""GNOME 43 on Wayland under GDM 43, with the pam-auth-update profiles enabled (issue 19's
desktop cases). The desktop image (images.py, desktop flavour) boots into graphical.target;
GDM's own fingerprint conversation is off (image/setup.sh; README: with the profiles, gdm-password is
finger-first itself). One boot for the file, in order: the first login (by password), GNOME
Terminal's sudo, GNOME Shell's polkit dialog, the lock screen, then a reboot and the first
login after it. Screens are saved in the run's directory (``LOCALAUTH_VM_SHOTS``, default a
temporary one) and named in a failed assertion.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from desktop import Desktop
from guest import PASSWORDS, PRINTS, Guest
from images import ensure_image
from machine import Machine

# The password's facts leave out how often it was typed: the greeter may end a conversation
# whose keys came before its field, and the login begins again (desktop.Desktop.login).
FIRST_LOGIN = {"finger_offered": False, "scans": [], "done": True, "rc": None,
               "result": "biometryLockout", "pam": "PAM_AUTHINFO_UNAVAIL",
               "keyring_unlocked": True, "fingerprint_conversations": 0}


def by_password(out) -> dict:
    facts = out.facts()
    del facts["passwords_typed"]
    return facts
TOOK_THE_FINGER = {"finger_offered": True, "scans": [PRINTS["alice"]], "passwords_typed": 0,
                   "done": True, "rc": 0, "result": "success", "reason": None,
                   "pam": "PAM_SUCCESS"}


@pytest.fixture(scope="module")
def desktop_machine(deb):
    m = Machine(ensure_image(desktop=True, deb=deb), desktop=True)
    try:
        m.start()
        print(f"desktop guest up after {m.boot_seconds:.0f} s on port {m.port}")
        yield m
    finally:
        m.stop()


@pytest.fixture(scope="module")
def desk(desktop_machine, deb):
    g = Guest(desktop_machine)
    g.prepare(deb, ("alice",))
    shots = Path(os.environ.get("LOCALAUTH_VM_SHOTS") or tempfile.mkdtemp(prefix="la-vm-shots-"))
    d = Desktop(g, shots)
    d.wait_greeter()
    yield d
    g.stop_fingerwatch()


@pytest.fixture(scope="module")
def first_login(desk):
    return desk.login("alice")


@pytest.fixture(scope="module")
def terminal(desk, first_login):
    assert first_login.done, f"alice is not logged in{first_login.evidence()}"
    return desk.open_terminal()


def test_the_first_login_is_by_password_and_unlocks_the_login_keyring(first_login):
    assert by_password(first_login) == {**FIRST_LOGIN, "reason": "never-used"}, first_login.evidence()


def test_sudo_in_gnome_terminal_takes_the_finger(desk, terminal):
    out = desk.run_in_terminal("sudo -k id", ident="sudo", password=PASSWORDS["alice"])
    assert out.line.get("user_unit", "").startswith("vte-spawn-"), \
        f"sudo did not run in a GNOME Terminal shell{out.evidence()}"
    assert out.facts() == TOOK_THE_FINGER, out.evidence()


def test_gnome_shells_polkit_dialog_for_pkexec_takes_the_finger(desk, terminal):
    """GNOME Shell begins its dialog's conversation again once the dialog has loaded its
    user; under TCG a scan may complete the first one before that, and the dialog asks again.
    So: every conversation a finger, none the password, and polkitd's yes."""
    out = desk.run_in_terminal("pkexec id", ident="polkit-agent-helper-1",
                               password=PASSWORDS["alice"])
    firsts = [f for f in out.lines if f["phase"] == "auth" and "authsucc:" not in f["message"]]
    facts = {"finger_offered": out.finger_offered, "passwords_typed": out.passwords,
             "done": out.done, "rc": out.rc,
             "verdicts": sorted({(f.get("result"), f.get("pam")) for f in firsts}),
             "scanned": bool(out.scans), "polkitd_authorized": "successfully authenticated" in out.journal}
    assert facts == {"finger_offered": True, "passwords_typed": 0, "done": True, "rc": 0,
                     "verdicts": [("success", "PAM_SUCCESS")], "scanned": True,
                     "polkitd_authorized": True}, out.evidence()


def test_the_lock_screen_unlocks_with_the_finger(desk, first_login):
    assert first_login.done, f"alice is not logged in{first_login.evidence()}"
    desk.lock()
    out = desk.unlock()
    assert out.facts() == {**TOOK_THE_FINGER, "rc": None}, out.evidence()


def test_after_a_reboot_the_first_login_is_by_password_and_unlocks_the_login_keyring(
        desk, desktop_machine):
    desktop_machine.reboot()
    desk.g.install_tools()
    desk.g.start_fingerwatch()
    desk.wait_greeter()
    out = desk.login("alice")
    assert by_password(out) == {**FIRST_LOGIN, "reason": "reboot"}, out.evidence()
