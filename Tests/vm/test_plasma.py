"""KDE Plasma 6.3 on Wayland under SDDM 0.21 (Debian 13), with the pam-auth-update profiles
enabled: the cases a Plasma user meets. The image is the plasma flavour (images.py: the base
image and image/plasma/packages), booted into graphical.target once for the file, after the
GNOME guest (conftest.py's FILE_ORDER: the two never run side by side). In order: SDDM's
first login (by password, KWallet opened by it), Konsole's sudo, polkit-kde-agent's dialog
for pkexec (by finger; by the password after a finger nobody enrolled), then the lock
screen. Screens are saved in the run's directory (``LOCALAUTH_VM_SHOTS``, default a
temporary one) and named in a failed assertion; the lock screen's and the polkit dialog's
with the finger prompt are kept whatever the verdict.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from guest import PASSWORDS, PRINTS, Guest
from machine import Machine
from plasma import Plasma

GUEST_FLAVOUR = "plasma"
NOBODYS_FINGER = "nobody-rif"       # a finger nobody enrolled: a failed match

TOOK_THE_FINGER = {"finger_offered": True, "scans": [PRINTS["alice"]], "passwords_typed": 0,
                   "done": True, "rc": 0, "result": "success", "reason": None,
                   "pam": "PAM_SUCCESS"}


@pytest.fixture(scope="module")
def plasma_machine(image):
    m = Machine(image, desktop=True)
    try:
        m.start()
        print(f"plasma guest up after {m.boot_seconds:.0f} s on port {m.port}")
        yield m
    finally:
        m.stop()


@pytest.fixture(scope="module")
def plasma(plasma_machine, deb):
    g = Guest(plasma_machine)
    g.prepare(deb, ("alice",))
    shots = Path(os.environ.get("LOCALAUTH_VM_SHOTS") or tempfile.mkdtemp(prefix="la-vm-shots-"))
    p = Plasma(g, shots / "plasma")
    p.configure_user("alice")
    p.wait_greeter()
    yield p
    g.stop_fingerwatch()


@pytest.fixture(scope="module")
def first_login(plasma):
    return plasma.login("alice")


@pytest.fixture(scope="module")
def terminal(plasma, first_login):
    assert first_login.done, f"alice is not logged in{first_login.evidence()}"
    return plasma.open_terminal()


def test_the_first_login_in_sddm_is_by_password_and_opens_kwallet(first_login):
    facts = first_login.facts()
    del facts["passwords_typed"]    # keys before the greeter's field took them are lost
    assert facts == {"finger_offered": False, "scans": [], "done": True, "rc": None,
                     "result": "biometryLockout", "reason": "never-used",
                     "pam": "PAM_AUTHINFO_UNAVAIL", "wallet_open": True}, first_login.evidence()


def test_sudo_in_konsole_takes_the_finger(plasma, terminal):
    out = plasma.run_in_terminal("sudo -k id", ident="sudo", password=PASSWORDS["alice"])
    assert out.line.get("user_unit", "").startswith("app-org.kde.konsole@"), \
        f"sudo did not run in Konsole's shell{out.evidence()}"
    assert out.facts() == TOOK_THE_FINGER, out.evidence()
