"""`localauthctl doctor` on throwaway files: a PAM directory (--pam-dir), a state directory
(--state-dir), a helper (--helper) and a config file (--config), with the real fprintd and
the virtual reader for the reader and print checks. Each broken setup must be reported as a
problem with the line to fix, and exit 1; a sound one exits 0.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ctl_fixtures import account, ctl_binary  # noqa: E402,F401  (fixtures)
from ctl_support import Ctl  # noqa: E402
from testbed import Bed  # noqa: E402

# Debian 12's common-auth as pam-auth-update writes it (comments left out).
COMMON_AUTH = """\
auth	[success=1 default=ignore]	pam_unix.so nullok
auth	requisite			pam_deny.so
auth	required			pam_permit.so
auth	optional			pam_cap.so
"""

GOOD_SUDO = """\
#%PAM-1.0
session    required   pam_limits.so

auth       sufficient pam_localauth.so
@include common-auth
auth       optional   pam_localauth.so authsucc

@include common-account
"""


class Doctor:
    """A sound setup in tmp_path, to be broken one piece at a time."""

    service = None      # the localauthd doctor is pointed at (the fixture starts one)

    def __init__(self, binary: str, bed: Bed, user: str, root: Path):
        self.user, self.root = user, root
        self.pam = root / "pam.d"
        self.pam.mkdir()
        (self.pam / "common-auth").write_text(COMMON_AUTH)
        (self.pam / "common-account").write_text("account required pam_unix.so\n")
        (self.pam / "sudo").write_text(GOOD_SUDO)
        self.state = root / "state"
        self.state.mkdir(mode=0o700)
        self.helper_dir = root / "libexec"
        self.helper_dir.mkdir(mode=0o755)
        self.helper = self.helper_dir / "localauth-helper"
        shutil.copy("/bin/true", self.helper)
        self.helper.chmod(0o755)
        self.module = root / "pam_localauth.so"
        self.module.write_bytes(b"\x7fELF")
        self.module.chmod(0o644)
        (self.pam / "localauthctl").write_text("auth required pam_unix.so\n")
        self.config = root / "localauth.conf"
        self.config.write_text("max_tries = 2\n")
        self.config.chmod(0o644)
        self.ctl = Ctl(binary, bed, self.state, self.config)

    def run(self, *extra: str, lang=None):
        """doctor on this setup; `lang` a LANG value (the user's language), else the
        environment's."""
        env = None
        if lang:
            env = {k: v for k, v in os.environ.items() if k not in ("LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES")}
            env["LANG"] = lang
        # The service a sound setup has running (the one door), unless the test names another.
        service = [] if "--service" in extra or self.service is None else ["--service", str(self.service.socket)]
        return self.ctl.run("doctor", self.user, "--pam-dir", str(self.pam),
                            "--helper", str(self.helper), "--module", str(self.module), *service, *extra, env=env)


@pytest.fixture
def doctor(ctl_binary, bed, account, tmp_path) -> Doctor:
    """A sound setup: the bed, an enrolled user, and a localauthd answering on a socket of
    the test's own (every caller reaches the finger only through it)."""
    from real_helper import LocalService
    bed.enroll(account.name, "right-index-finger", "f1")
    d = Doctor(ctl_binary, bed, account.name, tmp_path)
    d.service = LocalService(bed=bed, state=d.state)
    try:
        yield d
    finally:
        d.service.close()


def problems(result) -> list:
    """(problem line, fix line) pairs."""
    out = []
    for i, line in enumerate(result.lines):
        if line.startswith("problem "):
            fix = result.lines[i + 1].strip() if i + 1 < len(result.lines) else ""
            out.append((line, fix if fix.startswith("fix: ") else ""))
    return out


def test_a_sound_setup_has_no_problem(doctor):
    r = doctor.run()
    assert r.rc == 0, r
    assert r.last == "doctor: 0 problems, 0 warnings", r
    assert 'ok       fprintd answers; reader "Virtual device for debugging"' in r.lines
    assert "ok       prints of %s: right-index-finger" % doctor.user in r.lines
    sudo = [l for l in r.lines if f"{doctor.pam}/sudo:" in l]
    assert len(sudo) == 1 and sudo[0].startswith("ok "), sudo
    assert "reached only after the password" in sudo[0]


def test_a_missing_authsucc_line(doctor):
    authsucc = "auth       optional   pam_localauth.so authsucc\n"
    (doctor.pam / "sudo").write_text(GOOD_SUDO.replace(authsucc, ""))
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert line.startswith(f"problem  {doctor.pam}/sudo: no line clears a fingerprint lockout after the "
                           f"password module, {doctor.pam}/common-auth:1 `auth"), line
    assert "(via line 5 `@include common-auth`)" in line and "no `account` line" in line
    # pam_unix's users have a local hash: only the authsucc line can clear their lockout.
    assert fix == f"fix: add `auth optional pam_localauth.so authsucc` to {doctor.pam}/sudo after line 5", fix
    # The account line alone is not enough for them: libpam has dropped PAM_AUTHTOK by then.
    (doctor.pam / "sudo").write_text(GOOD_SUDO.replace(authsucc, "") + "account optional pam_localauth.so\n")
    r = doctor.run()
    [(line, fix)] = problems(r)
    assert "the account line cannot check a local password" in line, line
    assert fix == f"fix: add `auth optional pam_localauth.so authsucc` to {doctor.pam}/sudo after line 5", fix


def test_the_module_line_after_the_password_module(doctor):
    (doctor.pam / "sudo").write_text(
        "@include common-auth\nauth sufficient pam_localauth.so\n"
        "auth optional pam_localauth.so authsucc\n")
    r = doctor.run()
    assert r.rc == 1, r
    found = problems(r)
    after = [(l, f) for l, f in found if "comes after the password module" in l]
    assert len(after) == 1, found
    line, fix = after[0]
    assert line.startswith(f"problem  {doctor.pam}/sudo: line 2 `auth sufficient pam_localauth.so` "
                           f"comes after the password module, {doctor.pam}/common-auth:1"), line
    assert fix == f"fix: in {doctor.pam}/sudo, move line 2 above line 1", fix


def test_a_state_directory_with_the_wrong_mode(doctor):
    doctor.state.chmod(0o755)
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert line.startswith(
        f"problem  state directory {doctor.state}: mode 0755, expected 0700"), line
    assert fix == f"fix: chmod 0700 {doctor.state}"


def test_an_authsucc_line_reached_when_the_password_failed_is_no_problem(doctor):
    # The authsucc line checks the typed password against the local account itself: after
    # a wrong one (`required` goes on) it clears nothing.
    (doctor.pam / "sudo").write_text(
        "auth sufficient pam_localauth.so\nauth required pam_unix.so\n"
        "auth optional pam_localauth.so authsucc\n")
    r = doctor.run()
    assert r.rc == 0 and problems(r) == [], r


def test_an_authsucc_line_never_reached_after_the_password(doctor):
    (doctor.pam / "sudo").write_text(
        "auth sufficient pam_localauth.so\nauth sufficient pam_unix.so\n"
        "auth optional pam_localauth.so authsucc\n")
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert ("line 3 `auth optional pam_localauth.so authsucc` is not reached after a "
            "successful password") in line
    assert "(the stack ends at line 2 `auth sufficient pam_unix.so`)" in line
    assert fix == f"fix: make {doctor.pam}/sudo:2 `requisite` instead of `sufficient`", fix


def test_a_module_line_that_denies_instead_of_falling_back(doctor):
    (doctor.pam / "sudo").write_text(GOOD_SUDO.replace("auth       sufficient pam_localauth.so",
                                                       "auth       required   pam_localauth.so"))
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert "denies the login, the password cannot follow" in line
    assert fix == f"fix: use `auth sufficient pam_localauth.so` at {doctor.pam}/sudo line 4"


def test_the_pam_auth_update_layout_is_sound(doctor):
    (doctor.pam / "sudo").write_text("@include common-auth\n")
    (doctor.pam / "common-auth").write_text(
        "auth\t[success=2 default=ignore]\tpam_localauth.so\n"
        "auth\t[success=1 default=ignore]\tpam_unix.so nullok\n"
        "auth\trequisite\t\t\tpam_deny.so\nauth\trequired\t\t\tpam_permit.so\n"
        "auth\toptional\t\t\tpam_localauth.so authsucc\n")
    r = doctor.run()
    assert r.rc == 0, r
    # One stack, in common-auth, used by two files: checked and reported once.
    [ok] = [l for l in r.lines if l.startswith("ok ") and "reached only after" in l]
    assert ok.startswith(f"ok       {doctor.pam}/common-auth (used by sudo): "), ok


def test_config_issues_with_file_and_line(doctor):
    doctor.config.write_text("max_tries = 2\nmax_tries = 99\n# fine\nfrobnicate = 1\n")
    r = doctor.run()
    assert r.rc == 1, r
    lines = [l for l, _ in problems(r)]
    assert any(l.startswith(f"problem  {doctor.config}:2: `max_tries` must be")
               for l in lines), lines
    assert f"problem  {doctor.config}:4: unknown option `frobnicate`" in lines, lines


def test_the_shipped_config_parses_cleanly(doctor):
    shipped = Path(__file__).resolve().parents[2] / "etc" / "localauth.conf"
    doctor.ctl.config = shipped
    r = doctor.run()
    assert f"ok       config {shipped}: every line parses" in r.lines, r


def test_a_helper_others_can_write(doctor):
    doctor.helper.chmod(0o775)
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert "writable by group or others" in line and fix == f"fix: chmod go-w {doctor.helper}"


def test_a_missing_helper(doctor):
    doctor.helper.unlink()
    r = doctor.run()
    assert r.rc == 1 and any("No such file or directory" in l for l, _ in problems(r)), r


def test_no_prints_enrolled(ctl_binary, bed, account, tmp_path):
    d = Doctor(ctl_binary, bed, account.name, tmp_path)
    r = d.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert line == f"problem  no fingerprints enrolled for {account.name}"
    assert fix == f"fix: fprintd-enroll -f right-index-finger {account.name}"


def test_no_reader(ctl_binary, account, tmp_path):
    with Bed(reader=False) as bed:
        r = Doctor(ctl_binary, bed, account.name, tmp_path).run()
    assert r.rc == 1, r
    assert [l for l, _ in problems(r)] == ["problem  fprintd has no fingerprint reader"], r


def test_a_locked_out_user_is_a_warning(doctor):
    from ctl_support import password_entered
    password_entered(doctor.state, doctor.user, failures=5)
    r = doctor.run()
    assert r.rc == 0, r
    assert (f"warning  {doctor.user} is locked out: 5 consecutive failed matches (lockout at 5)"
            in r.lines), r
    fix = f"         fix: the user's password clears it; or localauthctl reset {doctor.user}"
    assert fix in r.lines, r


# ---- stacks real fleets run --------------------------------------------------------------

# common-auth as pam-auth-update writes it for SSSD (pam_unix, then pam_sss).
SSSD_COMMON_AUTH = """\
auth	[success=2 default=ignore]	pam_unix.so nullok
auth	[success=1 default=ignore]	pam_sss.so use_first_pass
auth	requisite			pam_deny.so
auth	required			pam_permit.so
auth	optional			pam_cap.so
"""

# and for Kerberos (pam_krb5 first, then pam_unix with the password already typed).
KRB5_COMMON_AUTH = """\
auth	[success=2 default=ignore]	pam_krb5.so minimum_uid=1000
auth	[success=1 default=ignore]	pam_unix.so nullok try_first_pass
auth	requisite			pam_deny.so
auth	required			pam_permit.so
"""


@pytest.mark.parametrize("common", [SSSD_COMMON_AUTH, KRB5_COMMON_AUTH], ids=["sssd", "krb5"])
def test_a_directory_service_stack_has_no_false_problem(doctor, common):
    (doctor.pam / "common-auth").write_text(common)
    (doctor.pam / "sudo").write_text(GOOD_SUDO + "account optional pam_localauth.so\n")
    r = doctor.run()
    assert r.rc == 0, r
    assert problems(r) == [], r
    assert not any("requisite" in l for l in r.lines), r
    [ok] = [l for l in r.lines if l.startswith(f"ok       {doctor.pam}/sudo:")]
    assert "the account line clears it for accounts without a local hash" in ok, ok
    module = "pam_sss.so" if "pam_sss" in common else "pam_krb5.so"
    assert module in ok and "pam_unix.so" in ok, ok
    # Without the account line a domain user's password never lifts their lockout (the
    # authsucc line checks local passwords only): a true problem, and the fix keeps them in.
    (doctor.pam / "sudo").write_text(GOOD_SUDO)
    r = doctor.run()
    [(line, fix)] = problems(r)
    assert f"a password accepted by {module}" in line and "never clears" in line, line
    assert fix.startswith("fix: add `account optional pam_localauth.so`") and "requisite" not in fix, fix


def test_a_fix_never_locks_out_the_users_of_another_password_module(doctor):
    # Each password module ends the stack on success, so no single change clears lockouts
    # right: making pam_unix `requisite` (the old advice) would lock every pam_sss user out.
    (doctor.pam / "sudo").write_text(
        "auth sufficient pam_localauth.so\n"
        "auth sufficient pam_unix.so nullok\n"
        "auth sufficient pam_sss.so use_first_pass\n"
        "auth optional pam_localauth.so authsucc\n"
        "auth requisite pam_deny.so\n")
    r = doctor.run()
    assert r.rc == 1, r
    found = problems(r)
    assert any("accepted by pam_sss.so" in l and "never clears" in l for l, _ in found), found
    assert found and all("requisite" not in fix for _, fix in found), found


def test_substack_and_include_are_run_as_libpam_runs_them(doctor):
    (doctor.pam / "password-auth").write_text(
        "auth [success=1 default=ignore] pam_unix.so nullok\nauth requisite pam_deny.so\n"
        "auth sufficient pam_permit.so\n")
    # In a substack, `sufficient pam_permit`'s `done` ends only the substack: the authsucc
    # line after it runs after a good password.
    (doctor.pam / "sudo").write_text(
        "auth sufficient pam_localauth.so\nauth substack password-auth\n"
        "auth optional pam_localauth.so authsucc\n")
    r = doctor.run()
    assert r.rc == 0 and problems(r) == [], r
    # Included, the same `done` ends the whole stack before the authsucc line.
    (doctor.pam / "sudo").write_text(
        "auth sufficient pam_localauth.so\nauth include password-auth\n"
        "auth optional pam_localauth.so authsucc\n")
    lines = [l for l, _ in problems(doctor.run())]
    assert any("is not reached after a successful password" in l for l in lines), lines


def test_pam_fprintd_beside_the_module_is_a_problem(doctor):
    (doctor.pam / "common-auth").write_text(
        "auth [success=2 default=ignore] pam_fprintd.so max-tries=1 timeout=10\n" + COMMON_AUTH)
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert "pam_fprintd.so" in line and "asked for it twice" in line, line
    assert fix == "fix: pam-auth-update --disable fprintd", fix


def test_sudo_i_without_the_module_is_a_warning(doctor):
    (doctor.pam / "sudo-i").write_text("@include common-auth\n")
    # Another program's test file with test-only arguments, sorted before sudo: the fix
    # must not tell anyone to copy its lines.
    (doctor.pam / "la-test-1f2e").write_text(
        "auth sufficient pam_localauth.so service=/tmp/la-fake/socket state_dir=/tmp/la-state\n"
        "auth required pam_unix.so\nauth optional pam_localauth.so authsucc service=/tmp/la-fake/socket\n")
    (doctor.pam / "sudo").unlink()
    r = doctor.run()
    assert r.rc == 0, r
    warning = f"warning  sudo -i asks for the password only: {doctor.pam}/sudo-i does not use pam_localauth.so"
    i = r.lines.index(warning)
    fix = r.lines[i + 1].strip()
    assert "la-test" not in fix and "/tmp/la-fake" not in fix, fix
    assert fix == (f"fix: in {doctor.pam}/sudo-i, add `auth sufficient pam_localauth.so` before `@include "
                   "common-auth`, `auth optional pam_localauth.so authsucc` after it and `account optional "
                   "pam_localauth.so` after `@include common-account`, as in the shipped example "
                   "(/usr/share/doc/localauth/examples/pam.d/sudo, pam_localauth(8)), or pam-auth-update "
                   "--enable localauth localauth-authsucc"), fix


def test_a_missing_localauthctl_service_is_a_warning(doctor):
    (doctor.pam / "localauthctl").unlink()
    r = doctor.run()
    assert r.rc == 0, r
    assert any(l.startswith(f"warning  {doctor.pam}/localauthctl is missing") for l in r.lines), r


def test_a_launcher_left_by_an_earlier_version_is_a_warning_to_remove_it(doctor):
    """Earlier versions installed a setuid-root localauth-launcher beside the helper;
    localauthd serves callers that are not root now, so one still there is only a setuid
    program nothing uses. Without it, doctor says nothing about a launcher."""
    import json
    launcher = doctor.helper_dir / "localauth-launcher"
    sound = doctor.run("--json")
    assert not [f for f in json.loads(sound.out)["findings"] if f["code"].startswith("launcher.")], sound
    sound = doctor.run()
    assert not any(str(launcher) in l for l in sound.lines), sound
    shutil.copy("/bin/true", launcher)
    launcher.chmod(0o4755)                  # as an earlier version installed it
    r = doctor.run()
    assert r.rc == 0 and r.last == "doctor: 0 problems, 1 warning", r
    i = r.lines.index(f"warning  launcher {launcher}: left by an earlier version; nothing uses it "
                      "(localauthd serves callers that are not root)")
    fix = r.lines[i + 1].strip()
    assert fix == f"fix: rm {launcher}", fix
    [found] = [f for f in json.loads(doctor.run("--json").out)["findings"] if f["code"].startswith("launcher.")]
    assert (found["severity"], found["code"], found["fix"]) == ("warning", "launcher.leftover", f"rm {launcher}"), found
    # Any file of that name, whatever its mode: nothing should be there.
    launcher.chmod(0o644)
    assert any(l.startswith(f"warning  launcher {launcher}: left by") for l in doctor.run().lines)
    _apply(fix)
    assert not launcher.exists()
    r = doctor.run()
    assert r.rc == 0 and r.last == "doctor: 0 problems, 0 warnings" and not any(str(launcher) in l for l in r.lines), r


def test_a_module_others_can_write_is_a_problem(doctor):
    doctor.module.chmod(0o666)
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert line.startswith(f"problem  module {doctor.module}: owned by uid 0, mode 0666"), line


def test_root_without_fingerprints_is_no_problem(ctl_binary, bed, tmp_path):
    d = Doctor(ctl_binary, bed, "root", tmp_path)
    r = d.run()
    assert r.rc == 0, r
    assert "ok       no fingerprints enrolled for root (name a user to check theirs: " \
           "localauthctl doctor USER)" in r.lines, r


# ---- a stack without the module -----------------------------------------------------------

MISSING = "fails its stack once the module is missing (the package removed)"

# common-account as pam-auth-update wrote it with the profile of earlier versions.
OLD_COMMON_ACCOUNT = """\
account	[success=1 new_authtok_reqd=done default=ignore]	pam_unix.so
account	requisite			pam_deny.so
account	required			pam_permit.so
account	required			pam_localauth.so
"""


def test_a_line_that_fails_its_stack_once_the_module_is_gone(doctor):
    # `apt-get remove localauth` leaves hand-written lines: libpam answers "Module is
    # unknown", and a `required` account line then refuses everyone sudo.
    (doctor.pam / "sudo").write_text(GOOD_SUDO + "account required pam_localauth.so\n")
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert line.startswith(f"problem  {doctor.pam}/sudo:9 `account required pam_localauth.so` {MISSING}"), line
    assert line.endswith("so nobody signs in through sudo"), line
    assert fix == "fix: make it `account optional pam_localauth.so` (the line judges no account)", fix
    # The same line written `optional`: skipped without the module, nothing to report.
    (doctor.pam / "sudo").write_text(GOOD_SUDO + "account optional pam_localauth.so\n")
    r = doctor.run()
    assert r.rc == 0 and problems(r) == [], r
    # A bracketed control without module_unknown or default counts it as `bad`, as libpam does.
    (doctor.pam / "sudo").write_text(GOOD_SUDO + "account [success=ok] pam_localauth.so\n")
    [(line, _)] = problems(doctor.run())
    assert MISSING in line, line


def test_the_old_profiles_account_line_in_common_account_is_named_once(doctor):
    (doctor.pam / "common-account").write_text(OLD_COMMON_ACCOUNT)
    (doctor.pam / "sudo-i").write_text(GOOD_SUDO)
    r = doctor.run()
    found = [(l, f) for l, f in problems(r) if MISSING in l]
    assert len(found) == 1, problems(r)
    line, fix = found[0]
    assert line.startswith(f"problem  {doctor.pam}/common-account:4 `account required pam_localauth.so`"), line
    assert line.endswith("nobody signs in through sudo, sudo-i"), line
    assert fix == "fix: pam-auth-update --package (the profiles' lines ignore a missing module)", fix


def test_an_authsucc_line_that_fails_every_sign_in(doctor):
    # It always answers PAM_AUTHINFO_UNAVAIL: `required` refuses every login, module or not.
    (doctor.pam / "sudo").write_text(GOOD_SUDO.replace("auth       optional   pam_localauth.so authsucc",
                                                       "auth       required   pam_localauth.so authsucc"))
    found = problems(doctor.run())
    assert any("fails every sign-in through sudo: the authsucc line always answers PAM_AUTHINFO_UNAVAIL"
               in l and f == "fix: write it `auth optional pam_localauth.so authsucc`" for l, f in found), found


def test_no_shipped_line_fails_a_stack_without_the_module(doctor):
    # Every service file the README shows, and the pam-auth-update profiles' lines as
    # pam-auth-update writes them. gdm-fingerprint's and kde-fingerprint's `required` finger-only
    # lines are meant to fail their own conversation (the password is the other one's) and
    # are not reported.
    shipped = Path(__file__).resolve().parents[2] / "pam.d"
    for name in ("sudo", "su", "login", "polkit-1", "screenlocker", "localauth", "gdm-fingerprint",
                 "kde-fingerprint"):
        shutil.copy(shipped / name, doctor.pam / name)
    profile = (shipped / "pam-configs" / "localauth-authsucc").read_text()
    account = profile.split("Account:\n", 1)[1].strip()
    (doctor.pam / "common-account").write_text(OLD_COMMON_ACCOUNT.replace("required\t\t\tpam_localauth.so",
                                                                          account))
    r = doctor.run()
    assert [l for l, _ in problems(r) if MISSING in l or "fails every sign-in" in l] == [], r
    assert account == "optional\tpam_localauth.so", account


# ---- a configuration that cannot be trusted ----------------------------------------------

UNTRUSTED = "not read, and fingerprint sign-in is off until it is fixed (the password only)"


def _apply(fix: str) -> None:
    """Runs a `fix: a; b; c` line's commands as the administrator would."""
    commands = fix.removeprefix("fix: ")
    commands = commands.split(" (", 1)[0] if "(" in commands else commands
    commands = commands.split(": ", 1)[1] if commands.startswith("replace ") else commands
    subprocess.run(["sh", "-ec", commands], check=True)


def test_a_symlinked_config_is_replaced_and_its_target_left_alone(doctor):
    # chown and chmod on the link would change what it points at (a 0600 file of nobody's
    # became root's 0644) and leave the link: the fix replaces the link instead.
    target = doctor.root / "elsewhere.conf"
    target.write_text("max_tries = 1\n")
    os.chown(target, 65534, 65534)
    target.chmod(0o600)
    doctor.config.unlink()
    doctor.config.symlink_to(target)
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert line == f"problem  config {doctor.config} is a symlink: {UNTRUSTED}", line
    assert fix == (f"fix: replace the symlink with a regular file: rm {doctor.config}; install -m 0644 -o root "
                   f"-g root {target} {doctor.config} (review {target} first; chown or chmod on the link would "
                   f"change {target} itself)"), fix
    assert "chown root:root " + str(doctor.config) not in fix and "chmod 0644 " + str(doctor.config) not in fix
    _apply(fix)
    st = target.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (65534, 65534, 0o600), "the fix changed the target"
    assert not doctor.config.is_symlink()
    r = doctor.run()
    assert r.rc == 0 and f"ok       config {doctor.config}: every line parses" in r.lines, r


def test_a_symlinked_drop_in_and_a_group_writable_config(doctor):
    drop = Path(str(doctor.config) + ".d")
    drop.mkdir(mode=0o755)
    real = doctor.root / "lab.conf"
    real.write_text("max_tries = 2\n")
    real.chmod(0o600)
    (drop / "20-lab.conf").symlink_to(real)
    doctor.config.chmod(0o664)
    r = doctor.run()
    found = problems(r)
    assert (f"problem  config {doctor.config} has mode 0664: its group can write it: {UNTRUSTED}",
            f"fix: chmod go-w {doctor.config}") in found, found
    link = drop / "20-lab.conf"
    assert any(l == f"problem  config {link} is a symlink: {UNTRUSTED}" and f.startswith(
        f"fix: replace the symlink with a regular file: rm {link}; install -m 0644 -o root -g root {real} {link}")
               for l, f in found), found
    for _, fix in found:
        _apply(fix)
    assert real.stat().st_mode & 0o7777 == 0o600 and doctor.config.stat().st_mode & 0o7777 == 0o644
    r = doctor.run()
    assert r.rc == 0 and problems(r) == [], r


def test_a_drop_in_directory_others_can_write(doctor):
    drop = Path(str(doctor.config) + ".d")
    drop.mkdir(mode=0o777)
    drop.chmod(0o777)
    [(line, fix)] = problems(doctor.run())
    assert line == f"problem  config {drop} has mode 0777: its group and every user can write it: {UNTRUSTED}", line
    assert fix == f"fix: chmod go-w {drop}", fix


# ---- modules that count failures ---------------------------------------------------------

BY_HAND = ("fix: by hand, as pam_localauth(8) EXAMPLES shows: no change of one line keeps every user "
           "getting in and every module that counts or logs failures reached")


@pytest.mark.parametrize("authfail", ["optional", "required", "[default=die]"])
def test_a_fix_never_skips_the_module_that_counts_failed_passwords(doctor, authfail):
    # Making pam_unix `requisite` ends the stack at a wrong password, before pam_faillock's
    # authfail: failed passwords would no longer be counted. No fix skips it.
    (doctor.pam / "sudo").write_text(
        "auth required pam_faillock.so preauth\n"
        "auth sufficient pam_localauth.so\n"
        "auth sufficient pam_unix.so nullok\n"
        f"auth {authfail} pam_faillock.so authfail\n"
        "auth optional pam_localauth.so authsucc\n")
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert "line 5 `auth optional pam_localauth.so authsucc` is not reached after a successful password" in line
    assert "requisite" not in fix and fix == BY_HAND, fix


def test_pam_faillocks_layout_gets_a_fix_that_keeps_authfail_and_authsucc(doctor):
    # pam_faillock(8)'s stack: a good password jumps over authfail and ends at faillock's
    # `sufficient` authsucc, so our line after it is never reached. The fix moves it to
    # where a good password reaches it and a wrong one still meets authfail.
    lines = ["auth sufficient pam_localauth.so",
             "auth required pam_faillock.so preauth",
             "auth [success=1 default=bad] pam_unix.so",
             "auth [default=die] pam_faillock.so authfail",
             "auth sufficient pam_faillock.so authsucc",
             "auth required pam_deny.so",
             "auth optional pam_localauth.so authsucc"]
    (doctor.pam / "sudo").write_text("\n".join(lines) + "\n")
    r = doctor.run()
    [(line, fix)] = problems(r)
    assert "line 7 `auth optional pam_localauth.so authsucc` is not reached after a successful password" in line
    assert fix == f"fix: move {doctor.pam}/sudo:7 `auth optional pam_localauth.so authsucc` to {doctor.pam}/sudo after line 4", fix
    moved = lines[:4] + [lines[6]] + lines[4:6]
    (doctor.pam / "sudo").write_text("\n".join(moved) + "\n")
    r = doctor.run()
    assert r.rc == 0 and problems(r) == [], r



# ---- what libpam does with a line's answer -----------------------------------------------

def test_a_bracketed_control_without_default_counts_what_it_does_not_name_as_bad(doctor):
    """libpam fills the values a bracketed control does not name, when it has no `default=`,
    with `bad`: a module line `[success=done]` refuses the login whenever the finger is
    unavailable or not recognized, the right password after it included."""
    (doctor.pam / "sudo").write_text(GOOD_SUDO.replace("auth       sufficient pam_localauth.so",
                                                       "auth       [success=done] pam_localauth.so"))
    r = doctor.run()
    assert r.rc == 1, r
    [(line, fix)] = problems(r)
    assert line.startswith(f"problem  {doctor.pam}/sudo: line 4 `auth [success=done] pam_localauth.so` is "
                           "`[success=done]`: a fingerprint that fails or is unavailable denies the login"), line
    assert fix == f"fix: use `auth sufficient pam_localauth.so` at {doctor.pam}/sudo line 4", fix
    # With `default=ignore` the password follows: nothing to report.
    (doctor.pam / "sudo").write_text(GOOD_SUDO.replace("auth       sufficient pam_localauth.so",
                                                       "auth [success=done default=ignore] pam_localauth.so"))
    r = doctor.run()
    assert r.rc == 0 and problems(r) == [], r


def test_libpam_itself_counts_a_value_the_control_does_not_name_as_bad():
    """The rule doctor models, checked against the real libpam (pam_wrapper): a line that
    answers PAM_AUTHINFO_UNAVAIL (pam_debug stands in for a finger that is unavailable)
    under `[success=done]` fails the stack although the password after it is right."""
    from pamenv import PamWorld
    with PamWorld() as world:
        world.add_user("la-doctor-x", "secret")
        for control, expected in [("[success=done]", "PAM_AUTHINFO_UNAVAIL"),
                                  ("[success=done default=ignore]", "PAM_SUCCESS")]:
            svc = world.service("la-doctor-ctl", [f"auth {control} pam_debug.so auth=authinfo_unavail",
                                                  f"auth required {world.matrix}"])
            r = world.drive(svc, "la-doctor-x", answers=["secret"])
            assert r.rv == expected, (control, r.rv, r.stderr[-500:])


def test_an_authsucc_line_whose_answer_counts_as_a_failure_is_never_relied_on(doctor):
    """The authsucc line always answers PAM_AUTHINFO_UNAVAIL: `optional` ignores that,
    `required` counts it as a failure. No fix may take it for ignored: making pam_unix
    `requisite` (right for an `optional` line) would then refuse every password, and so
    would moving the line as it is written."""
    (doctor.pam / "sudo").write_text(
        "auth sufficient pam_localauth.so\nauth sufficient pam_unix.so\n"
        "auth required pam_localauth.so authsucc\n")
    r = doctor.run()
    found = problems(r)
    assert any("line 3 `auth required pam_localauth.so authsucc` is not reached after a successful password" in l
               for l, _ in found), found
    assert any("fails every sign-in through sudo" in l and f == "fix: write it `auth optional pam_localauth.so authsucc`"
               for l, f in found), found
    assert [f for _, f in found if "requisite" in f] == [], found
    # pam_faillock's layout with our line `required`: the move writes it `optional`.
    lines = ["auth sufficient pam_localauth.so",
             "auth required pam_faillock.so preauth",
             "auth [success=1 default=bad] pam_unix.so",
             "auth [default=die] pam_faillock.so authfail",
             "auth sufficient pam_faillock.so authsucc",
             "auth required pam_deny.so",
             "auth required pam_localauth.so authsucc"]
    (doctor.pam / "sudo").write_text("\n".join(lines) + "\n")
    [fix] = [f for l, f in problems(doctor.run()) if "is not reached after a successful password" in l]
    assert fix == (f"fix: move {doctor.pam}/sudo:7 `auth required pam_localauth.so authsucc` to {doctor.pam}/sudo "
                   "after line 4, written `auth optional pam_localauth.so authsucc`"), fix
    moved = lines[:4] + ["auth optional pam_localauth.so authsucc"] + lines[4:6]
    (doctor.pam / "sudo").write_text("\n".join(moved) + "\n")
    r = doctor.run()
    assert r.rc == 0 and problems(r) == [], r


# ---- findings that say what is true ------------------------------------------------------

def test_a_sufficient_line_in_a_substack_is_not_told_to_be_sufficient(doctor):
    # Its `done` ends only the substack: "use `auth sufficient`" would change nothing.
    (doctor.pam / "fingers").write_text("auth sufficient pam_localauth.so\n")
    (doctor.pam / "sudo").write_text("auth substack fingers\n@include common-auth\n"
                                     "auth optional pam_localauth.so authsucc\n")
    r = doctor.run()
    [w] = [i for i, l in enumerate(r.lines) if l.startswith("warning ") and "a matched finger does not end" in l]
    assert "(it is in a substack, whose `done` ends only the substack)" in r.lines[w], r.lines[w]
    fix = r.lines[w + 1].strip()
    assert fix == (f"fix: move {doctor.pam}/fingers:1 `auth sufficient pam_localauth.so` out of the substack: "
                   f"`auth sufficient pam_localauth.so` in {doctor.pam}/sudo itself, above line 1"), fix


def test_a_security_key_that_ends_the_stack_is_not_a_password_that_skips_authsucc(doctor):
    # A U2F success skips the authsucc line, and should: it is not the password. After a
    # password the line is reached.
    (doctor.pam / "sudo").write_text("auth sufficient pam_localauth.so\nauth sufficient pam_u2f.so cue\n"
                                     "@include common-auth\nauth optional pam_localauth.so authsucc\n")
    r = doctor.run()
    assert r.rc == 0 and problems(r) == [], r
    # A key every user must pass (a second factor) is part of the password's run.
    (doctor.pam / "sudo").write_text("auth sufficient pam_localauth.so\nauth required pam_u2f.so\n"
                                     "@include common-auth\nauth optional pam_localauth.so authsucc\n")
    r = doctor.run()
    assert r.rc == 0 and problems(r) == [], r


def test_a_problem_in_the_service_file_is_headed_by_it(doctor):
    # The module's lines are pam-auth-update's, in common-auth; the service's own line
    # above the include is the problem, so the heading and the line numbers are sudo's.
    (doctor.pam / "common-auth").write_text(
        "auth\t[success=2 default=ignore]\tpam_localauth.so\n"
        "auth\t[success=1 default=ignore]\tpam_unix.so nullok\n"
        "auth\trequisite\t\t\tpam_deny.so\nauth\trequired\t\t\tpam_permit.so\n"
        "auth\toptional\t\t\tpam_localauth.so authsucc\n")
    (doctor.pam / "sudo").write_text("auth sufficient pam_unix.so nullok\n@include common-auth\n")
    r = doctor.run()
    found = [(l, f) for l, f in problems(r) if "comes after the password module" in l]
    assert len(found) == 1, problems(r)
    line, fix = found[0]
    assert line.startswith(f"problem  {doctor.pam}/sudo: {doctor.pam}/common-auth:1 "), line
    assert fix == f"fix: in {doctor.pam}/sudo, move line 2 above line 1", fix


def test_fprintd_installed_and_the_bus_down_is_not_told_to_install_fprintd(doctor):
    assert os.access("/usr/libexec/fprintd", os.X_OK), "the test bed's fprintd"
    from ctl_support import plain_run
    argv = doctor.ctl.argv("doctor", doctor.user, "--pam-dir", str(doctor.pam), "--helper", str(doctor.helper),
                           "--module", str(doctor.module))
    bus = argv.index("--dbus-address") + 1
    argv[bus] = "unix:path=/nonexistent/la-doctor-bus"
    r = plain_run(argv)
    [(line, fix)] = [(l, f) for l, f in problems(r) if "fprintd is not reachable" in l]
    assert "apt-get install" not in fix, fix
    assert fix == "fix: start the system bus (systemctl start dbus); fprintd is installed and is started by it on demand", fix


# ---- directory users ----------------------------------------------------------------------

def test_a_localauthctl_service_that_only_local_users_pass(doctor):
    # pam_unix alone: SSSD's users cannot pass enable or disable when it asks for the
    # password. The shipped file includes common-auth (the module steps aside there).
    (doctor.pam / "common-auth").write_text(SSSD_COMMON_AUTH)
    (doctor.pam / "sudo").write_text(GOOD_SUDO + "account optional pam_localauth.so\n")
    r = doctor.run()
    warning = (f"warning  {doctor.pam}/localauthctl checks the password with pam_unix.so only: users of "
               "pam_sss.so (sudo) cannot pass `localauthctl enable` or `disable` when it asks for their password")
    assert warning in r.lines, r
    fix = r.lines[r.lines.index(warning) + 1].strip()
    assert fix == (f"fix: `@include common-auth` in {doctor.pam}/localauthctl, as the package ships it "
                   "(pam_localauth.so steps aside there)"), fix
    shutil.copy(Path(__file__).resolve().parents[2] / "pam.d" / "localauthctl", doctor.pam / "localauthctl")
    r = doctor.run()
    assert f"ok       {doctor.pam}/localauthctl: checks the password with pam_sss.so, pam_unix.so" in r.lines, r


@pytest.mark.parametrize("common,module", [(SSSD_COMMON_AUTH, "pam_sss.so"), (KRB5_COMMON_AUTH, "pam_krb5.so")],
                         ids=["sssd", "krb5"])
def test_a_fingerprint_login_on_a_directory_stack_goes_without_the_ticket(doctor, common, module):
    (doctor.pam / "common-auth").write_text(common)
    shutil.copy(Path(__file__).resolve().parents[2] / "pam.d" / "login", doctor.pam / "login")
    r = doctor.run()
    [w] = [l for l in r.lines if l.startswith(f"warning  {doctor.pam}/login: a fingerprint login")]
    assert w == (f"warning  {doctor.pam}/login: a fingerprint login (login) skips {module}, which at a password "
                 "login gets the Kerberos ticket and refreshes the cached offline credentials: that session has "
                 "no ticket (kinit, or the password at the next login)"), w
    # sudo is no login: nothing said about it.
    assert not [l for l in r.lines if "/sudo: a fingerprint login" in l], r


def test_libpam_fprintds_profile_left_out_is_said(doctor):
    # libpam-fprintd is installed here (scripts/install-deps), so is its profile.
    assert Path("/usr/share/pam-configs/fprintd").is_file()
    (doctor.pam / "common-auth").write_text(
        "auth\t[success=2 default=ignore]\tpam_localauth.so\n"
        "auth\t[success=1 default=ignore]\tpam_unix.so nullok\n"
        "auth\trequisite\t\t\tpam_deny.so\nauth\trequired\t\t\tpam_permit.so\n"
        "auth\toptional\t\t\tpam_localauth.so authsucc\n")
    (doctor.pam / "sudo").write_text("@include common-auth\n")
    r = doctor.run()
    assert any(l.startswith("ok       libpam-fprintd's pam-auth-update profile is off: it conflicts with "
                            "localauth's") for l in r.lines), r
    # Without our lines in common-auth there is nothing to say.
    (doctor.pam / "common-auth").write_text(COMMON_AUTH)
    assert not any("libpam-fprintd's" in l for l in doctor.run().lines)


def test_doctor_json_for_fleets(doctor):
    import json
    r = doctor.run("--json")
    assert r.rc == 0 and len(r.lines) == 1, r
    j = json.loads(r.out)
    assert j["user"] == doctor.user and (j["problems"], j["warnings"]) == (0, 0), j
    assert j["language"] == "en", j
    assert {"severity": "ok", "code": "prints.enrolled", "message": f"prints of {doctor.user}: right-index-finger",
            "fix": None} in j["findings"], j
    doctor.state.chmod(0o755)
    r = doctor.run("--json")
    j = json.loads(r.out)
    assert r.rc == 1 and j["problems"] == 1, j
    [bad] = [f for f in j["findings"] if f["severity"] == "problem"]
    assert bad["code"] == "state.mode", bad
    assert bad["message"].startswith(f"state directory {doctor.state}: mode 0755") and \
        bad["fix"] == f"chmod 0700 {doctor.state}", bad


# ---- in the user's language --------------------------------------------------------------

def _broken(doctor) -> None:
    """A setup with a problem of every part doctor looks at that names a file and a line:
    a config line, a PAM stack without its authsucc line, a line that fails without the
    module, and a state directory others can read."""
    doctor.config.write_text("max_tries = 2\nmax_tries = 20\nbogus = 1\n")
    (doctor.pam / "sudo").write_text(GOOD_SUDO.replace("auth       optional   pam_localauth.so authsucc\n", "")
                                     + "account required pam_localauth.so\n")
    (doctor.pam / "sudo-i").write_text("@include common-auth\n")
    doctor.state.chmod(0o755)


@pytest.mark.parametrize("lang,labels,fix", [("zh_CN.UTF-8", ("问题", "警告", "正常"), "修复："),
                                             ("zh_TW.UTF-8", ("問題", "警告", "正常"), "修正：")],
                         ids=["zh_CN", "zh_TW"])
def test_doctor_speaks_the_users_language_and_still_names_the_file_and_line(doctor, lang, labels, fix):
    _broken(doctor)
    english, local = doctor.run(), doctor.run(lang=lang)
    assert english.rc == local.rc == 1, (english, local)
    # The same findings, each in the user's language: its first column, its text and its
    # fix; every path, PAM line and command of the English one in it as it is.
    assert len(english.lines) == len(local.lines), (english.lines, local.lines)
    words = {"problem": labels[0], "warning": labels[1], "ok": labels[2]}
    for en, zh in zip(english.lines[:-1], local.lines[:-1]):
        if en.startswith(" "):
            assert en.strip().startswith("fix: ") and zh.strip().startswith(fix), (en, zh)
        else:
            assert zh.startswith(words[en.split()[0]]), (en, zh)
        assert zh.strip() != en.strip() and not zh.isascii(), (en, zh)
        for kept in re.findall(r"/[^\s`:(),;]+|`[^`]+`", en):
            assert kept in zh, (kept, en, zh)
    # A config line: the file and line as grep writes them, the key and the value as written.
    config = str(doctor.config)
    said = {"zh_CN.UTF-8": (f"{config}:2: `max_tries` 必须是介于 1 和 10 之间的整数，而不是 `20`；仍为 `2`",
                            f"修复：编辑 {config} 的第 2 行（localauth.conf(5)）"),
            "zh_TW.UTF-8": (f"{config}:3: 未知選項 `bogus`", f"修正：編輯 {config} 的第 3 行（localauth.conf(5)）")}[lang]
    i = next(i for i, l in enumerate(local.lines) if said[0] in l)
    assert local.lines[i].startswith(labels[0]), local.lines[i]
    assert local.lines[i + 1].strip().startswith(said[1]), local.lines[i + 1]
    # A PAM finding: the service file, the included file's line and the line to edit.
    sudo = str(doctor.pam / "sudo")
    [pam] = [l for l in local.lines if l.startswith(labels[0]) and f"{sudo}：" in l and "authsucc" in l]
    assert f"{doctor.pam}/common-auth:1 `auth [success=1 default=ignore] pam_unix.so nullok`" in pam, pam
    assert "第 5 行 `@include common-auth`" in pam, pam
    # The summary in the user's language too.
    assert local.last.startswith("doctor: ") and labels[0] in local.last, local.last


def test_doctor_json_is_the_same_in_every_language(doctor):
    import json
    _broken(doctor)
    runs = [json.loads(doctor.run("--json", lang=lang).out) for lang in ("C", "zh_CN.UTF-8", "zh_TW.UTF-8")]
    assert runs[0] == runs[1] == runs[2], runs
    j = runs[0]
    assert j["language"] == "en" and j["problems"] >= 4, j
    assert all(re.fullmatch(r"[a-z]+\.[a-z-]+", f["code"]) for f in j["findings"]), j
    assert all(f["message"].isascii() and (f["fix"] is None or f["fix"].isascii()) for f in j["findings"]), j
    codes = [f["code"] for f in j["findings"] if f["severity"] == "problem"]
    assert {"config.line", "state.mode", "pam.no-lockout-clear", "pam.fails-without-module"} <= set(codes), codes


# ---- KDE Plasma's services ---------------------------------------------------------------

STOCK_KDE_FINGERPRINT = """\
#%PAM-1.0
auth       requisite   pam_nologin.so
auth       required    pam_fprintd.so
auth       optional    pam_permit.so
"""


def plasma_layout(doctor, kde=GOOD_SUDO, finger=STOCK_KDE_FINGERPRINT, ours=False):
    """The sound setup moved to ROOT/etc/pam.d, with Plasma's files where Debian's
    libkscreenlocker6 puts them, the vendor directory ROOT/usr/lib/pam.d; ``ours``: the
    shipped pam.d/kde-fingerprint installed in ROOT/etc/pam.d, as the README says."""
    etc = doctor.root / "etc" / "pam.d"
    vendor = doctor.root / "usr" / "lib" / "pam.d"
    vendor.mkdir(parents=True)
    shutil.copytree(doctor.pam, etc)
    doctor.pam = etc
    (vendor / "kde").write_text(kde)
    (vendor / "kde-fingerprint").write_text(finger)
    if ours:
        shutil.copy(Path(__file__).resolve().parents[2] / "pam.d" / "kde-fingerprint", etc / "kde-fingerprint")
    return etc, vendor


def test_plasmas_stock_fingerprint_stack_is_a_warning_with_the_file_to_install(doctor):
    etc, vendor = plasma_layout(doctor)
    r = doctor.run()
    assert r.rc == 0, r
    i = next(i for i, l in enumerate(r.lines) if l.startswith("warning ") and "stock pam_fprintd" in l)
    assert f"{vendor}/kde-fingerprint" in r.lines[i], r.lines[i]
    assert r.lines[i + 1].strip() == (f"fix: install /usr/share/doc/localauth/examples/pam.d/kde-fingerprint as "
                                      f"{etc}/kde-fingerprint (it takes precedence over the vendor's file)"), r.lines
    assert any(l.startswith("ok ") and f"{vendor}/kde: the module stands aside" in l for l in r.lines), r.lines
    assert f"ok       KDE Plasma's lock screen is installed ({vendor}/kde)" in r.lines, r.lines


def test_plasma_with_the_shipped_fingerprint_stack_is_sound(doctor):
    etc, _ = plasma_layout(doctor, ours=True)
    r = doctor.run()
    assert r.rc == 0 and r.last == "doctor: 0 problems, 0 warnings", r
    assert f"ok       Plasma's lock screen asks for the finger through localauth ({etc}/kde-fingerprint)" in r.lines
    # The finger-only conversation is not told to use `sufficient` (that would let it succeed
    # on pam_nologin and pam_succeed_if alone).
    finger = [l for l in r.lines if f"{etc}/kde-fingerprint:" in l]
    assert len(finger) == 1 and finger[0].startswith("ok ") and "the finger only" in finger[0], finger


def test_plasmas_password_stack_without_authsucc_is_a_warning(doctor):
    _, vendor = plasma_layout(doctor, kde="#%PAM-1.0\n@include common-auth\n", ours=True)
    r = doctor.run()
    i = next(i for i, l in enumerate(r.lines) if l.startswith("warning ") and f"{vendor}/kde has no" in l)
    assert "lock screen neither clears a fingerprint lockout" in r.lines[i], r.lines[i]
    assert r.lines[i + 1].strip() == "fix: pam-auth-update --enable localauth localauth-authsucc", r.lines


def test_without_plasma_nothing_is_said_of_it(doctor):
    r = doctor.run()
    assert not [l for l in r.lines if "Plasma" in l or "kde" in l], r.lines
