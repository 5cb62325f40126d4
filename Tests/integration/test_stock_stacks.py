"""The stacks pam-auth-update writes, driven by the real programs through their own stock
service files: sudo, sudo -i (Debian's sudo-i), su, login, pkexec (polkit-1), doas and a
screen locker (vlock).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_stock_stacks.py

Each test has a desktop in a private mount namespace (desktop.Desktop) over the machine's
own /etc, /var/lib/pam, debconf database and PAM module directory: the product's profiles
are added to /usr/share/pam-configs, Debian's own `pam-auth-update --enable` runs there
on the machine's real common-* files, and the module is where PAM finds it by its plain
name. No service file is written by the test: /etc/pam.d/sudo, sudo-i, su, login, doas,
/usr/lib/pam.d/polkit-1 and /etc/pam.d/other (vlock ships none) are the machine's, each
including common-auth. What the test adds in the namespace: a sudoers drop-in and
/etc/doas.conf letting the throwaway user run commands as root, /etc/security/localauth.conf
(the bed's prints, a state directory of the test's), and polkitd's rule that pkexec asks
the subject's own password (test_polkit.py says why). The installation's localauthd runs
in the namespace at the socket its module names (desktop.Desktop.serve: the module starts
no helper, so the finger is reached through it only). Nothing on the machine changes.

For each program: the first use takes the password; the finger then runs the command;
three wrong fingers, then the password; five failures lock fingerprints out (no scan,
straight to the password, a wrong password clears nothing); the password clears it; and
where nobody can be at the reader (the password from a pipe, a remote host, an agent with
no terminal) no scan happens at all.
"""
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pexpect
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from pamenv import drive_spec  # noqa: E402
from desktop import PROFILES, LoginSession, UserDesktop  # noqa: E402
from logind_bus import LogindBus  # noqa: E402
from polkit_agents import AUTH_SELF, PKEXEC, dialog  # noqa: E402
from messages import ENROLLED, OTHER, FIRST_USE, LOCKED, UNAVAILABLE  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)
from scan_events import ScanEvents  # noqa: E402

ASK_FINGER = re.compile(r"Swipe your right index finger across the fingerprint reader")
SKIP_PROMPT = re.compile(r"[(（][^\r\n]*[)）] ?")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# localauthd's line for a request it handed to a helper (the module reaches the finger only
# through it: the desktop serves the installation's localauthd, desktop.Desktop.serve).
HELPER_STARTED = re.compile(r"^uid \d+ pid \d+ \([^)]*\): helper pid \d+")
FAILED = re.compile(r"Login incorrect|Authentication failure|Sorry, try again|"
                    r"incorrect password|AUTHENTICATION FAILED|Permission denied")


@dataclass(frozen=True)
class Caller:
    name: str
    argv: tuple              # {user} and {target} are filled in
    prompt: str              # the password prompt (a regular expression)
    run_as: str = "user"     # "user", "runner" (su: another user) or "root" (login)
    terminal: bool = True    # the finger prompt is followed by the skip prompt
    before: str = ""         # what the program asks first (vlock: press Enter)
    shell: bool = False      # login: a shell to run `id -un` in
    owner: bool = True       # run by the account's owner, so told the account's state

    @property
    def first_use(self):
        return FIRST_USE if self.owner else UNAVAILABLE

    @property
    def locked(self):
        return LOCKED if self.owner else UNAVAILABLE


CALLERS = {c.name: c for c in [
    Caller("sudo", ("sudo", "-k", "id", "-un"), r"\[sudo\] password for \S+: "),
    Caller("sudo-i", ("sudo", "-k", "-i", "id", "-un"), r"\[sudo\] password for \S+: "),
    Caller("su", ("su", "-", "{target}", "-c", "id -un"), r"(^|\n)Password: ", run_as="runner",
           owner=False),
    Caller("login", ("/bin/login", "{target}"), r"(^|\n)Password: ", run_as="root", shell=True,
           owner=False),
    Caller("doas", ("doas", "id", "-un"), r"doas \(\S+\) password: "),
    Caller("vlock", ("vlock", "-c"), r"(^|\n)\S*'?s? ?Password: ",
           before=r"Please press \[ENTER\] to unlock"),
    Caller("pkexec", ("/bin/sh", "-c", PKEXEC), r"(^|\n)Password: ", terminal=False),
]}
# What a successful run prints last (vlock prints nothing: its status says it).
SUCCESS_LINE = {"sudo": "root", "sudo-i": "root", "su": "{target}", "login": "{target}",
                "doas": "root", "pkexec": "root", "vlock": None}
PROGRAMS = {"sudo": "sudo", "sudo-i": "sudo", "su": "su", "login": "/bin/login",
            "doas": "doas", "vlock": "vlock", "pkexec": "pkexec"}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


def present(name):
    return shutil.which(PROGRAMS[name]) is not None or Path(PROGRAMS[name]).is_file()


@dataclass
class Run(ScanEvents):
    ok: bool
    screen: list
    results: list
    events: list
    prompts: int
    output: str = field(default="", repr=False)
    served: list = field(default_factory=list, repr=False)   # localauthd's lines

    def shown(self, text):
        return any(text in line for line in self.screen)


class Stock(UserDesktop):
    """A desktop where pam-auth-update enabled the product's profiles; a throwaway user
    (the one who authenticates, right index finger enrolled) and another (su's runner)."""

    def __init__(self, inst, bed, syslog, user, runner):
        self.runner = runner
        super().__init__(inst, bed, syslog, user, self._prepare)

    def _prepare(self, desktop):
        desktop.pam_auth_update("--enable", *sorted(p.name for p in PROFILES.iterdir()))
        desktop.sudoers(self.user)
        desktop.doas(self.user)

    def failures(self) -> str:
        return self.state()["failures"]

    def drive(self, caller: Caller, fingers=(), answers=(), argv=None, piped=False,
              **namespace) -> Run:
        """Runs the caller's program on a terminal: presents ``fingers`` as it asks for
        them, types ``answers`` at its password prompts; a further prompt ends the run
        (``piped``: the password comes from a pipe, the prompt shows and is not typed at)."""
        fill = {"user": self.user.name, "target": self.user.name}
        argv = argv or [a.format(**fill) for a in caller.argv]
        who = {"user": self.user, "runner": self.runner, "root": None}[caller.run_as]
        mark, log_mark = self.bed.mark(), self.syslog.mark()
        pt = self.desktop.run_on_pty(argv, user=who, **namespace)
        results, prompts, ok = [], 0, False
        try:
            if caller.before:
                pt.expect(caller.before, timeout=20)
                pt.sendline("")
            for p in fingers:
                pt.expect(ASK_FINGER, timeout=20)
                if caller.terminal:
                    pt.expect(SKIP_PROMPT, timeout=20)
                results.append(self.bed.reader.inject(f"SCAN {p}", timeout=15))
            for answer in answers:
                pt.expect(caller.prompt, timeout=20)
                prompts += 1
                pt.sendline(answer)
            ended = [pexpect.EOF] if piped else [pexpect.EOF, caller.prompt, FAILED]
            if caller.shell:
                if pt.expect([r"[$#] ", FAILED, caller.prompt], timeout=30) == 0:
                    pt.sendline("id -un; exit")
                else:
                    ended = [FAILED, pexpect.EOF]       # asked again: index 0 ends it
            i = pt.expect(ended, timeout=30) if ended[0] is pexpect.EOF else 1
            if i == 0:
                res = pt.finish(timeout=20)
                line = SUCCESS_LINE[caller.name]
                lines = [ANSI.sub("", l).strip() for l in system.screen_lines(res.output)]
                want = line.format(**fill) if line else None
                # A password from a pipe is not echoed: the output follows the prompt.
                ok = res.status == 0 and (want is None or any(
                    l == want or l.endswith(" " + want) for l in lines[-2:]))
            else:
                pt.note("\n<asked again: ended>\n")
        finally:
            pt.kill()
        screen = [ANSI.sub("", l).strip() for l in system.screen_lines(pt.output)]
        run = Run(ok, screen, results, self.bed.events(mark), prompts, pt.output,
                  self.served(log_mark))
        if run.ok:               # no success without a match in this run or the password
            assert run.matched or self.user.password in answers \
                or any(self.user.password in a for a in argv), run
        return run


@pytest.fixture
def stock(inst, bed_factory, syslog):
    bed = bed_factory(polkit_rules=AUTH_SELF)
    with system.ThrowawayUser(prefix="la-st-") as user, \
            system.ThrowawayUser(prefix="la-st-run-") as runner:
        s = Stock(inst, bed, syslog, user, runner)
        try:
            yield s
        finally:
            s.close()


def matches(stock, caller):
    r = stock.drive(caller, [ENROLLED])
    assert r.ok and r.prompts == 0 and r.results == ["verify-match"], r
    assert any(HELPER_STARTED.match(l) for l in r.served), r.served   # through localauthd


def test_vlock_the_finger_unlocks(stock):
    """vlock waits for its prompt's answer in pselect6(2) on the terminal, not in read(2):
    that counts as reading it, so a touch ends vlock's prompt by itself."""
    if not present("vlock"):
        pytest.skip("vlock is not installed")
    caller = CALLERS["vlock"]
    stock.drive(caller, answers=[stock.user.password])
    matches(stock, caller)


@pytest.mark.parametrize("name", sorted(CALLERS))
def test_stock_stack_finger_fallback_lockout_and_clearing(stock, name):
    if not present(name):
        pytest.skip(f"{PROGRAMS[name]} is not installed")
    caller, pw = CALLERS[name], stock.user.password
    r = stock.drive(caller, answers=[pw])                       # first use: the password
    assert r.ok and r.shown(caller.first_use) and r.verify_starts == [], r
    matches(stock, caller)                                      # match
    r = stock.drive(caller, [OTHER] * 3, answers=[pw])          # three wrong, then password
    assert r.ok and r.results == ["verify-no-match"] * 3 and r.prompts == 1, r
    assert stock.failures() == "0"
    r = stock.drive(caller, [OTHER] * 3, answers=["wrong"])     # ... and a wrong password
    assert not r.ok and stock.failures() == "3", r
    r = stock.drive(caller, [OTHER] * 2, answers=["wrong"])     # five: locked out
    assert not r.ok and r.shown(caller.locked), r
    assert stock.failures() == "5"
    r = stock.drive(caller, answers=["wrong"])                  # locked: no scan at all
    assert not r.ok and r.verify_starts == [] and r.shown(caller.locked), r
    assert caller.owner or not r.shown(LOCKED), r              # nothing about the account
    assert stock.failures() == "5"                              # a wrong password clears nothing
    r = stock.drive(caller, answers=[pw])                       # the password clears it
    assert r.ok and r.verify_starts == [], r
    assert stock.failures() == "0"
    matches(stock, caller)                                      # and the finger is back


def test_vlock_lockout_and_clearing_without_a_touch(stock):
    """What of vlock's flow needs no prompt ended by the helper: a lockout reached
    elsewhere (sudo) holds at vlock, a wrong password clears nothing, the password does."""
    if not (present("vlock") and present("sudo")):
        pytest.skip("vlock or sudo is not installed")
    vlock, sudo, pw = CALLERS["vlock"], CALLERS["sudo"], stock.user.password
    stock.drive(vlock, answers=[pw])
    stock.drive(sudo, [OTHER] * 3, answers=["wrong"])
    stock.drive(sudo, [OTHER] * 2, answers=["wrong"])
    assert stock.failures() == "5"
    r = stock.drive(vlock, answers=["wrong"])
    assert not r.ok and r.verify_starts == [] and r.shown(LOCKED), r
    assert stock.failures() == "5"
    r = stock.drive(vlock, answers=[pw])
    assert r.ok and r.verify_starts == [], r
    assert stock.failures() == "0"


# --- nobody at the reader ---------------------------------------------------------------------

def no_scan(stock, caller, argv, answers=(), piped=False):
    stock.drive(caller, answers=[stock.user.password])           # past the first use
    r = stock.drive(caller, answers=answers, argv=argv, piped=piped)
    assert r.verify_starts == [], r
    return r


@pytest.mark.parametrize("name", ["sudo", "sudo-i"])
def test_sudo_with_the_password_from_a_pipe_gets_no_scan(stock, name):
    pw = stock.user.password
    flags = "-k -S -i" if name == "sudo-i" else "-k -S"
    r = no_scan(stock, CALLERS[name], ["/bin/sh", "-c", f"echo {pw} | sudo {flags} id -un"],
                piped=True)
    assert r.ok, r


def test_su_with_the_password_from_a_pipe_gets_no_scan(stock):
    pw, target = stock.user.password, stock.user.name
    r = no_scan(stock, CALLERS["su"], ["/bin/sh", "-c", f"echo {pw} | su - {target} -c 'id -un'"],
                piped=True)
    assert r.ok, r


def test_login_from_a_remote_host_gets_no_scan(stock):
    r = no_scan(stock, CALLERS["login"], ["/bin/login", "-h", "far.example.org", stock.user.name],
                answers=[stock.user.password])
    assert r.ok and r.prompts == 1, r


@pytest.mark.skipif(not present("doas"), reason="doas is not installed")
def test_doas_with_stdin_not_a_terminal_gets_no_scan(stock):
    """doas names no PAM_TTY and reads the password from /dev/tty: with stdin elsewhere the
    helper cannot tell a person is there, so the password is asked at once."""
    r = no_scan(stock, CALLERS["doas"], ["/bin/sh", "-c", "doas id -un </dev/null"],
                answers=[stock.user.password])
    assert r.ok and r.prompts == 1, r


@pytest.mark.parametrize("name", ["sudo", "sudo-i", "su", "doas", "vlock"])
def test_in_a_remote_login_session_there_is_no_scan(stock, name):
    """logind's record of an SSH session (desktop.LoginSession: logind itself cannot run
    here) around the program: the password at once."""
    if not present(name):
        pytest.skip(f"{PROGRAMS[name]} is not installed")
    caller = CALLERS[name]
    stock.drive(caller, answers=[stock.user.password])           # past the first use
    remote = LoginSession(stock.user, remote=True, seat=None)
    try:
        r = stock.drive(caller, answers=[stock.user.password], session=remote, logind=True)
    finally:
        remote.close()
    assert r.ok and r.verify_starts == [] and r.prompts == 1, r


def test_pkexec_agent_without_terminal_or_display_gets_no_scan(stock):
    stock.drive(CALLERS["pkexec"], answers=[stock.user.password])
    r = dialog(stock, display=False, answers=[stock.user.password])
    assert r.authorized and r.verify_starts == [], r.events


# --- GDM's password conversation through common-auth -------------------------------------------

def greeter(stock, service, answers=(), fingers=(), items=None, **namespace):
    """One greeter-shaped conversation (test_greeter.py: its own session, PAM_XDISPLAY=:0,
    messages shown, prompts answered from ``answers`` then failed, pam_acct_mgmt) with the
    real libpam in the desktop's namespace. Returns (driver output, bed events, syslog)."""
    import json
    import subprocess
    driver = stock.desktop.ns.root / "pamenv_driver.py"
    if not driver.exists():
        shutil.copy(Path(__file__).parent / "pamenv.py", driver)
    spec = drive_spec(service, stock.user.name, answers=answers,
                      items=items or {"xdisplay": ":0", "tty": ":0"}, account=True)
    mark, log_mark = stock.bed.mark(), stock.syslog.mark()
    injection = stock.bed.inject_async([f"SCAN {p}" for p in fingers]) if fingers else None
    proc = subprocess.run([*stock.desktop.prefix(**namespace), "setsid", "/usr/bin/python3", str(driver),
                           "--drive"], input=json.dumps(spec), capture_output=True, text=True,
                          timeout=90, env={"PATH": system.SAFE_PATH, "LANG": "C.UTF-8"})
    if injection:
        injection.wait(20)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out, stock.bed.events(mark), [m for _, m in stock.syslog.lines[log_mark:]]


def test_gdm_password_through_the_profiles_records_the_password_then_takes_the_finger(stock):
    """With the profiles enabled, Debian's gdm-password (which includes common-auth) is a
    finger-first conversation itself: the first login after boot takes the password, which
    the keyring module receives and which counts as the password for the product's rules;
    later logins take the finger in the same conversation."""
    from test_greeter import GDM_PASSWORD, KEYRING_GOT, UNAVAILABLE as FIRST
    stock.desktop.pam_file("gdm-password", "".join(l + "\n" for l in GDM_PASSWORD))
    out, events, logs = greeter(stock, "gdm-password", answers=[stock.user.password])
    assert out["rv"] == "PAM_SUCCESS" and out["acct_rv"] == "PAM_SUCCESS", out
    assert [t for s, t in out["messages"] if s == "PAM_ERROR_MSG"] == [FIRST], out
    assert KEYRING_GOT in logs, logs
    assert not [e for e in events if e.name == "VerifyFingerSelected"]
    out, events, logs = greeter(stock, "gdm-password", fingers=[ENROLLED])
    assert out["rv"] == "PAM_SUCCESS", out
    assert not [t for s, t in out["messages"] if s.startswith("PAM_PROMPT")], out
    assert any(e.name == "VerifyStatus" and e.args[0] == "verify-match" for e in events)
    assert stock.failures() == "0"


@pytest.mark.skipif(not Path("/dev/tty1").is_char_device(), reason="no /dev/tty1")
@pytest.mark.parametrize("greeter_session,scans", [
    (dict(), True),                          # seat0's active session: the local greeter
    (dict(remote=True), False),              # seat0 in front of a remote session: nobody
    (None, False),                           # no active session on seat0: nobody
])
def test_gdm_fingerprint_where_logind_runs_asks_whoever_is_at_the_seat(stock, greeter_session,
                                                                       scans):
    """GDM's worker: root, no terminal, its VT in PAM_TTY, in no session yet (it
    authenticates before pam_systemd puts it in one), where logind runs. The person is
    whoever sits in front of seat0's active session, the greeter's own: local, a finger;
    remote or none, no scan."""
    stock.desktop.pam_file("gdm-fingerprint", (Path(__file__).resolve().parents[2] / "pam.d"
                                               / "gdm-fingerprint").read_text())
    stock.desktop.configure(scan_timeout=2)
    stock.drive(CALLERS["sudo"], answers=[stock.user.password])   # the password once
    seat = None if greeter_session is None else LoginSession(
        stock.user, seat="seat0", session_type="wayland", **greeter_session)
    try:
        with LogindBus(stock.bed.address):   # the seat session's hints
            out, events, logs = greeter(stock, "gdm-fingerprint", items={"tty": "/dev/tty1"},
                                        logind=True, seat_session=seat)
    finally:
        if seat is not None:
            seat.close()
    started = [e for e in events if e.name == "VerifyFingerSelected"]
    assert bool(started) == scans, (out, logs)
