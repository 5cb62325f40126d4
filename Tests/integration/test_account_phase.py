"""The account line (`account optional pam_localauth.so`) clears a lockout only where the
account phase proves a password: through the real libpam (pam_wrapper), the installed
module and helper, the real fprintd with the virtual reader, and a throwaway user whose
password hash is in /etc/shadow (pam_unix checks it, as on a real machine).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_account_phase.py

sshd runs pam_authenticate for a password try and pam_acct_mgmt on the same handle once a
public key let the user in (the driver's ``account="always"``); a loopback PAM_RHOST is any
`ssh -R` tunnel. Every test starts from a lockout (``failures=5``) and looks at the state
file afterwards: a lockout that was not to be cleared keeps ``failures=5`` and gets no
``last_password``.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pamenv  # noqa: E402
import system  # noqa: E402
from ctl_support import write_state  # noqa: E402
from pamenv import PamWorld, outcomes  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)
from wire import frame, request, results  # noqa: E402
from real_helper import LocalService, close_with  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

SET_ITEMS = Path(pamenv.PAM_MATRIX).parent / "pam_set_items.so"
NETWORKED = [{"rhost": "127.0.0.1"}, {"rhost": "::1"}, {"tty": "ssh"}]
NETWORKED_IDS = ["ipv4-loopback", "ipv6-loopback", "sshd-tty"]


class Account:
    """A locked-out throwaway user, a pam_wrapper world with stacks for them, and the state
    directory the installed helper uses, behind a localauthd of the test's own
    (``localauthd``, stopped when the world closes)."""

    def __init__(self, inst, bed, world, user):
        self.inst, self.bed, self.world, self.user = inst, bed, world, user
        self.state = world.root / "state"
        self.state.mkdir(mode=0o700)
        self.localauthd = LocalService(inst.helper, bed=bed, state=self.state)
        close_with(world, self.localauthd)
        self.args = " ".join([self.localauthd.arg, f"dbus_address={bed.address}", f"state_dir={self.state}",
                              f"config={inst.config}", f"fprint_dir={bed.state_dir}",
                              "scan_timeout=10"])
        write_state(self.state, user.name, failures=5)

    def stack(self, name, password_lines):
        """The first line, the password module(s), and the account line."""
        return self.world.service(name, [f"auth sufficient {self.inst.module} {self.args}",
                                         *password_lines,
                                         f"account required {self.inst.module} {self.args}",
                                         "account required pam_permit.so"])   # ours: PAM_IGNORE

    def unix_stack(self):
        return self.stack("la-acct-unix", ["auth requisite pam_unix.so nodelay"])

    def drive(self, service, answers, items=None, env=None):
        return self.world.drive(service, self.user.name, answers=answers, items=items or {},
                                env=env, account="always")

    def state_values(self):
        return system.state_fields(self.state / f"{self.user.name}.state")

    def assert_still_locked(self):
        values = self.state_values()
        assert values["failures"] == "5", values
        assert "last_password" not in values and "boot_id" not in values, values


@pytest.fixture
def account(inst, bed):
    with system.ThrowawayUser(prefix="la-acct-") as user, PamWorld() as world:
        yield Account(inst, bed, world, user)


def authsucc_outcome(result):
    """The module's line for the account line's helper run (the second outcome)."""
    found = outcomes(result.logs)
    assert len(found) == 2, [l.message for l in result.logs]
    return found[1]


# --- networked handles ---------------------------------------------------------------------

@pytest.mark.parametrize("items", NETWORKED, ids=NETWORKED_IDS)
def test_a_wrong_password_then_a_key_over_a_networked_handle_clears_nothing(account, items):
    r = account.drive(account.unix_stack(), ["wrong-password"], items=items)
    assert (r.rv, r.acct_rv) == ("PAM_AUTH_ERR", "PAM_SUCCESS"), r.stderr[-1500:]
    account.assert_still_locked()
    why = "PAM_RHOST is set" if "rhost" in items else "PAM_TTY is ssh"
    # The first line's outcome, then the account line's: the helper refused to clear on a
    # networked handle, and (for sshd's PAM_TTY, not for a loopback PAM_RHOST alone, which
    # is this machine) recorded the login from elsewhere.
    first, account_line = outcomes(r.logs)
    assert account_line["result"] == "invalidContext", account_line
    assert f"the account phase proves no password for a networked handle ({why})" in account_line["cause"], account_line
    if items.get("tty") == "ssh":
        assert "remote login recorded" in account_line["cause"], account_line
        assert account.state_values()["last_remote_login_from"] == "la-acct-unix"
    else:
        assert "remote login" not in account_line["cause"], account_line
        assert "last_remote_login" not in account.state_values()


def test_the_right_password_on_a_remote_host_clears_nothing_in_either_line(account):
    """A login from another machine (`login -h`, sshd) with the right password: the first
    line gets no scan, and neither the `authsucc` line (which checks the password) nor the
    account line clears the lockout of this machine's reader. The module sends the handle's
    PAM_RHOST; the refusals are the helper's."""
    svc = account.stack("la-acct-remote-right", [
        "auth requisite pam_unix.so nodelay",
        f"auth optional {account.inst.module} authsucc {account.args}"])
    r = account.drive(svc, [account.user.password], items={"rhost": "192.0.2.9", "tty": "ssh"})
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS"), r.stderr[-1500:]
    first, authsucc, account_line = outcomes(r.logs)
    assert (first["result"], first["reason"]) == ("notInteractive", "remote"), first
    assert "from another machine (PAM_RHOST 192.0.2.9) clears no lockout" in authsucc["cause"], authsucc
    assert "remote login recorded (from 192.0.2.9)" in account_line["cause"], account_line
    assert "from another machine (PAM_RHOST 192.0.2.9) clears no lockout" in account_line["cause"], account_line
    account.assert_still_locked()
    assert account.state_values()["last_remote_login_from"] == "192.0.2.9"


# --- local handles -------------------------------------------------------------------------
#
# Linux-PAM drops PAM_AUTHTOK when pam_authenticate returns, so after pam_unix the account
# phase has none: for a local account the `authsucc` line after the password module (which
# sees it) clears the lockout, and the account line clears only where PAM_AUTHTOK is still
# there and matches. pam_wrapper's pam_set_items, in the account phase, puts one there.

def token_stack(account, name):
    """pam_permit lets the user in; in the account phase pam_set_items sets PAM_AUTHTOK
    from the driver's environment before the account line runs."""
    return account.world.service(name, [
        f"auth sufficient {account.inst.module} {account.args}", "auth requisite pam_permit.so",
        f"account optional {SET_ITEMS}", f"account required {account.inst.module} {account.args}",
        "account required pam_permit.so"])


def test_the_right_password_token_on_a_local_handle_clears_through_the_account_line(account):
    r = account.drive(token_stack(account, "la-acct-right"), [], items={"tty": "/dev/pts/9"},
                      env={"PAM_AUTHTOK": account.user.password})
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS"), r.stderr[-1500:]
    assert authsucc_outcome(r)["result"] == "success"
    values = account.state_values()
    assert values["failures"] == "0" and "last_password" in values, values


def test_a_wrong_password_token_where_the_account_has_a_local_hash_clears_nothing(account):
    r = account.drive(token_stack(account, "la-acct-wrong"), [],
                      env={"PAM_AUTHTOK": "not-the-" + account.user.password})
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS"), r.stderr[-1500:]
    line = authsucc_outcome(r)
    assert line["result"] == "invalidContext", line
    assert "PAM_AUTHTOK is not the local account's password" in line["cause"], line
    account.assert_still_locked()


def test_no_password_token_where_the_account_has_a_local_hash_clears_nothing(account):
    """Another module let the user in (pam_permit here: a token, a key) and no password
    went through the stack: the account phase is no proof for a local account."""
    svc = account.stack("la-acct-permit", ["auth requisite pam_permit.so"])
    r = account.drive(svc, [])
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS"), r.stderr[-1500:]
    line = authsucc_outcome(r)
    assert line["result"] == "invalidContext", line
    assert "local password hash and PAM_AUTHTOK is empty" in line["cause"], line
    account.assert_still_locked()


def test_after_pam_unix_the_authsucc_line_clears_and_the_account_line_alone_does_not(account):
    """The right password through pam_unix: the account line alone sees no PAM_AUTHTOK and
    says which line clears; the shipped stack's `authsucc` line does clear."""
    r = account.drive(account.unix_stack(), [account.user.password])
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS"), r.stderr[-1500:]
    assert "authsucc` line after the password module clears" in authsucc_outcome(r)["cause"]
    account.assert_still_locked()
    svc = account.stack("la-acct-shipped", [
        "auth requisite pam_unix.so nodelay",
        f"auth optional {account.inst.module} authsucc {account.args}"])
    r = account.drive(svc, [account.user.password])
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS"), r.stderr[-1500:]
    assert authsucc_outcome(r)["result"] == "success"
    values = account.state_values()
    assert values["failures"] == "0" and "last_password" in values, values


def test_an_account_without_a_local_hash_is_still_cleared_by_the_account_phase(inst, bed):
    """pam_matrix's made-up user has no entry in /etc/passwd or /etc/shadow (as an SSSD or
    Kerberos account has no local hash): the account phase stays the proof."""
    with PamWorld() as world:
        name = "la-acct-directory-user"
        world.add_user(name, "directory-password")
        user = type("User", (), {"name": name})()
        acct = Account(inst, bed, world, user)
        svc = acct.stack("la-acct-matrix", [f"auth requisite {world.matrix}"])
        r = acct.drive(svc, ["directory-password"])
        assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS"), r.stderr[-1500:]
        assert authsucc_outcome(r)["result"] == "success"
        values = acct.state_values()
        assert values["failures"] == "0" and "last_password" in values, values


# --- the helper checks the same by itself (defence in depth) -------------------------------

def helper_authsucc(account, password, **items):
    """An account-phase request written here and sent to the test's localauthd as a root
    peer (this process): what the helper answers when the module's own check were missing."""
    import socket
    keys = dict(mode="authsucc", user=account.user.name, service="sshd", pid=str(os.getpid()),
                first_line="1", proof="account")
    keys.update(items)
    data = frame("Q", request(account.args.split(), **keys)) + frame("A", password.encode())
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(str(account.localauthd.socket))
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    found = results(out)
    assert len(found) == 1, out
    return found[0]


@pytest.mark.parametrize("items", NETWORKED, ids=NETWORKED_IDS)
def test_the_helper_refuses_a_networked_account_phase_even_with_the_right_password(account, items):
    result = helper_authsucc(account, account.user.password, **items)
    assert result["name"] == "invalidContext", result
    assert "networked handle" in result["cause"], result
    account.assert_still_locked()


def test_the_helper_checks_the_token_of_a_local_account_in_the_account_phase(account):
    result = helper_authsucc(account, "wrong-password")
    assert result["name"] == "invalidContext", result
    account.assert_still_locked()
    result = helper_authsucc(account, account.user.password)
    assert result["name"] == "success", result
    assert account.state_values()["failures"] == "0"


def test_a_misplaced_account_sufficient_line_leaves_an_expired_account_refused(account):
    """The account line judges no account: PAM_IGNORE, so `account sufficient
    pam_localauth.so` before pam_unix (a hand-edited stack) skips none of pam_unix's checks.
    With PAM_SUCCESS there, the expired account below got in."""
    p = system._locked_retry(["chage", "-E", "1", account.user.name])   # expired on 2 January 1970
    assert p.returncode == 0, p.stderr
    svc = account.world.service("la-acct-sufficient", [
        "auth requisite pam_unix.so nodelay",
        f"account sufficient {account.inst.module} {account.args}",
        "account required pam_unix.so"])
    r = account.world.drive(svc, account.user.name, answers=[account.user.password], account=True)
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_ACCT_EXPIRED"), r.stderr[-1500:]
    # Alone in its phase, the line lets nobody in either: libpam fails a phase of ignores.
    alone = account.world.service("la-acct-alone", ["auth requisite pam_unix.so nodelay",
                                                    f"account sufficient {account.inst.module} {account.args}"])
    r = account.world.drive(alone, account.user.name, answers=[account.user.password], account=True)
    assert r.rv == "PAM_SUCCESS" and r.acct_rv != "PAM_SUCCESS", r.stderr[-1500:]
