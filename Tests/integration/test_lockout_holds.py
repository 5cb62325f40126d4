"""The lockout holds in stacks and habits our own service files do not have: with the real
setuid sudo, a throwaway user, the installed module and helper, and the real fprintd with
the virtual reader.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_lockout_holds.py

* The natural stack (`auth required pam_unix.so` between the two lines, where `required`
  does not stop the stack): the authsucc line also runs after a *wrong* password, and must
  not clear the count then. Five failed matches lock out whatever passwords were typed in
  between; only the right password lifts it.
* The authsucc line clears the lockout only for a password it checked. The account line
  alone never clears a local account's: libpam drops PAM_AUTHTOK when pam_authenticate
  returns, so it has no password to check against the local hash (it clears for accounts
  without one, test_account_phase.py).
* A user who kills their own sudo each time a finger is rejected (watching fprintd's
  VerifyStatus on the bus) does not get the try back.
"""
import os
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from terminal_finger import ASK_FINGER, SKIP_PROMPT  # noqa: E402
from sudo_machine import Machine  # noqa: E402
from messages import ENROLLED, LOCKED, OTHER  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

WRONG = ["wrong-1", "wrong-2", "wrong-3"]     # sudo asks three times


def natural_stack(module, args):
    """What most administrators write: the password module `required`, the authsucc line
    after it, and no account line of ours."""
    return [f"auth sufficient {module} {args}",
            "auth required pam_unix.so nodelay",
            f"auth optional {module} authsucc {args}",
            "account required pam_unix.so",
            "session required pam_unix.so"]


def account_stack(module, args):
    """The natural stack with the account line instead of the authsucc line."""
    return [f"auth sufficient {module} {args}",
            "auth required pam_unix.so nodelay",
            "account required pam_unix.so",
            f"account required {module} {args}",
            "session required pam_unix.so"]


def test_natural_stack_locks_out_whatever_passwords_were_typed(bed, inst):
    with Machine(inst, bed, stack=natural_stack) as m:
        m.first_password()
        for round_fingers, expected in (([OTHER] * 3, "3"), ([OTHER] * 2, "5")):
            r = m.sudo(round_fingers, answers=WRONG)
            assert r.status != 0 and "root" not in r.screen, r
            assert r.results == ["verify-no-match"] * len(round_fingers)
            # Three wrong passwords, each followed by the authsucc line: nothing cleared.
            assert m.state_file()["failures"] == expected, r
        # Locked out: no scan, and wrong passwords still change nothing.
        r = m.sudo(answers=WRONG)
        assert r.status != 0 and r.scans_started == [], r
        assert LOCKED in r.screen, r.screen
        assert m.state_file()["failures"] == "5"
        # The right password, checked by the helper against the account, lifts it.
        r = m.sudo(answers=[m.user.password])
        assert r.status == 0 and r.screen[-1] == "root", r
        assert m.state_file()["failures"] == "0"
        r = m.sudo([ENROLLED])
        assert r.status == 0 and r.results == ["verify-match"], r


def test_the_account_line_alone_does_not_clear_a_local_accounts_lockout(bed, inst):
    with Machine(inst, bed, stack=natural_stack) as m:
        m.first_password()
        m.sudo([OTHER] * 3, answers=WRONG)
        m.sudo([OTHER] * 2, answers=WRONG)
        assert m.state_file()["failures"] == "5"
        # From here on the account line is the only one that could clear.
        args = m.lines[0].split(None, 3)[3]      # the first line's arguments
        m.service.path.write_text("".join(line + "\n" for line in account_stack(m.inst.module, args)))
        r = m.sudo(answers=WRONG)
        assert r.status != 0 and LOCKED in r.screen, r
        assert m.state_file()["failures"] == "5"   # a failed stack never reaches the account phase
        # The right password lets sudo in, but the account phase has no PAM_AUTHTOK to check
        # against the local hash: the lockout stays until a line that sees the password.
        r = m.sudo(answers=["wrong-1", m.user.password])
        assert r.status == 0 and r.screen[-1] == "root", r
        assert m.state_file()["failures"] == "5"


# --- killing sudo the moment a finger is rejected ------------------------------------------

def children_running(pid, exe):
    """Pids of `pid`'s children whose executable is `exe`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and os.readlink(stat.parent / "exe") == str(exe):
                found.append(int(stat.parent.name))
        except (OSError, ValueError):
            continue
    return found


def wait_helper(service, exe, timeout=10):
    """The helper localauthd (``service``, a real_helper.LocalService) runs for the request
    now: its child running ``exe``, not a spare waiting for its request."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [pid for pid in children_running(service.pid, exe) if pid in service.helpers()]
        if found:
            return found[0]
        time.sleep(0.01)
    raise AssertionError(f"no helper of localauthd (pid {service.pid}) serves a request")


def wait_gone(pid, timeout=15):
    """Until `pid` has exited (gone, or a zombie nobody reaped)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":
            return
        time.sleep(0.02)
    raise AssertionError(f"pid {pid} still running")


def kill_sudo_on_rejection(m):
    """sudo waits for a finger; the helper is held still (as a helper at idle priority on a
    busy machine is), a stranger's finger is rejected, and sudo is killed before the helper
    can read the verdict: when the helper runs again, the verdict and the end of its caller
    are both waiting."""
    pt = system.run_on_pty(["sudo", "-k", "id", "-un"], user=m.user)
    try:
        pt.expect(ASK_FINGER, timeout=15)
        pt.expect(SKIP_PROMPT, timeout=15)
        helper = wait_helper(m.localauthd, m.inst.helper)
        os.kill(helper, signal.SIGSTOP)
        try:
            assert m.bed.reader.inject(f"SCAN {OTHER}") == "verify-no-match"
            os.kill(pt.child.pid, signal.SIGKILL)
            wait_gone(pt.child.pid)
        finally:
            os.kill(helper, signal.SIGCONT)
        wait_gone(helper)
    finally:
        pt.kill()


def test_killing_sudo_on_every_rejected_finger_still_locks_out(bed, inst):
    with Machine(inst, bed) as m:
        m.first_password()
        for n in range(1, 6):
            kill_sudo_on_rejection(m)
            assert m.state_file()["failures"] == str(n)
        r = m.sudo(answers=[m.user.password])
        assert LOCKED in r.screen and r.scans_started == [], r
        assert r.status == 0 and m.state_file()["failures"] == "0"
