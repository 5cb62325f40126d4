"""`localauthctl enable` / `disable` on a pseudo-terminal (pexpect), against the real fprintd
with the virtual reader, with the password checked by the real pam_unix through the
`localauthctl` PAM service (pam_wrapper serves that service file from a private directory,
so nothing in /etc/pam.d is touched), for a throwaway account.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ctl_support import Ctl, password_entered, read_state  # noqa: E402
from ctl_fixtures import account, ctl_binary, ctl_on  # noqa: E402,F401  (fixtures)
from pamenv import PamWorld, end_child  # noqa: E402
from real_helper import LocalService  # noqa: E402

WAITING = "Waiting for your finger"
REPO_HELPER = Path(__file__).resolve().parents[2] / "build" / "libexec" / "localauth" / "localauth-helper"


@pytest.fixture
def world():
    with PamWorld(debuglevel=0) as w:
        w.service("localauthctl", ["auth required pam_unix.so"])
        yield w


@pytest.fixture
def ctl(ctl_binary, bed, account, tmp_path) -> Ctl:
    return ctl_on(ctl_binary, bed, account, tmp_path, "opt_in = required\n")


class Session:
    """The tool on a pseudo-terminal; every child is killed at the end."""

    def __init__(self, ctl: Ctl, world: PamWorld, *args: str):
        argv = ctl.argv(*args)
        self.child = pexpect.spawn(argv[0], argv[1:], env={**os.environ, **world.preload_env()},
                                   encoding="utf-8", timeout=20)
        self.bed = ctl.bed
        self.injections = []

    def expect(self, text: str) -> None:
        self.child.expect_exact(text)

    def password(self, password: str) -> None:
        self.child.expect_exact("Password: ")
        self.child.sendline(password)

    def scan(self, *print_ids: str) -> None:
        self.injections.append(self.bed.inject_async([f"SCAN {p}" for p in print_ids]))

    def finish(self) -> tuple:
        self.child.expect(pexpect.EOF)
        self.child.close()
        for injection in self.injections:
            injection.wait(10)
        return self.child.exitstatus, self.child.before

    def kill(self) -> None:
        end_child(self.child)


@pytest.fixture
def session(ctl, world):
    made = []

    def start(*args: str) -> Session:
        s = Session(ctl, world, *args)
        made.append(s)
        return s

    yield start
    for s in made:
        s.kill()


def test_enable_for_a_user_never_seen_asks_the_password_then_the_finger(ctl, account, session):
    s = session("enable", "--user", account.name)
    s.expect("Your password is required before fingerprints can be used")
    s.password(account.password)
    s.expect(WAITING)
    s.scan("f1")
    rc, tail = s.finish()
    assert rc == 0, tail
    assert f"Fingerprint login is on for {account.name}." in tail
    state = read_state(ctl.state_dir, account.name)
    assert state["opted_in"] == 1 and len(state["trusted_domain_state"]) == 64
    assert state["failures"] == 0 and "last_password" in state and "last_fingerprint" in state
    r = ctl.run("status", account.name, "--json")
    assert '"switch":true' in r.out and '"enrolled_set":"trusted"' in r.out
    assert '"decision":"fingerprint"' in r.out, r


def test_enable_with_the_wrong_password_changes_nothing(ctl, account, session):
    s = session("enable", "--user", account.name)
    s.password("not-" + account.password)
    rc, tail = s.finish()
    assert rc == 1, tail
    assert "the password was not accepted" in tail and "unchanged" in tail
    assert read_state(ctl.state_dir, account.name) is None


def test_enable_without_a_match_counts_the_failures(ctl, account, session):
    password_entered(ctl.state_dir, account.name)
    s = session("enable", "--user", account.name)
    s.expect(WAITING)
    s.scan("f2", "f2", "f2")
    rc, tail = s.finish()
    assert rc == 1, tail
    state = read_state(ctl.state_dir, account.name)
    assert state["opted_in"] == 0 and state["failures"] == 3


def test_enable_after_the_enrolled_set_changed_needs_the_password(ctl, account, session, bed):
    password_entered(ctl.state_dir, account.name)
    s = session("enable", "--user", account.name)
    s.scan("f1")
    assert s.finish()[0] == 0
    trusted = read_state(ctl.state_dir, account.name)["trusted_domain_state"]
    bed.enroll(account.name, "left-thumb", "f2")
    assert '"enrolled_set":"changed"' in ctl.run("status", account.name, "--json").out

    s = session("enable", "--user", account.name)
    s.password(account.password)   # no rule but the changed set asks for it
    s.expect(WAITING)
    s.scan("f2")
    rc, tail = s.finish()
    assert rc == 0, tail
    assert read_state(ctl.state_dir, account.name)["trusted_domain_state"] != trusted


def test_enable_cancelled_with_ctrl_c(ctl, account, session):
    password_entered(ctl.state_dir, account.name)
    s = session("enable", "--user", account.name)
    s.expect(WAITING)
    s.child.sendintr()
    rc, tail = s.finish()
    assert rc == 1, tail
    assert read_state(ctl.state_dir, account.name)["opted_in"] == 0


def test_disable_with_a_finger(ctl, account, session):
    password_entered(ctl.state_dir, account.name, opted_in=True, trusted="ab" * 32)
    s = session("disable", "--user", account.name)
    s.expect(WAITING)
    s.scan("f1")
    rc, tail = s.finish()
    assert rc == 0, tail
    assert f"Fingerprint login is off for {account.name}." in tail
    state = read_state(ctl.state_dir, account.name)
    assert state["opted_in"] == 0 and "trusted_domain_state" not in state


def test_disable_with_the_password_when_the_finger_is_refused(ctl, account, session):
    # Locked out: no finger is tried, the password is enough to turn it off.
    password_entered(ctl.state_dir, account.name, opted_in=True, failures=5)
    s = session("disable", "--user", account.name)
    s.password(account.password)
    rc, tail = s.finish()
    assert rc == 0, tail
    assert read_state(ctl.state_dir, account.name)["opted_in"] == 0


def test_disable_refused_without_finger_or_password(ctl, account, session):
    password_entered(ctl.state_dir, account.name, opted_in=True, failures=5)
    s = session("disable", "--user", account.name)
    s.password("wrong")
    rc, tail = s.finish()
    assert rc == 1, tail
    assert read_state(ctl.state_dir, account.name)["opted_in"] == 1


# ---- a directory user ---------------------------------------------------------------------

NSS_WRAPPER = next(iter(sorted(Path("/usr/lib").glob("*/libnss_wrapper.so"))), None)


def test_a_directory_user_can_enable_with_their_password(ctl_binary, bed, tmp_path):
    """An account of a directory service, with no line in /etc/shadow: nss_wrapper gives
    it a passwd entry, pam_matrix stands in for pam_krb5 in common-auth (pam-auth-update's
    layout, the module's first line and authsucc line included), and the localauthctl
    service file is the shipped one. The password is checked by the site's modules, not
    pam_unix alone; the module in common-auth steps aside there (localauthctl scanned the
    finger itself: one scan only)."""
    from pamenv import MODULE, PAM_WRAPPER
    assert NSS_WRAPPER, "libnss-wrapper (scripts/install-deps)"
    user, password = "la-dir-" + os.urandom(3).hex(), "dir-pw-" + os.urandom(4).hex()
    passwd, group = tmp_path / "passwd", tmp_path / "group"
    passwd.write_text(f"root:x:0:0:root:/root:/bin/sh\n{user}:x:61234:61234::/nonexistent:/bin/sh\n")
    group.write_text(f"root:x:0:\n{user}:x:61234:\n")
    bed.enroll(user, "right-index-finger", "f1")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    config = tmp_path / "localauth.conf"
    config.write_text("opt_in = required\n")
    config.chmod(0o644)
    ctl = Ctl(ctl_binary, bed, state, config)
    # The module in common-auth reaches the helper through a localauthd of the test's own,
    # started as where no systemd runs (`localauthd --listen`).
    service = LocalService(REPO_HELPER, bed=bed, state=state)
    args = (f"{service.arg} dbus_address={bed.address} fprint_dir={bed.state_dir} state_dir={state} "
            f"config={config}")
    with service, PamWorld(debuglevel=0) as world:
        world.add_user(user, password)
        # pam-auth-update's Kerberos layout (pam_matrix asks for the password itself, as
        # pam_krb5 does; pam_unix after it takes the same one).
        world.service("common-auth", [
            f"auth [success=3 default=ignore] {MODULE} {args}",
            f"auth [success=2 default=ignore] {world.matrix}",
            "auth [success=1 default=ignore] pam_unix.so nullok try_first_pass",
            "auth requisite pam_deny.so",
            "auth required pam_permit.so",
            f"auth optional {MODULE} authsucc {args}"])
        world.service("common-account", ["account required pam_permit.so"])
        # The shipped file, its includes naming the world's files by path (libpam under
        # pam_wrapper looks for them in /etc/pam.d otherwise).
        shipped = (Path(__file__).resolve().parents[2] / "pam.d" / "localauthctl").read_text().splitlines()
        assert [l for l in shipped if l and not l.startswith("#")] == ["@include common-auth",
                                                                     "@include common-account"], shipped
        world.service("localauthctl", [l.replace("@include ", f"@include {world.services}/") for l in shipped])
        env = {**os.environ, **world.preload_env(),
               "LD_PRELOAD": f"{world.preload_env()['LD_PRELOAD']}:{NSS_WRAPPER}",
               "NSS_WRAPPER_PASSWD": str(passwd), "NSS_WRAPPER_GROUP": str(group)}
        def run(command, steps):
            """localauthctl COMMAND on a terminal; steps: ("expect", text), ("type", text),
            ("scan", prints). Returns (status, output, scans started)."""
            mark = bed.mark()
            argv = ctl.argv(command, "--user", user)
            child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=20)
            injections = []
            try:
                for what, arg in steps:
                    if what == "expect":
                        child.expect_exact(arg)
                    elif what == "type":
                        child.sendline(arg)
                    else:
                        injections.append(bed.inject_async([f"SCAN {p}" for p in arg]))
                child.expect(pexpect.EOF)
                child.close()
                for injection in injections:
                    injection.wait(10)
            finally:
                end_child(child)
            scans = [e for e in bed.events(mark) if e.name == "VerifyFingerSelected"]
            return child.exitstatus, child.before, len(scans)

        rc, out, scans = run("enable", [("expect", "Your password is required before fingerprints can be used"),
                                        ("expect", "Password: "), ("type", password), ("expect", WAITING),
                                        ("scan", ["f1"])])
        assert rc == 0 and f"Fingerprint login is on for {user}." in out, out
        assert scans == 1   # localauthctl's own
        recorded = read_state(state, user)
        assert recorded["opted_in"] == 1 and "last_password" in recorded, recorded
        # Three wrong fingers, then the password: the module in common-auth must not ask
        # for a fourth finger in localauthctl's password check (it steps aside there).
        rc, out, scans = run("disable", [("expect", WAITING), ("scan", ["f2", "f2", "f2"]),
                                         ("expect", "Password: "), ("type", password)])
        assert rc == 0 and f"Fingerprint login is off for {user}." in out, out
        assert scans == 3, scans
    assert read_state(state, user)["opted_in"] == 0
