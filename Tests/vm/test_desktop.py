"""GNOME 48 on Wayland under GDM 48 (Debian 13), with the pam-auth-update profiles enabled
(issue 19's desktop cases). The tier's image (conftest.py: images.py's desktop flavour) boots into graphical.target;
GDM's own fingerprint conversation is off (image/setup.sh; README: with the profiles, gdm-password is
finger-first itself). One boot for the file, in order: the first login (by password), GNOME
Terminal's sudo, GNOME Shell's polkit dialog, the lock screen; between the dialog for pkexec and the lock screen, GNOME Shell's dialog for a
right of a program without a terminal (Examples/SecretVault, built by scripts/test into
build/test/). Screens are saved in the run's directory (``LOCALAUTH_VM_SHOTS``, default a
temporary one) and named in a failed assertion.

No reboot here: the rule "the password once after every boot" is test_presence.py's last
case (reason=reboot at the console), and the greeter's first login by password is this
file's first case; a second GNOME boot and login cost 147 s idle, 322 s in a loaded run.
"""
from __future__ import annotations


import os
import re
import tempfile
from pathlib import Path

import pytest

from desktop import Desktop
from guest import PASSWORDS, PRINTS, Guest, built_vault
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
def desktop_machine(image):
    m = Machine(image, desktop=True)
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
    assert {**out.facts(), "approves": out.approves} == {**TOOK_THE_FINGER, "approves": {"run `id` as root"}}, \
        out.evidence()


# What the helper's line says a pkexec of /usr/bin/id approves: polkitd's action, pkexec's
# program, polkit's message (its backquote made a plain quote by the cleaner).
PKEXEC_ID = "polkit org.freedesktop.policykit.exec for /usr/bin/id: " \
    "Authentication is needed to run '/usr/bin/id' as the super user"


def polkitd_said_yes(journal: str, command: str) -> bool:
    """polkitd's own line (polkit 126: "… successfully authenticated as unix-user:…"), or
    where polkitd no longer writes one (polkit 128 in the sid guest) pkexec's line for the
    command, which it writes only once polkitd has authorized it."""
    return "successfully authenticated" in journal or \
        re.search(rf"pkexec\[\d+\]: \w+: Executing command .*\[COMMAND={re.escape(command)}\]", journal) is not None


def test_gnome_shells_polkit_dialog_for_pkexec_takes_the_finger(desk, terminal):
    """One touch, one conversation, polkitd's yes. polkit's agent library ends a session as
    failed when the agent helper has exited with a line unread, so the helper sends polkit's
    agents no "Fingerprint recognized" after the match: before it did, GNOME Shell, slow
    under TCG and a busy host, read that line with the helper's exit, said "Sorry, that
    didn't work" and asked again, up to three times in a loaded run."""
    out = desk.run_in_terminal("pkexec id", ident="polkit-agent-helper-1",
                               password=PASSWORDS["alice"])
    firsts = [f for f in out.lines if f["phase"] == "auth" and "authsucc:" not in f["message"]]
    facts = {"finger_offered": out.finger_offered, "passwords_typed": out.passwords,
             "done": out.done, "rc": out.rc,
             "verdicts": [(f.get("result"), f.get("pam")) for f in firsts],
             "scans": len(out.scans), "polkitd_authorized": polkitd_said_yes(out.journal, "/usr/bin/id"),
             "approves": out.approves}
    assert facts == {"finger_offered": True, "passwords_typed": 0, "done": True, "rc": 0,
                     "verdicts": [("success", "PAM_SUCCESS")], "scans": 1,
                     "polkitd_authorized": True, "approves": {PKEXEC_ID}}, out.evidence()


def test_gnome_shells_polkit_dialog_gives_a_right_of_a_program_without_a_terminal(desk, terminal):
    """The vault, root's in /usr/local/bin, saves a finger-only right as alice; then, typed
    in GNOME Terminal but run with no controlling terminal (setsid, stdin /dev/null), it
    opens it: the root side asks polkitd for org.localauth.right.authorize, GNOME Shell's
    dialog (the agent of alice's session) runs the polkit-1 stack, the finger matches, and
    the secret comes back; no password is typed."""
    g = desk.g
    g.m.put([built_vault()], "/usr/local/bin/secret-vault")
    g.sh("chown root:root /usr/local/bin/secret-vault && chmod 755 /usr/local/bin/secret-vault && "
         "rm -f /tmp/la-vm/vault.out")
    saved = g.sh("runuser -u alice -- /usr/local/bin/secret-vault save vm-notes vm-secret biometry")
    assert "OK saved vm-notes" in saved, saved
    mark = g.mark()
    out = desk.run_in_terminal("setsid -w /usr/local/bin/secret-vault open vm-notes "
                               "</dev/null >/tmp/la-vm/vault.out 2>&1",
                               ident="polkit-agent-helper-1", password=PASSWORDS["alice"])
    printed = g.sh("cat /tmp/la-vm/vault.out; true")
    helper = [e.get("MESSAGE", "") for e in g.journal(mark) if "right authorize vm-notes" in e.get("MESSAGE", "")]
    facts = {"done": out.done, "rc": out.rc, "finger_offered": out.finger_offered, "scanned": bool(out.scans),
             "passwords_typed": out.passwords, "secret": "SECRET vm-secret" in printed,
             "authorized_by_finger": any("success (authorized (fingerprint))" in m for m in helper)}
    assert facts == {"done": True, "rc": 0, "finger_offered": True, "scanned": True, "passwords_typed": 0,
                     "secret": True, "authorized_by_finger": True}, f"{printed}\n{helper}{out.evidence()}"


def test_the_lock_screen_unlocks_with_the_finger(desk, first_login):
    assert first_login.done, f"alice is not logged in{first_login.evidence()}"
    desk.lock()
    out = desk.unlock()
    assert out.facts() == {**TOOK_THE_FINGER, "rc": None}, out.evidence()

