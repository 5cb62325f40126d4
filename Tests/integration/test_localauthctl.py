"""localauthctl against the real fprintd with libfprint's virtual reader (testbed.py), a
throwaway account, a private state directory and config file.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_localauthctl.py
The tool is `$LOCALAUTHCTL`, build/bin/localauthctl with LOCALAUTH_SKIP_BUILD=1, or a
`swift build` of it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ctl_support import (BOOT_ID, PLACE, WAITING, Ctl, ThrowawayAccount,  # noqa: E402
                         password_entered, plain_run, read_state, write_state)
from ctl_fixtures import account, ctl_binary, ctl_on  # noqa: E402,F401  (fixtures)
from testbed import Bed  # noqa: E402

COMMANDS = ["status", "enable", "disable", "reset", "verify", "doctor"]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def ctl(ctl_binary, bed, account, tmp_path) -> Ctl:
    """The tool on the bed, with the account's right index finger enrolled as print f1."""
    return ctl_on(ctl_binary, bed, account, tmp_path)


def status(ctl: Ctl, user: str) -> dict:
    r = ctl.run("status", user, "--json")
    assert r.rc == 0 and len(r.lines) == 1, r
    return json.loads(r.out)


# ---- help and usage ---------------------------------------------------------------------

def test_help_lists_every_command_and_the_exit_codes(ctl_binary):
    r = plain_run([ctl_binary, "--help"])
    assert r.rc == 0, r
    for command in COMMANDS:
        assert f"  {command}" in r.out, r
    for code in ("0", "1", "2", "64", "67", "69", "77"):
        assert any(line.split()[:1] == [code] for line in r.lines), (code, r)
    assert "sensor-verify" not in r.out and "enrolled-set" not in r.out  # hidden tools


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(ctl_binary, command):
    r = plain_run([ctl_binary, command, "--help"])
    assert r.rc == 0 and r.err == "", r
    assert r.lines[0].startswith(f"usage: localauthctl {command}"), r
    assert "--help" in r.out


@pytest.mark.parametrize("argv", [
    [], ["bogus"], ["status", "a", "b"], ["status", "--bogus"], ["status", "--json=yes"],
    ["reset"], ["reset", "a", "b"], ["verify", "--scan-timeout"], ["verify", "--scan-timeout", "0"],
    ["status", "--bus-timeout", "forever"], ["enable", "a", "b"], ["disable", "--user"],
    ["status", "a", "--user", "b"], ["help", "bogus"], ["status", "--all", "root"],
    ["doctor", "--json=yes"], ["doctor", "a", "b"], ["doctor", "--bogus"],
])
def test_wrong_usage_is_64_and_one_line(ctl_binary, argv):
    r = plain_run([ctl_binary, *argv])
    assert r.rc == 64, r
    assert r.out == "" and len(r.err_lines) == 1, r
    assert r.err_lines[0].startswith("localauthctl: "), r


@pytest.mark.parametrize("argv", [
    ["status", "la-no-such-user-x"], ["reset", "la-no-such-user-x"],
    ["verify", "la-no-such-user-x"],
    ["doctor", "la-no-such-user-x"], ["enable", "--user", "la-no-such-user-x"],
    ["disable", "--user", "la-no-such-user-x"],
])
def test_unknown_user_is_67_and_one_line(ctl, argv):
    r = ctl.run(*argv)
    assert r.rc == 67, r
    assert len(r.err_lines) == 1 and "no such user: la-no-such-user-x" in r.err, r


# ---- root only --------------------------------------------------------------------------

def test_reset_by_a_non_root_user_is_refused(ctl, account):
    password_entered(ctl.state_dir, account.name, failures=5)
    before = read_state(ctl.state_dir, account.name)
    r = plain_run([*NOBODY, ctl.binary, "reset", account.name])
    assert r.rc == 77, r
    assert r.err_lines == ["localauthctl: reset: root only"], r
    assert read_state(ctl.state_dir, account.name) == before


@pytest.mark.parametrize("flag,value", [("--state-dir", "/tmp"), ("--dbus-address", "unix:path=/x"),
                                        ("--fprint-dir", "/tmp"), ("--config", "/dev/null")])
@pytest.mark.parametrize("command", ["status", "verify", "doctor"])
def test_privileged_options_only_from_root(ctl_binary, command, flag, value):
    r = plain_run([*NOBODY, ctl_binary, command, flag, value])
    assert r.rc == 77, r
    assert r.err_lines == [f"localauthctl: {command}: {flag} is for root only"], r


def test_non_root_cannot_read_or_change_another_user(ctl_binary, account):
    for argv in (["status", account.name], ["verify", account.name],
                 ["enable", "--user", account.name]):
        r = plain_run([*NOBODY, ctl_binary, *argv])
        assert r.rc == 77 and len(r.err_lines) == 1, (argv, r)


def test_non_root_verify_and_enable_need_root(ctl_binary):
    # nobody acting for itself: counting a failure needs the root-only state directory.
    for argv in (["verify"], ["enable"], ["disable"]):
        r = plain_run([*NOBODY, ctl_binary, *argv])
        assert r.rc == 77 and len(r.err_lines) == 1 and "needs root" in r.err, (argv, r)


# ---- status -----------------------------------------------------------------------------

def test_status_of_a_user_never_seen(ctl, account):
    s = status(ctl, account.name)
    assert s["user"] == account.name
    assert s["reader"] == {"available": True, "name": "Virtual device for debugging", "error": None}
    assert s["fingers"] == ["right-index-finger"]
    assert s["state"] == "fresh" and s["consecutive_failures"] == 0 and s["locked_out"] is False
    assert s["last_password"] is None and s["last_fingerprint"] is None
    assert s["decision"] == "password" and s["password_required"] == "never-used"
    assert s["enrolled_set"] == "not-trusted-yet"
    assert s["fingerprint_login"] is True and s["opt_in"] == "optional"
    assert read_state(ctl.state_dir, account.name) is None  # reading wrote nothing


def test_status_json_matches_the_state_file(ctl, account):
    now = int(time.time())
    password_entered(ctl.state_dir, account.name, failures=2, last_password=now - 3600,
                     last_fingerprint=now - 120, terminal="pts/3")
    stored = read_state(ctl.state_dir, account.name)
    s = status(ctl, account.name)
    assert s["consecutive_failures"] == stored["failures"] == 2
    assert s["last_password"] == stored["last_password"]
    assert s["last_fingerprint"] == stored["last_fingerprint"]
    assert s["switch"] is (stored["opted_in"] == 1) is False
    assert s["password_this_boot"] is (stored["boot_id"] == BOOT_ID) is True
    assert s["locked_out"] is False and s["lockout_threshold"] == 5
    assert s["decision"] == "fingerprint" and s["password_required"] is None
    assert s["state"] == "ok" and s["state_error"] is None


HOUR = 3600


@pytest.mark.parametrize("fields,reason", [
    (dict(failures=5), "lockout"),
    (dict(boot_id="00000000-0000-0000-0000-000000000000"), "reboot"),
    (dict(last_password=-49 * HOUR, last_fingerprint=-49 * HOUR), "idle"),
    (dict(last_password=-157 * HOUR, last_fingerprint=-5 * HOUR), "stale"),
])
def test_status_names_the_rule_that_requires_the_password(ctl, account, fields, reason):
    now = int(time.time())
    fields = {k: now + v if k.startswith("last_") else v for k, v in fields.items()}
    fields.setdefault("last_fingerprint", now - 60)
    password_entered(ctl.state_dir, account.name, **fields)
    s = status(ctl, account.name)
    assert s["decision"] == "password" and s["password_required"] == reason, s
    assert s["locked_out"] is (reason == "lockout")
    text = ctl.run("status", account.name)
    assert text.rc == 0
    assert any(line.startswith("next sign-in:") and "password first" in line
               for line in text.lines), text


def test_status_reads_the_config_with_the_modules_parser(ctl, account):
    ctl.write_config("lockout_threshold = 3\nopt_in = required\nfrobnicate = 1\n")
    password_entered(ctl.state_dir, account.name, failures=3)
    s = status(ctl, account.name)
    assert s["lockout_threshold"] == 3 and s["locked_out"] is True
    assert s["password_required"] == "lockout"
    assert s["opt_in"] == "required" and s["fingerprint_login"] is False
    assert s["config_issues"] == 1  # the unknown key
    text = ctl.run("status", account.name)
    assert "3 in a row (lockout at 3)" in text.out, text
    assert "1 issue(s), see localauthctl doctor" in text.out, text


def test_status_json_escapes_what_it_prints(ctl, account, tmp_path):
    odd = tmp_path / 'a "quoted"\\back\tslash\x01 é.conf'
    odd.write_text("max_tries = 2\n")
    odd.chmod(0o644)
    ctl.config = odd
    s = status(ctl, account.name)
    assert s["config"] == str(odd) and s["config_issues"] == 0


def test_status_of_a_damaged_state_file(ctl, account):
    (ctl.state_dir / f"{account.name}.state").write_bytes(b"localauth-state 1\nfailures=0\n")
    (ctl.state_dir / f"{account.name}.state").chmod(0o600)
    s = status(ctl, account.name)
    assert s["state"] == "damaged" and "truncated" in s["state_error"]
    assert s["locked_out"] is True and s["password_required"] == "state-unreadable"


def test_status_sees_a_changed_enrolled_set(ctl, account):
    password_entered(ctl.state_dir, account.name, trusted="0" * 64)
    s = status(ctl, account.name)
    assert s["enrolled_set"] == "changed"
    assert s["decision"] == "password" and s["password_required"] == "enrollment-changed"


def test_status_with_an_unsafe_state_directory(ctl, account):
    ctl.state_dir.chmod(0o755)
    s = status(ctl, account.name)
    assert s["state"] == "unreadable" and "expected 0700" in s["state_error"], s
    assert s["decision"] == "unavailable" and s["decision_reason"] == "state-store", s
    r = ctl.run("verify", account.name)
    assert r.rc == 69 and r.last == "biometryNotAvailable", r
    r = ctl.run("reset", account.name)
    assert r.rc == 69 and len(r.err_lines) == 1 and "expected 0700" in r.err, r


def test_status_without_a_reader(ctl_binary, account, tmp_path):
    with Bed(reader=False) as bed:
        state = tmp_path / "s"
        state.mkdir(mode=0o700)
        (tmp_path / "c").write_text("")
        c = Ctl(ctl_binary, bed, state, tmp_path / "c")
        password_entered(state, account.name)
        s = status(c, account.name)
    assert s["reader"]["available"] is False and s["reader"]["error"] == "biometryNotAvailable"
    assert s["decision"] == "unavailable" and s["fingers"] is None


def test_status_of_yourself_without_root_leaves_the_state_out(ctl_binary, account):
    as_user = ["setpriv", f"--reuid={account.name}", f"--regid={account.name}", "--clear-groups"]
    r = plain_run([*as_user, ctl_binary, "status", "--json"])
    assert r.rc == 0, r
    s = json.loads(r.out)
    assert s["user"] == account.name and s["state"] == "unreadable"
    assert "root" in s["state_error"] and s["decision"] == "unknown"


# ---- verify: the engine, counted -------------------------------------------------------

def test_verify_match_resets_the_count(ctl, account):
    password_entered(ctl.state_dir, account.name, failures=2)
    r = ctl.run("verify", account.name, feed=["SCAN f1"])
    assert r.rc == 0, r
    assert r.lines == [PLACE, WAITING, "Fingerprint recognized", "match"], r
    s = read_state(ctl.state_dir, account.name)
    assert s["failures"] == 0 and abs(s["last_fingerprint"] - time.time()) < 10


def test_verify_failures_count_toward_the_lockout(ctl, account):
    password_entered(ctl.state_dir, account.name)
    r = ctl.run("verify", account.name, feed=["SCAN f2"] * 3)
    assert r.rc == 1 and r.last == "authenticationFailed", r
    assert r.lines.count(PLACE) == 3 and "Fingerprint not recognized - 2 tries left" in r.lines, r
    assert read_state(ctl.state_dir, account.name)["failures"] == 3
    # Two more failed matches reach the lockout (5), though the prompt allows three.
    r = ctl.run("verify", account.name, feed=["SCAN f2"] * 2)
    assert r.rc == 2 and r.last == "biometryLockout lockout", r
    assert "Fingerprint locked after 5 failed attempts - enter your password to unlock" in r.lines
    assert read_state(ctl.state_dir, account.name)["failures"] == 5
    # Locked out: refused before the reader is touched, as a login would be.
    r = ctl.run("verify", account.name)
    assert r.rc == 2 and r.last == "biometryLockout lockout" and PLACE not in r.lines, r
    assert "locked out after 5 consecutive failed matches" in r.err, r


def test_verify_of_a_user_never_seen_needs_the_password_first(ctl, account):
    # Apple's code for every "password first" rule is biometryLockout; the outcome line
    # names the rule, which is no lockout, as status says.
    r = ctl.run("verify", account.name)
    assert r.rc == 2 and r.last == "biometryLockout never-used", r
    assert "Your password is required before fingerprints can be used" in r.lines, r
    assert len(r.err_lines) == 1 and "never entered here" in r.err, r
    s = status(ctl, account.name)
    assert s["locked_out"] is False and s["password_required"] == "never-used", s
    lines = ctl.run("status", account.name).lines
    assert any(l.startswith("locked out:") and l.endswith(" no") for l in lines), lines


def test_verify_with_no_prints_is_unavailable(ctl_binary, bed, account, tmp_path):
    state = tmp_path / "s"
    state.mkdir(mode=0o700)
    (tmp_path / "c").write_text("")
    c = Ctl(ctl_binary, bed, state, tmp_path / "c")
    password_entered(state, account.name)
    r = c.run("verify", account.name)
    assert r.rc == 69 and r.last == "biometryNotEnrolled", r


# ---- reset ------------------------------------------------------------------------------

def test_reset_clears_the_lockout_and_keeps_the_rest(ctl, account):
    password_entered(ctl.state_dir, account.name, failures=5, opted_in=True)
    before = read_state(ctl.state_dir, account.name)
    r = ctl.run("reset", account.name)
    assert r.rc == 0, r
    assert r.lines == [f"reset {account.name}: 5 consecutive failed matches cleared"], r
    after = read_state(ctl.state_dir, account.name)
    assert after["failures"] == 0
    assert {k: v for k, v in after.items() if k != "failures"} == \
        {k: v for k, v in before.items() if k != "failures"}
    assert status(ctl, account.name)["decision"] == "fingerprint"


def test_reset_with_nothing_recorded_writes_nothing(ctl, account):
    r = ctl.run("reset", account.name)
    assert r.rc == 0 and "nothing to reset" in r.out, r
    assert read_state(ctl.state_dir, account.name) is None


def test_reset_replaces_a_damaged_state(ctl, account):
    path = write_state(ctl.state_dir, account.name, failures=1)
    path.write_bytes(path.read_bytes().replace(b"failures=1", b"failures=0"))  # checksum off
    r = ctl.run("reset", account.name)
    assert r.rc == 0 and "damaged state replaced" in r.out, r
    assert r.lines[-1] == (f"reset {account.name}: the password is still required before the next "
                           "fingerprint: the password was never entered here"), r
    assert read_state(ctl.state_dir, account.name) == {"failures": 0, "opted_in": 0}
    assert (ctl.state_dir / f"{account.name}.state.damaged").exists()
    # A fresh state still needs the password before any finger.
    assert status(ctl, account.name)["password_required"] == "never-used"


@pytest.mark.parametrize("lang,expected", [
    ("en_US.UTF-8", "Your password is required after 24 hours without signing in"),
    ("zh_CN.UTF-8", "24 小时未登录，需要输入密码"),
    ("zh_TW.UTF-8", "24 小時未登入，需要輸入密碼"),
])
def test_the_idle_rule_is_stated_with_the_configured_hours(ctl, account, lang, expected):
    ctl.write_config("password_after_idle = 24\n")
    now = int(time.time())
    password_entered(ctl.state_dir, account.name, last_password=now - 25 * HOUR,
                     last_fingerprint=now - 25 * HOUR)
    r = ctl.run("verify", account.name, env={**os.environ, "LANG": lang, "LC_ALL": "", "LANGUAGE": ""})
    assert r.rc == 2 and r.last == "biometryLockout idle", r
    assert expected in r.lines, r
    assert not any("48" in line for line in r.lines), r
    assert "24" in r.err and "password_after_idle" in r.err and "48" not in r.err, r
    if lang.startswith("en"):
        assert "no sign-in for 24 hours (password_after_idle)" in r.err, r
    s = status(ctl, account.name)
    assert s["password_required"] == "idle" and s["locked_out"] is False, s
    assert "24 hours" in s["decision_text"], s



# ---- one way to name the user, and what a command would change -------------------------

def test_help_fits_80_columns_and_help_command_is_command_help(ctl_binary):
    texts = {"--help": plain_run([ctl_binary, "--help"])}
    for command in COMMANDS:
        texts[command] = plain_run([ctl_binary, command, "--help"])
        assert plain_run([ctl_binary, "help", command]).out == texts[command].out, command
    for name, r in texts.items():
        assert r.rc == 0, r
        too_long = [l for l in r.lines if len(l) > 80]
        assert too_long == [], (name, too_long)


def test_version_is_the_packages(ctl_binary):
    import subprocess
    version = subprocess.run(["dpkg-parsechangelog", "-l", str(Path(__file__).resolve().parents[2]
                                                                   / "packaging" / "changelog"),
                              "-S", "Version"], capture_output=True, text=True, check=True).stdout.strip()
    r = plain_run([ctl_binary, "--version"])
    assert r.rc == 0 and r.lines == [f"localauthctl {version}"], r


def test_user_and_dash_dash_user_are_the_same(ctl, account):
    password_entered(ctl.state_dir, account.name, failures=2)
    a = ctl.run("status", account.name, "--json")
    b = ctl.run("status", "--user", account.name, "--json")
    assert a.rc == b.rc == 0, (a, b)
    strip = lambda r: {k: v for k, v in json.loads(r.out).items() if k != "now"}
    assert strip(a) == strip(b)
    for command in ("reset", "doctor", "verify", "enable", "disable"):
        r = plain_run([ctl.binary, command, "--help"])
        assert f"usage: localauthctl {command} [USER" in r.lines[0] or \
            f"usage: localauthctl {command} USER" in r.lines[0], r
        assert "--user USER" in r.out, r


@pytest.mark.parametrize("command", ["disable", "enable"])
def test_the_switch_under_opt_in_optional_changes_nothing_and_says_so(ctl, account, command):
    password_entered(ctl.state_dir, account.name, opted_in=True)
    before = read_state(ctl.state_dir, account.name)
    for argv in ([command, account.name], [command, "--user", account.name]):
        r = ctl.run(*argv)
        assert r.rc == 2, r
        assert "Fingerprint login is off" not in r.out and "Fingerprint login is on" not in r.out, r
        assert len(r.err_lines) == 1 and f"{command}: nothing to change: opt_in = optional" in r.err, r
        assert f"fingerprint login is on for every user with enrolled fingers, {account.name} included" in r.err
    assert read_state(ctl.state_dir, account.name) == before
    assert status(ctl, account.name)["decision"] == "fingerprint"


def test_a_refused_flag_value_is_named_and_nothing_is_kept(ctl_binary):
    r = plain_run([ctl_binary, "status", "--bus-timeout", "0"])
    assert r.rc == 64, r
    assert r.err_lines == ["localauthctl: status: --bus-timeout must be a number from 0.1 to 30, "
                           "not '0' (see localauthctl status --help)"], r


def test_status_all_lists_every_user_with_state(ctl, account):
    password_entered(ctl.state_dir, account.name, failures=5)
    with ThrowawayAccount() as other:
        password_entered(ctl.state_dir, other.name, failures=1)
        r = ctl.run("status", "--all")
        assert r.rc == 0, r
        assert r.lines[0].split()[:2] == ["USER", "FAILED"], r
        rows = {l.split()[0]: l.split() for l in r.lines[1:]}
        assert rows[account.name][1:3] == ["5/5", "lockout"], r
        assert rows[other.name][1:3] == ["1/5", "-"], r
        listed = json.loads(ctl.run("status", "--all", "--json").out)
        by_user = {o["user"]: o for o in listed}
        assert by_user[account.name]["locked_out"] is True
        assert by_user[account.name]["password_required"] == "lockout"
        assert by_user[other.name]["consecutive_failures"] == 1 and by_user[other.name]["locked_out"] is False
    r = plain_run([*NOBODY, ctl.binary, "status", "--all"])
    assert r.rc == 77, r


# ---- configuration: drop-ins, sources, one file per installation ------------------------

def test_drop_ins_override_the_main_file_in_order_and_config_says_where(ctl, account):
    ctl.write_config("lockout_threshold = 7   # the site's number\nmax_tries = 2\ndebug\n")
    d = Path(str(ctl.config) + ".d")
    d.mkdir(mode=0o755)
    (d / "20-lab.conf").write_text("lockout_threshold = 3\n")
    (d / "10-site.conf").write_text("lockout_threshold = 4\nmax_tries = 1\n")
    (d / "99-notes.txt").write_text("lockout_threshold = 99\n")  # not *.conf: not read
    for f in d.iterdir():
        f.chmod(0o644)
    r = ctl.run("config")
    assert r.rc == 0 and r.err == "", r
    rows = {l.split(" = ")[0]: l for l in r.lines if " = " in l}
    assert rows["lockout_threshold"].split("#")[0].strip() == "lockout_threshold = 3", rows
    assert rows["lockout_threshold"].endswith(f"# {d}/20-lab.conf:1"), rows
    assert rows["max_tries"].endswith(f"# {d}/10-site.conf:2"), rows
    assert rows["debug"].split("#")[0].strip() == "debug = yes", rows
    assert rows["debug"].endswith(f"# {ctl.config}:3"), rows
    assert rows["policy"].endswith("# default"), rows
    j = json.loads(ctl.run("config", "--json").out)
    assert j["files"] == [str(ctl.config), f"{d}/10-site.conf", f"{d}/20-lab.conf"], j
    assert j["options"]["lockout_threshold"] == "3" and j["sources"]["policy"] == "default", j
    # The rules follow: 3 failures lock out, as the drop-in says.
    password_entered(ctl.state_dir, account.name, failures=3)
    s = status(ctl, account.name)
    assert s["lockout_threshold"] == 3 and s["locked_out"] is True, s
    # A drop-in directory others can write is not read, and while it is there the
    # fingerprint is off: said, and the exit status says a problem.
    d.chmod(0o777)
    r = ctl.run("config")
    assert r.rc == 1 and "lockout_threshold = 7" in r.out, r
    assert r.err_lines == [f"localauthctl: config: {d} has mode 0777: its group and every user can write it: not read; "
                           "fingerprint sign-in is off until it is fixed (the password only)"], r
    j = json.loads(ctl.run("config", "--json").out)
    assert j["untrusted"] == [f"{d} has mode 0777: its group and every user can write it"], j
    s = status(ctl, account.name)
    assert s["decision"] == "password" and s["decision_reason"] == "config-untrusted", s


def test_a_bad_value_keeps_the_earlier_files_value_and_says_so(ctl, account):
    # Not "the default is kept": the main file's value stays, and the message says which.
    ctl.write_config("max_tries = 2\n")
    d = Path(str(ctl.config) + ".d")
    d.mkdir(mode=0o755)
    (d / "20-lab.conf").write_text("max_tries = 99\n")
    (d / "20-lab.conf").chmod(0o644)
    r = ctl.run("config")
    assert r.rc == 1, r
    rows = {l.split(" = ")[0]: l for l in r.lines if " = " in l}
    assert rows["max_tries"].split("#")[0].strip() == "max_tries = 2", rows
    assert rows["max_tries"].endswith(f"# {ctl.config}:1"), rows
    assert r.err_lines == [f"localauthctl: config: {d}/20-lab.conf:1: `max_tries` must be a whole number "
                           "from 1 to 10, not `99`; it stays `2`"], r
    password_entered(ctl.state_dir, account.name)
    assert "up to 2 tries" in status(ctl, account.name)["decision_text"]


def test_status_says_what_trusts_the_enrolled_set(ctl, account):
    # With opt_in = optional a matched finger trusts it as the password does.
    password_entered(ctl.state_dir, account.name)
    row = lambda: next(l for l in ctl.run("status", account.name).lines if l.startswith("enrolled set:"))
    assert row().endswith("not trusted yet (the next password or matched finger records it)"), row()
    r = ctl.run("verify", account.name, feed=["SCAN f1"])
    assert r.rc == 0 and r.last == "match", r
    assert row().endswith(" trusted") and status(ctl, account.name)["enrolled_set"] == "trusted", row()
    ctl.write_config("opt_in = required\n")
    password_entered(ctl.state_dir, account.name, opted_in=True)
    assert row().endswith("not trusted yet (localauthctl enable records it)"), row()


def test_a_prefix_installation_reads_its_own_config(tmp_path):
    from system import Installation
    with Installation() as inst:
        assert inst.config.is_file(), "scripts/install --prefix installs the file it reads"
        inst.config.write_text("max_tries = 2\n")
        r = plain_run([str(inst.ctl), "config"])
        assert r.rc == 0, r
        assert r.lines[0] == f"# {inst.config}, then {inst.config}.d/*.conf", r
        assert any(l.startswith("max_tries = 2 ") and l.endswith(f"# {inst.config}:1") for l in r.lines), r


# ---- audit records and the journal -------------------------------------------------------

@pytest.mark.alone("the machine has one audit daemon")
def test_a_lockout_and_a_reset_are_audited_like_pam_faillock(ctl, account):
    from recorders import AuditDaemon
    password_entered(ctl.state_dir, account.name, failures=3)
    with AuditDaemon() as audit:
        r = ctl.run("verify", account.name, feed=["SCAN f2"] * 2)
        assert r.rc == 2 and r.last == "biometryLockout lockout", r
        anomalies = [l for l in audit.search("ANOM_LOGIN_FAILURES") if f'acct="{account.name}"' in l]
        assert len(anomalies) == 1 and "op=localauth-lockout" in anomalies[0], anomalies
        # The tool's full path, as pam_faillock's records carry theirs (`ausearch -x`).
        assert f'exe="{os.path.realpath(ctl.binary)}"' in anomalies[0], anomalies
        locks = [l for l in audit.search("RESP_ACCT_LOCK") if f'acct="{account.name}"' in l]
        assert len(locks) == 1, locks
        # Refused while locked out: no second "lockout began".
        assert ctl.run("verify", account.name).rc == 2
        r = ctl.run("reset", account.name)
        assert r.rc == 0, r
        resets = [l for l in audit.search("USER_MGMT") if f'acct="{account.name}"' in l]
        assert len(resets) == 1 and "op=localauth-reset" in resets[0], resets
        assert len([l for l in audit.search("ANOM_LOGIN_FAILURES") if f'acct="{account.name}"' in l]) == 1


def test_lockout_events_carry_message_ids_in_the_journal(ctl, account):
    from recorders import journal_capture
    ids = {"began": "4a38a0e323504ceeb7478faacf9bffcb", "cleared": "f11b02141c93420d8b8d8f5ff3ebad41"}
    password_entered(ctl.state_dir, account.name, failures=5)
    got = journal_capture(ctl.argv("reset", account.name))
    assert got["rc"] == 0, got
    [entry] = [e for e in got["entries"] if e.get("MESSAGE_ID") == ids["cleared"]]
    assert entry["LOCALAUTH_USER"] == account.name and entry["LOCALAUTH_FAILURES"] == "5", entry
    assert entry["LOCALAUTH_CLEARED_BY"] == "reset" and entry["LOCALAUTH_ACTOR_UID"] == "0", entry
    assert entry["SYSLOG_IDENTIFIER"] == "localauthctl" and entry["PRIORITY"] == "5", entry
    assert not [e for e in got["entries"] if e.get("MESSAGE_ID") == ids["began"]]


def test_a_reset_below_the_lockout_records_no_lockout_cleared(ctl, account):
    from recorders import journal_capture
    password_entered(ctl.state_dir, account.name, failures=2)
    got = journal_capture(ctl.argv("reset", account.name))
    assert got["rc"] == 0, got
    assert "2 consecutive failed matches cleared" in got["out"], got
    assert not [e for e in got["entries"] if e.get("MESSAGE_ID") == "f11b02141c93420d8b8d8f5ff3ebad41"]


# ---- messages through gettext --------------------------------------------------------------

@pytest.mark.parametrize("env,expected", [
    ({"LANG": "en_US.UTF-8", "LANGUAGE": "zh_TW"}, "使用指紋前需要先輸入密碼"),
    ({"LANG": "zh_CN.UTF-8"}, "使用指纹前需要先输入密码"),
    ({"LANG": "de_DE.UTF-8", "LANGUAGE": "de:zh_TW:zh_CN"}, "使用指紋前需要先輸入密碼"),
    ({"LC_ALL": "zh_CN.UTF-8", "LANG": "zh_TW.UTF-8"}, "使用指纹前需要先输入密码"),
    ({"LC_MESSAGES": "zh_TW.UTF-8", "LANG": "zh_CN.UTF-8"}, "使用指紋前需要先輸入密碼"),
    ({"LANG": "C", "LANGUAGE": "zh_TW"}, "Your password is required before fingerprints can be used"),
])
def test_the_language_is_chosen_as_gettext_chooses_it(ctl, account, env, expected):
    clean = {k: v for k, v in os.environ.items() if k not in ("LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    r = ctl.run("verify", account.name, env={**clean, **env})
    assert r.rc == 2, r
    assert expected in r.lines, r


def test_the_tools_errors_are_translated_too(ctl_binary):
    env = {"PATH": os.environ["PATH"], "LANG": "zh_CN.UTF-8"}
    r = plain_run([ctl_binary, "status", "la-no-such-user-x"], env=env)
    assert r.rc == 67 and r.err_lines == ["localauthctl: status: 没有这个用户：la-no-such-user-x"], r
    r = plain_run([ctl_binary, "bogus"], env={**env, "LANGUAGE": "zh_TW"})
    assert r.rc == 64 and r.err_lines == ["localauthctl: 未知命令「bogus」（參見 localauthctl --help）"], r


def test_every_message_is_in_every_catalogue():
    """Each tr()/trn() message id of the sources is in po/en.po, po/zh_CN.po and
    po/zh_TW.po with a translation, and msgfmt -c accepts each file."""
    import re
    import subprocess
    repo = Path(__file__).resolve().parents[2]
    ids = set()
    for f in (repo / "Sources").rglob("*.swift"):
        code = "\n".join(l for l in f.read_text().splitlines() if not l.lstrip().startswith("//"))
        for m in re.finditer(r'\btrn?\(\s*\w+,\s*"((?:[^"\\]|\\.)*)"', code):
            ids.add(m.group(1).replace('\\"', '"'))
    assert len(ids) > 80, len(ids)
    for lang in ("en", "zh_CN", "zh_TW"):
        po = repo / "po" / f"{lang}.po"
        check = subprocess.run(["msgfmt", "-c", "--statistics", "-o", "/dev/null", str(po)],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        assert "untranslated" not in check.stderr and "fuzzy" not in check.stderr, check.stderr
        entries = set(m.replace('\\"', '"') for m in re.findall(r'^msgid "((?:[^"\\]|\\.)+)"$', po.read_text(), re.M))
        assert ids <= entries, (lang, sorted(ids - entries))
        assert entries <= ids, (lang, "unused entries", sorted(entries - ids))


def test_every_english_message_shows_on_the_linux_console():
    """The text console's font has no em dash (U+2014) or ellipsis (U+2026): they showed
    as boxes in two-part messages ("Fingerprint not recognized — use your password") at
    login and sudo on a virtual console. Every English message is ASCII."""
    import re
    po = (Path(__file__).resolve().parents[2] / "po" / "en.po").read_text()
    ids = re.findall(r'^(?:msgid|msgid_plural|msgstr) "((?:[^"\\]|\\.)*)"$', po, re.M)
    assert len(ids) > 100, len(ids)
    assert [m for m in ids if not m.isascii()] == []
    from messages import LOCKED, UNAVAILABLE
    assert LOCKED == "Fingerprint locked after 5 failed attempts - enter your password to unlock"
    assert UNAVAILABLE == "Fingerprint sign-in is not available - use the password"


def test_your_own_status_without_root_through_the_service(bed_factory, account, tmp_path, syslog):
    """A user reads their own failures, lockout and times without root: localauthctl asks
    localauthd (LOCALAUTH_SERVICE names the test's), whose helper answers for the peer's uid
    only. (polkit allows the user to list their own prints, as it does in an active desktop
    session.) With the service gone the state is unreadable, and says why."""
    from servicebed import ServiceInstallation
    bed = bed_factory(polkit="allow")
    bed.enroll(account.name, "right-index-finger", "f1")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with ServiceInstallation() as inst:
        inst.write_config(f"dbus_address = {bed.address}\nfprint_dir = {bed.state_dir}\n"
                          f"state_dir = {state}\nlockout_threshold = 4\n")
        now = int(time.time())
        password_entered(state, account.name, failures=2, last_password=now - 3600,
                         last_fingerprint=now - 60)
        as_user = ["setpriv", f"--reuid={account.name}", f"--regid={account.name}", "--clear-groups"]
        env = {**os.environ, "LOCALAUTH_SERVICE": str(inst.service_socket)}

        def run(*args):
            return plain_run([*as_user, str(inst.ctl), "status", *args], env=env)

        with inst.serve(syslog):
            r = run("--json")
            assert r.rc == 0, r
            s = json.loads(r.out)
            assert s["state_source"] == "localauthd" and s["state"] == "ok", s
            assert s["consecutive_failures"] == 2 and s["lockout_threshold"] == 4 and s["locked_out"] is False, s
            assert s["last_password"] == now - 3600 and s["password_this_boot"] is True, s
            assert s["decision"] == "fingerprint", (s["reader"], s["decision_text"])
            password_entered(state, account.name, failures=4)
            s = json.loads(run("--json").out)
            assert s["locked_out"] is True and s["password_required"] == "lockout", s
            # Another user's state stays root's: the service answers for the caller only.
            r = run("root")
            assert r.rc == 77, r
            text = run()
            assert "yours, read through localauthd" in text.out, text
            assert "4 in a row (lockout at 4)" in text.out, text
        # The service stopped (its socket gone): nothing read, and the reason given.
        s = json.loads(run("--json").out)
        assert s["state_source"] is None and s["consecutive_failures"] is None, s
        assert s["state_error"].startswith(f"readable by root only (sudo localauthctl status {account.name}); "
                                           f"localauthd at {inst.service_socket}: "), s


def test_status_reads_in_the_users_language(ctl, account):
    password_entered(ctl.state_dir, account.name, failures=2)
    clean = {k: v for k, v in os.environ.items() if k not in ("LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    r = ctl.run("status", account.name, env={**clean, "LANG": "zh_TW.UTF-8"})
    assert r.rc == 0, r
    rows = dict((l.split(":", 1)[0], l.split(":", 1)[1].strip()) for l in r.lines if ":" in l)
    assert rows["比對失敗"] == "連續 2 次（5 次鎖定）", rows
    assert rows["已鎖定"] == "否", rows
    assert rows["下次登入"].startswith("指紋："), rows
    # The values line up on a terminal, where a CJK character takes two cells.
    import unicodedata
    width = lambda text: sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    columns = {width(l[:len(l) - len(l.split(":", 1)[1].lstrip())]) for l in r.lines if ":" in l}
    assert columns == {21}, (columns, r.lines)
    # JSON keys stay the same in every language.
    j = json.loads(ctl.run("status", account.name, "--json", env={**clean, "LANG": "zh_TW.UTF-8"}).out)
    assert j["consecutive_failures"] == 2 and j["decision"] == "fingerprint", j


def test_reset_and_doctor_speak_the_users_language_with_plural_forms(ctl, account):
    clean = {k: v for k, v in os.environ.items() if k not in ("LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    password_entered(ctl.state_dir, account.name, failures=1)
    r = ctl.run("reset", account.name)
    assert r.lines == [f"reset {account.name}: 1 consecutive failed match cleared"], r  # singular
    password_entered(ctl.state_dir, account.name, failures=5)
    r = ctl.run("reset", account.name, env={**clean, "LANG": "zh_CN.UTF-8"})
    assert r.rc == 0 and r.lines == [f"重置 {account.name}：已清除连续 5 次匹配失败"], r
    r = ctl.run("doctor", account.name, env={**clean, "LANGUAGE": "zh_TW", "LANG": "en_US.UTF-8"})
    assert r.last.startswith("doctor: ") and "個問題" in r.last and "個警告" in r.last, r
