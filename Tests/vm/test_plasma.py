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

from guest import PASSWORDS, PRINTS, Guest, wait_for
from machine import Machine
from plasma import Plasma
from test_desktop import PKEXEC_ID, TOOK_THE_FINGER

GUEST_FLAVOUR = "plasma"
NOBODYS_FINGER = "nobody-rif"       # a finger nobody enrolled: a failed match

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
    # The finger at Plasma's lock screen is kde-fingerprint's: the package's stack, installed
    # as README says (it takes precedence over libkscreenlocker6's /usr/lib/pam.d one).
    g.sh("install -m 0644 /usr/share/doc/localauth/examples/pam.d/kde-fingerprint "
         "/etc/pam.d/kde-fingerprint")
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
    """SDDM's greeter takes the password before PAM runs (no parallel stacks): its helper,
    a child of sddm.service before the session exists, gets no scan (no-session), pam_unix
    takes the typed password, authsucc records it (the finger's rule: the password once
    after boot), and pam_kwallet5 opens alice's wallet with it."""
    facts = first_login.facts()
    del facts["passwords_typed"]    # keys before the greeter's field took them are lost
    facts["password_recorded"] = any("password recorded" in f.get("cause", "")
                                     for f in first_login.lines if f["ident"] == "sddm-helper")
    assert facts == {"finger_offered": False, "scans": [], "done": True, "rc": None,
                     "result": "notInteractive", "reason": "no-session",
                     "pam": "PAM_AUTHINFO_UNAVAIL", "wallet_open": True,
                     "password_recorded": True}, first_login.evidence()


def test_sudo_in_konsole_takes_the_finger(plasma, terminal):
    out = plasma.run_in_terminal("sudo -k id", ident="sudo", password=PASSWORDS["alice"])
    assert out.line.get("user_unit", "").startswith("app-org.kde.konsole@"), \
        f"sudo did not run in Konsole's shell{out.evidence()}"
    assert {**out.facts(), "approves": out.approves} == {**TOOK_THE_FINGER, "approves": {"run `id` as root"}}, \
        out.evidence()


def polkit_agent_said(journal: str, line: str) -> bool:
    """polkit-kde-agent-1 logs each line it shows (``Info:  "…"``, ``Error:  "…"``)."""
    return f'"{line}"' in journal


def test_polkit_kde_agents_dialog_for_pkexec_takes_the_finger(plasma, terminal):
    """polkit-kde-agent-1's dialog (the agent of alice's session) shows the module's line
    as an info line above its password field; one touch, polkitd's yes. The dialog with the
    finger prompt is kept among the screens."""
    out = plasma.run_in_terminal("pkexec id", ident="polkit-agent-helper-1",
                                 password=PASSWORDS["alice"])
    firsts = [f for f in out.lines if f["phase"] == "auth" and "authsucc:" not in f["message"]]
    facts = {"finger_offered": out.finger_offered, "passwords_typed": out.passwords,
             "done": out.done, "rc": out.rc,
             "verdicts": [(f.get("result"), f.get("pam")) for f in firsts], "scans": len(out.scans),
             "shown": polkit_agent_said(out.journal, "Swipe your right index finger across the fingerprint reader"),
             # The dialog's info line that names the request (the agent logs it with its
             # quotes escaped, so its two ends are looked for).
             "purpose_shown": "Touch the reader to approve" in out.journal
             and "(org.freedesktop.policykit.exec, /usr/bin/id)" in out.journal,
             "approves": out.approves,
             "polkitd_authorized": "successfully authenticated" in out.journal}
    assert facts == {"finger_offered": True, "passwords_typed": 0, "done": True, "rc": 0,
                     "verdicts": [("success", "PAM_SUCCESS")], "scans": 1, "shown": True,
                     "purpose_shown": True, "approves": {PKEXEC_ID},
                     "polkitd_authorized": True}, out.evidence()


def test_polkit_kde_agents_dialog_takes_the_password_typed_while_the_reader_waits(plasma, terminal):
    """The password typed into the dialog's field while the reader waits is held by the
    agent (no prompt yet); three fingers nobody enrolled end the module's scan ("use your
    password"), pam_unix asks, and the agent answers with what was typed: no second typing.
    The password is recorded and the three failed matches forgotten."""
    out = plasma.pkexec_by_password(finger=NOBODYS_FINGER)
    firsts = [f for f in out.lines if f["phase"] == "auth" and "authsucc:" not in f["message"]]
    recorded = [f for f in out.lines if "password recorded" in f.get("cause", "")]
    facts = {"done": out.done, "rc": out.rc, "passwords_typed": out.passwords,
             "scans": len(out.scans), "verdicts": [(f.get("result"), f.get("pam")) for f in firsts],
             "password_recorded": len(recorded),
             "shown": polkit_agent_said(out.journal, "Fingerprint not recognized - use your password"),
             "lockout_count": plasma.g.status("alice")["consecutive_failures"]}
    assert facts == {"done": True, "rc": 0, "passwords_typed": 1, "scans": 3,
                     "verdicts": [("authenticationFailed", "PAM_AUTH_ERR"),
                                  ("success", "PAM_AUTHINFO_UNAVAIL")], "password_recorded": 1,
                     "shown": True, "lockout_count": 0}, out.evidence()


@pytest.fixture
def locked(plasma, first_login):
    """alice's session locked through logind (ksmserver locks, LockedHint set); unlocked
    again by the password afterwards whatever the case left, so the next case locks anew."""
    assert first_login.done, f"alice is not logged in{first_login.evidence()}"
    plasma.lock()
    yield plasma
    if not plasma.unlocked():
        plasma.wake()
        plasma.q.type(PASSWORDS["alice"] + "\n")
        wait_for("the session unlocked after the case", plasma.unlocked)


LOCK_BY_FINGER = {"finger_offered": True, "scans": [PRINTS["alice"]], "passwords_typed": 0,
                  "done": True, "rc": None, "result": "success", "reason": None,
                  "pam": "PAM_SUCCESS", "kde": [("notInteractive", "finger-stack-beside")],
                  "fingerprint_requests": 1, "locker_ended": True}


def test_the_lock_screen_unlocks_with_the_finger(locked):
    """A key raises the prompt; kde (the password's stack) stands aside at once and
    kde-fingerprint scans: one touch unlocks. The lock screen with the finger wanted is
    kept among the screens."""
    out = locked.at_lock_screen(scan=PRINTS["alice"], shot="lock-screen-finger")
    assert out.facts() == LOCK_BY_FINGER, out.evidence()


def test_the_lock_screen_takes_the_password_typed_while_the_reader_waits(locked):
    """The password field is kde's, whose module answered at once: the password typed
    while kde-fingerprint's scan waits unlocks, and is recorded (authsucc in kde). The
    scan beside it gets no success: 6.3 cannot cancel it, so it ends when no finger came
    within scan_timeout (then the greeter exits and the reader is free)."""
    out = locked.at_lock_screen(password=True, shot="lock-screen-password")
    recorded = [f for f in out.lines if "password recorded" in f.get("cause", "")]
    facts = {"finger_offered": out.finger_offered, "scans": out.scans,
             "passwords_typed": out.passwords, "done": out.done, "kde": out.extra["kde"],
             "password_recorded": len(recorded),
             "fingerprint_requests": out.extra["fingerprint_requests"],
             "finger_not_taken": out.line.get("pam") not in (None, "PAM_SUCCESS"),
             "locker_ended": out.extra["locker_ended"], "reader_free": out.finger[-1:] == [False]}
    assert facts == {"finger_offered": True, "scans": [], "passwords_typed": 1, "done": True,
                     "kde": [("notInteractive", "finger-stack-beside"), ("success", None)],
                     "password_recorded": 1, "fingerprint_requests": 1, "finger_not_taken": True,
                     "locker_ended": True, "reader_free": True}, out.evidence()


def unlock_after(plasma, cleanup) -> None:
    """Registers the password typed at the lock screen if a case leaves it locked."""
    def undo():
        if not plasma.unlocked():
            plasma.wake()
            plasma.q.type(PASSWORDS["alice"] + "\n")
            wait_for("the session unlocked after the case", plasma.unlocked)
    cleanup(undo)


# A refusal that holds until the password, at the lock screen: kde-fingerprint is answered
# at once and once (6.3 then leaves the finger off until this lock ends: more keys start
# nothing), kde's password unlocks at once and is recorded.
HOLDS = {"finger_offered": False, "scans": [], "passwords_typed": 1, "done": True, "rc": None,
         "pam": "PAM_AUTHINFO_UNAVAIL", "fingerprint_requests": 1, "locker_ended": True,
         "kde": [("notInteractive", "finger-stack-beside"), ("success", None)]}


def test_a_lockout_at_the_lock_screen_gets_the_password_at_once_and_one_finger_request(
        plasma, terminal, cleanup):
    cleanup(lambda: plasma.g.sh("localauthctl reset alice"))
    plasma.lock_out(NOBODYS_FINGER)
    unlock_after(plasma, cleanup)
    plasma.lock()
    out = plasma.at_lock_screen(password=True, reader_waits=False, wakes=3,
                                shot="lock-screen-lockout")
    facts = {**out.facts(), "locked_out_after": plasma.g.status("alice")["locked_out"]}
    assert facts == {**HOLDS, "result": "biometryLockout", "reason": "lockout",
                     "locked_out_after": False}, out.evidence()


def test_fprintd_absent_at_the_lock_screen_gets_the_password_at_once_and_one_finger_request(
        plasma, first_login, cleanup):
    assert first_login.done, f"alice is not logged in{first_login.evidence()}"
    plasma.g.sh("systemctl mask --runtime --now fprintd")
    cleanup(lambda: plasma.g.sh("systemctl unmask --runtime fprintd"))
    unlock_after(plasma, cleanup)
    plasma.lock()
    out = plasma.at_lock_screen(password=True, reader_waits=False, wakes=3,
                                shot="lock-screen-no-fprintd")
    facts = out.facts()
    del facts["reason"]         # names how fprintd is missing; the verdict is what counts
    assert facts == {**HOLDS, "result": "biometryNotAvailable"}, out.evidence()


def test_after_these_locks_the_finger_unlocks_again(locked):
    out = locked.at_lock_screen(scan=PRINTS["alice"], shot="lock-screen-finger-again")
    assert out.facts() == LOCK_BY_FINGER, out.evidence()
