"""After a remote login, the finger only at the machine itself until the next local unlock
(PresenceRule's rule 5, `remote_login_guard`): the real setuid sudo on a pseudo-terminal, the
installed module and helper, the real fprintd with the virtual reader, and the account line
run by pamtester over a networked handle, as sshd runs it for a key.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_remote_login.py

This machine runs no logind, so the pseudo-terminal is judged by the terminal and root's
records alone (the rule holds without logind too); the cases with a real sshd, logind, a
polkit agent of the attacker's and a job left behind run in the Debian guest
(Tests/vm/test_presence.py).

Root's records are whole seconds, and a remote login in the same second as an unlock counts
as the later one: where a test needs the unlock to be the later, it waits for the next
second of the clock (a property of the records, not of the machine's speed).
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from ctl_support import Ctl, localauthctl_binary  # noqa: E402
from messages import ENROLLED  # noqa: E402
from sudo_machine import Machine, requisite_stack  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

SINCE_UNLOCK = "You signed in remotely since this computer was last unlocked here - use your password"


def with_account_line(module, args):
    """pam.d/sudo's stack with the account line pam-auth-update's profile adds."""
    return requisite_stack(module, args) + [f"account optional {module} {args}"]


def machine_with(inst, extra=()):
    return Machine(inst=inst, extra=extra, stack=with_account_line)


def ssh_account_phase(m, **items):
    """The account phase as sshd runs it after a public key: pam_acct_mgmt on a handle with
    PAM_RHOST (and sshd's PAM_TTY), through /etc/pam.d and the real libpam."""
    flags = []
    for key, value in (items or {"rhost": "192.0.2.9", "tty": "ssh"}).items():
        flags += ["-I", f"{key}={value}"]
    r = subprocess.run(["pamtester", *flags, m.service.name, m.user.name, "acct_mgmt"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)


def next_second():
    now = int(time.time())
    while int(time.time()) == now:
        time.sleep(0.05)


@pytest.fixture
def machine(inst):
    with machine_with(inst) as m:
        m.first_password()
        yield m


def test_the_account_line_on_a_networked_handle_records_the_remote_login(machine):
    before = machine.state_file()
    assert "last_local_unlock" in before, before     # the first password, typed here
    assert "last_remote_login" not in before, before
    ssh_account_phase(machine)
    after = machine.state_file()
    assert after["last_remote_login_from"] == "192.0.2.9", after
    assert int(after["last_remote_login"]) >= int(before["last_local_unlock"]), after
    # Each with its boot and CLOCK_BOOTTIME, which order them whatever the wall clock does.
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    login_boot, login_ms = after["last_remote_login_boot"].split(" ")
    unlock_boot, unlock_ms = after["last_local_unlock_boot"].split(" ")
    assert login_boot == unlock_boot == boot and int(login_ms) > int(unlock_ms), after
    # Nothing else changed: the account phase proves no password.
    for key in ("failures", "last_password", "last_local_unlock"):
        assert after.get(key) == before.get(key), (key, before, after)


def test_a_local_account_phase_records_nothing(machine):
    ssh_account_phase(machine, tty="/dev/pts/9")
    assert "last_remote_login" not in machine.state_file()


def test_after_a_remote_login_a_terminal_gets_the_password_then_the_finger_again(machine):
    ssh_account_phase(machine)
    next_second()   # so that the password below is the later record
    # No scan, the reason told, the password: the finger is not even asked for.
    r = machine.sudo(fingers=(), answers=[machine.user.password])
    assert r.status == 0 and r.screen[0] == SINCE_UNLOCK and r.screen[-1] == "root", r
    assert r.prompts == 1 and not r.matched, r
    assert r.scans_started == [], r.events
    state = machine.state_file()
    assert int(state["last_local_unlock"]) > int(state["last_remote_login"]), state
    # The password typed here was the local unlock: the finger again.
    r = machine.sudo(fingers=[ENROLLED])
    assert r.status == 0 and r.matched and r.prompts == 0 and r.screen[-1] == "root", r


def test_a_remote_login_in_the_same_second_as_the_unlock_counts_as_the_later(machine):
    # first_password() just unlocked; the remote login follows at once (same second or later).
    ssh_account_phase(machine)
    r = machine.sudo(fingers=(), answers=[machine.user.password])
    assert r.screen[0] == SINCE_UNLOCK and not r.matched, r


def test_a_wrong_password_after_a_remote_login_is_no_unlock(machine):
    ssh_account_phase(machine)
    next_second()
    r = machine.sudo(fingers=(), answers=["not-the-password"], interrupt=True)
    assert r.status != 0 and r.screen[0] == SINCE_UNLOCK, r
    state = machine.state_file()
    assert int(state["last_local_unlock"]) <= int(state["last_remote_login"]), state
    r = machine.sudo(fingers=(), answers=[machine.user.password])
    assert r.screen[0] == SINCE_UNLOCK and r.status == 0 and not r.matched, r


def test_the_administrator_can_turn_the_rule_off(inst):
    with machine_with(inst, extra=["remote_login_guard=no"]) as m:
        m.first_password()
        ssh_account_phase(m)
        assert m.state_file()["last_remote_login_from"] == "192.0.2.9"
        next_second()
        r = m.sudo(fingers=[ENROLLED])
        assert r.status == 0 and r.matched and SINCE_UNLOCK not in r.screen, r


def test_localauthctl_status_shows_the_rule_and_the_records(machine, inst):
    ctl = Ctl(localauthctl_binary(), machine.bed, machine.state, inst.config)

    def status():
        r = ctl.run("status", machine.user.name, "--json")
        assert r.rc == 0, r
        return json.loads(r.out)
    before = status()
    assert before["remote_login_guard"] is True and before["remote_login_since_unlock"] is False, before
    assert before["last_local_unlock"] is not None and before["last_remote_login"] is None, before
    ssh_account_phase(machine)
    after = status()
    assert after["remote_login_since_unlock"] is True, after
    assert after["last_remote_login_from"] == "192.0.2.9", after
    text = ctl.run("status", machine.user.name)
    assert any(l.startswith("after a remote login") and "192.0.2.9" in l for l in text.lines), text
