"""End to end through the real libpam: the installed module and the real helper against the
real fprintd with the virtual reader, driven by pamtester on a pseudo-terminal.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_e2e_pam.py

The product is installed once into a temporary prefix (system.shared_installation); each
test starts a localauthd of its own with the installation's helper behind it, as where no
systemd runs (`localauthd --listen SOCKET --helper PATH`, real_helper.LocalService), and
the module reaches it through the root-only argument `service=SOCKET`. Service files live in a pam_wrapper
world (pamenv.PamWorld): the module's log line (pam_syslog) shows on the terminal there,
nothing on the machine changes, and pam_matrix checks the password of a made-up user. The
stack is the one pam.d/localauth ships, with the password module `requisite` so that the
`authsucc` line after it is reached only when the password succeeded:

    auth sufficient pam_localauth.so ARGS
    auth requisite  pam_matrix.so passdb=...
    auth optional   pam_localauth.so authsucc ARGS

Every run is checked against the rule that matters most (`run()`): success only after a
match seen on the bus in that run, or after the right password.
"""
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pexpect
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from pamenv import PamWorld, outcomes  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)
from real_helper import LocalService, close_with  # noqa: E402
from scan_events import ScanEvents  # noqa: E402
from terminal_finger import ASK_FINGER, SKIP_PROMPT, is_hint, present  # noqa: E402

USER = "la-e2e-user"          # made up: pam_matrix knows its password, fprintd any name
PASSWORD = "correct-horse-1"
FINGER = "right-index-finger"
ENROLLED, OTHER = "f1", "f9"  # virtual prints: the enrolled one and a stranger's
SWIPE = "Swipe your right index finger across the fingerprint reader"
# pamtester runs as root for another account here, as login does for whoever sits down: the
# person at the terminal may not be the owner, so every refusal is the same line, telling
# nothing about the account (the owner's own sudo says which rule applies: see
# test_e2e_sudo_su.py).
UNAVAILABLE = "Fingerprint sign-in is not available - use the password"
FIRST_USE = LOCKED = UNAVAILABLE
PROMPT = "Password:"            # pam_matrix's prompt, as a screen line
PROMPT_TEXT = re.compile(r"(^|\n)Password: ")   # on the terminal (not the skip hint)
OK = "pamtester: successfully authenticated"
DENIED = "pamtester: Authentication failure"
ACCT_DONE = "pamtester: account management done"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


@dataclass
class Run(ScanEvents):
    status: int
    screen: list            # what the user saw: terminal lines without pam_wrapper's own
                            # and without the skip hints (listed in `hints`)
    hints: list
    logs: list              # the module's outcome lines (pamenv.outcomes)
    events: list            # bed events during the run
    results: list           # what the injected scans gave (verify-match, ...)
    prompt_after: float = None   # seconds from start to the password prompt
    answered: str = None    # the password typed, if any
    output: str = field(default="", repr=False)


class E2E:
    """One bed, one pam_wrapper world, one state directory, one made-up user, and one
    localauthd with the installation's helper behind it (``localauthd``; stopped when
    the world closes). ``service``: the PAM service of the usual stack."""

    def __init__(self, bed, world, inst):
        self.bed, self.world, self.inst = bed, world, inst
        self.state = world.root / "state"
        self.state.mkdir(mode=0o700)
        world.add_user(USER, PASSWORD)
        self.localauthd = self.serve(inst.helper)
        self.args = [self.localauthd.arg, f"dbus_address={bed.address}", f"state_dir={self.state}",
                     f"config={inst.config}", "scan_timeout=10"]
        if bed.state_dir is not None:
            self.args.append(f"fprint_dir={bed.state_dir}")
        self.service = self.stack()

    def serve(self, helper_path, *more):
        """A localauthd of this test's with ``helper_path`` behind it, stopped with the world."""
        service = LocalService(helper_path, *more, bed=self.bed, state=self.state)
        close_with(self.world, service)
        return service

    def stack(self, *extra, name="la-e2e", first=True, authsucc=True):
        args = " ".join(self.args + list(extra))
        lines = []
        if first:
            lines.append(f"auth sufficient {self.inst.module} {args}")
        lines.append(f"auth requisite {self.world.matrix}")
        if authsucc:
            # pam_matrix's made-up user has no local hash: the account phase is what proves
            # the password here (pamtester runs it after a successful authenticate).
            lines.append(f"auth optional {self.inst.module} authsucc {args}")
            lines.append(f"account required {self.inst.module} {args}")
            lines.append("account required pam_permit.so")   # ours answers PAM_IGNORE
        return self.world.service(name, lines)

    def run(self, fingers=(), password=None, service=None, pam_env=None, items=None,
            env=None):
        """pamtester once: present ``fingers`` (print ids) one by one as the terminal asks
        for them, then type ``password`` at the password prompt (None: there must be no
        prompt)."""
        mark = self.bed.mark() if self.bed.fprintd_wanted else 0
        started = time.monotonic()
        pt = self.world.pamtester(service or self.service, USER, pam_env=pam_env,
                                  items=items, env=env, operation=("authenticate", "acct_mgmt"))
        try:
            results = [present(pt, self.bed, p) for p in fingers]
            prompt_after = None
            if password is not None:
                pt.expect(PROMPT_TEXT)
                prompt_after = time.monotonic() - started
                pt.send_secret(password)
            elif pt.expect([PROMPT_TEXT, pexpect.EOF]) == 0:
                pt.sendline("not-the-password")   # unexpected: the assertions below catch it
            res = pt.finish()
        finally:
            pt.kill()
        events = self.bed.events(mark) if self.bed.fprintd_wanted else []
        lines = [l for l in system.screen_lines(res.output) if not l.startswith(ACCT_DONE)]
        run = Run(res.status, [l for l in lines if not is_hint(l)],
                  [l for l in lines if is_hint(l)], outcomes(res.logs), events, results,
                  prompt_after, password, res.output)
        # The one rule: no success without a match in this run or the right password.
        if run.status == 0:
            assert run.matched or password == PASSWORD, run
        if password is not None and password != PASSWORD and not run.matched:
            assert run.status != 0, run
        return run

    def first_password(self):
        """A new user enters the password once; from then on the finger works."""
        r = self.run(password=PASSWORD)
        assert r.status == 0 and FIRST_USE in r.screen, r

    def state_file(self):
        return system.state_fields(self.state / f"{USER}.state")

    def lock_out(self):
        """Five failed matches over two transactions whose password was wrong."""
        r = self.run([OTHER] * 3, password="wrong-1")
        assert r.status != 0 and r.results == ["verify-no-match"] * 3, r
        assert self.state_file()["failures"] == "3"
        r = self.run([OTHER] * 2, password="wrong-2")
        assert r.status != 0 and r.results == ["verify-no-match"] * 2, r
        assert r.screen == [SWIPE, "Fingerprint not recognized - 1 try left",
                            SWIPE, LOCKED, PROMPT, DENIED], r.screen
        assert self.state_file()["failures"] == "5"
        return r


@pytest.fixture
def e2e(bed, inst):
    bed.enroll(USER, FINGER, ENROLLED)
    with PamWorld() as world:
        yield E2E(bed, world, inst)


def only(logs, **want):
    """The first line's outcome (logged before the authsucc line's), checked against
    ``want`` (regular expressions)."""
    assert logs, "no outcome line from the module"
    first = logs[0]
    for key, value in want.items():
        assert re.search(value, first[key]), (key, first)
    return first


# --- the first time, then the finger ---------------------------------------------------

def test_first_use_asks_password_first_then_finger_works(e2e):
    r = e2e.run(password="wrong")                   # a wrong password does not count
    assert r.status != 0
    assert r.screen == [FIRST_USE, PROMPT, DENIED], r.screen
    assert r.scans_started == []
    r = e2e.run(password=PASSWORD)
    assert r.status == 0
    assert r.screen == [FIRST_USE, PROMPT, OK], r.screen
    assert r.scans_started == []                     # the reader was never asked
    only(r.logs, result="biometryLockout", reason="^never-used$", pam="PAM_AUTHINFO_UNAVAIL",
         cause="password required first")
    # Nothing was locked: the line does not say it cleared a lockout.
    assert [o["cause"] for o in r.logs][-1] == "password recorded (no lockout to clear)"
    state = e2e.state_file()
    assert state["failures"] == "0" and "last_password" in state and "boot_id" in state
    r = e2e.run([ENROLLED])
    assert r.status == 0
    assert r.screen == [SWIPE, "Fingerprint recognized", OK], r.screen
    assert r.hints                                   # how to skip to the password
    assert r.results == ["verify-match"]


def test_match_is_success_without_password(e2e):
    e2e.first_password()
    for _ in range(2):
        r = e2e.run([ENROLLED])
        assert r.status == 0
        assert PROMPT not in r.screen
        assert r.screen == [SWIPE, "Fingerprint recognized", OK], r.screen
        assert len(r.verify_starts) == 1
        only(r.logs, result="^success$", pam="PAM_SUCCESS", cause="matched")
    assert "last_fingerprint" in e2e.state_file()


# --- wrong fingers, the password, the lockout -------------------------------------------

def test_three_wrong_fingers_then_password(e2e):
    e2e.first_password()
    r = e2e.run([OTHER] * 3, password=PASSWORD)
    assert r.status == 0
    assert r.results == ["verify-no-match"] * 3
    assert r.screen == [SWIPE, "Fingerprint not recognized - 2 tries left",
                        SWIPE, "Fingerprint not recognized - 1 try left",
                        SWIPE, "Fingerprint not recognized - use your password",
                        PROMPT, OK], r.screen
    only(r.logs, result="authenticationFailed", pam="PAM_AUTH_ERR", cause="3 failed matches")
    assert e2e.state_file()["failures"] == "0"       # the password cleared them


def test_three_wrong_fingers_then_wrong_password_fails(e2e):
    e2e.first_password()
    r = e2e.run([OTHER] * 3, password="wrong")
    assert r.status != 0
    assert r.screen[-2:] == [PROMPT, DENIED], r.screen
    assert e2e.state_file()["failures"] == "3"       # counted, and nothing cleared them


def test_lockout_after_five_failures_across_transactions(e2e):
    e2e.first_password()
    e2e.lock_out()
    # Locked: no scan at all, the lockout message, then the password.
    r = e2e.run(password="wrong-3")
    assert r.status != 0
    assert r.screen == [LOCKED, PROMPT, DENIED], r.screen
    assert r.scans_started == []
    r = e2e.run(password=PASSWORD)
    assert r.status == 0
    assert r.screen == [LOCKED, PROMPT, OK], r.screen
    assert r.scans_started == []                     # fprintd never saw a VerifyStart
    only(r.logs, result="biometryLockout", reason="^lockout$", pam="PAM_AUTHINFO_UNAVAIL",
         cause="5 consecutive failed matches")
    assert e2e.state_file()["failures"] == "0"       # the authsucc line cleared it
    assert [o["cause"] for o in r.logs][-1] == "password recorded, lockout cleared (5 consecutive failed matches)"
    r = e2e.run([ENROLLED])
    assert r.status == 0 and r.results == ["verify-match"]
    assert PROMPT not in r.screen


def test_authsucc_without_the_first_line_clears_nothing(e2e):
    e2e.first_password()
    e2e.lock_out()
    bare = e2e.stack(name="la-e2e-bare", first=False)
    r = e2e.run(password=PASSWORD, service=bare)
    assert r.status == 0 and r.screen == [PROMPT, OK], r.screen
    assert r.logs == []                              # the helper never ran
    assert "authsucc: the first line did not run in this handle" in r.output
    assert e2e.state_file()["failures"] == "5"       # still locked out
    r = e2e.run(password=PASSWORD)
    assert r.screen[0] == LOCKED and r.scans_started == []


# --- no scan at all ---------------------------------------------------------------------

def test_remote_host_goes_straight_to_password(e2e):
    e2e.first_password()
    for password in ("wrong", PASSWORD):
        r = e2e.run(password=password, items={"rhost": "ssh.example.org"})
        assert (r.status == 0) == (password == PASSWORD)
        assert r.screen == [PROMPT, OK if password == PASSWORD else DENIED], r.screen
        assert r.scans_started == []
        only(r.logs, result="notInteractive", pam="PAM_AUTHINFO_UNAVAIL",
             cause="remote host ssh.example.org")
    # The right password's account phase was a login from elsewhere (root's record): until a
    # local unlock, this machine's own terminal gets the password too (PresenceRule, rule 5).
    # Records are whole seconds, and a tie counts as the login: the unlock comes a second later.
    second = int(time.time())
    while int(time.time()) == second:
        time.sleep(0.05)
    r = e2e.run(password=PASSWORD)
    assert r.status == 0 and r.scans_started == [], r
    only(r.logs, result="notInteractive", reason="remote-login-since-unlock")
    r = e2e.run([ENROLLED], items={"rhost": "localhost"})   # this machine, unlocked: a scan
    assert r.status == 0 and r.results == ["verify-match"]


def test_own_host_name_is_local(e2e):
    """sudo's pam_rhost flag puts this machine's own name in PAM_RHOST: that is no remote
    session. A name that only starts with it is another machine."""
    e2e.first_password()
    host = socket.gethostname()
    r = e2e.run([ENROLLED], items={"rhost": host.upper()})
    assert r.status == 0 and r.results == ["verify-match"], r
    assert PROMPT not in r.screen
    r = e2e.run(password=PASSWORD, items={"rhost": f"{host}.example.org"})
    assert r.status == 0 and r.scans_started == [], r
    only(r.logs, result="notInteractive", cause=f"remote host {re.escape(host)}\\.example")


@pytest.mark.alone("a time bound: the password prompt within 1 s")
def test_fprintd_absent_password_without_delay(bed_factory, inst):
    bed = bed_factory(fprintd=False)
    with PamWorld() as world:
        e2e = E2E(bed, world, inst)
        # First use: localauthd answers for the absent fprintd itself (no helper, no
        # message), the password follows and the authsucc line's helper records it.
        r = e2e.run(password=PASSWORD)
        assert r.status == 0 and r.screen == [PROMPT, OK], r.screen
        assert "answered by localauthd" in r.logs[0]["cause"], r.logs
        assert "last_password" in e2e.state_file()
        for password in ("wrong", PASSWORD):
            r = e2e.run(password=password)
            assert (r.status == 0) == (password == PASSWORD)
            assert r.prompt_after < 1.0, r.prompt_after
            assert r.screen[-2] == PROMPT
            only(r.logs, result="biometryNotAvailable", pam="PAM_AUTHINFO_UNAVAIL")


# --- a broken helper: the password still works -----------------------------------------

# What the service's helper is (None: missing), the module arguments, what the module's
# line says, and what the service's line says. A helper gets its caller's connection only by
# taking localauthd's handoff (`--service-spare`): one that dies or hangs before that leaves
# the connection unread, which the module sees end with nothing said.
GARBAGE = """#!/usr/bin/python3
import os, socket
# Takes the handoff as a helper does, then answers with what is not a frame.
control = socket.socket(fileno=0)
_, fds, _, _ = socket.recv_fds(control, 4096, 4)
os.write(fds[0], b"this is not a frame\\n")
"""
HELPERS = {
    "missing": (None, [], "helper ended without a result", r"could not start the helper: \S+: No such file or directory"),
    # Dead before or after localauthd handed it the request, whichever came first.
    "crash": ("#!/bin/sh\nkill -SEGV $$\n", [], "helper ended without a result",
              r"the helper of uid 0 \(pid \d+\) was killed by signal 11|the helper started for it ended before it took the request"),
    "hang": ("#!/bin/sh\nexec sleep 60\n", ["helper_timeout=1"], "helper timed out after 1 s", r"helper pid \d+"),
    "garbage": (GARBAGE, [], "garbled frame", r"helper pid \d+"),
}


@pytest.mark.parametrize("kind", list(HELPERS))
def test_broken_helper_password_still_works(e2e, kind):
    e2e.first_password()
    body, extra, cause, said = HELPERS[kind]
    path = e2e.world.root / f"helper-{kind}"
    if body is not None:
        path.write_text(body)
        os.chown(path, 0, 0)
        path.chmod(0o755)
    # None started ahead: each request's helper is started when it comes, and breaks there.
    broken = e2e.serve(path, "--spare", "no")
    svc = e2e.stack(broken.arg, *extra,   # the last service= is the one the module takes
                    name=f"la-e2e-{kind}")
    for password in ("wrong", PASSWORD):
        mark = broken.syslog.mark()
        started = time.monotonic()
        r = e2e.run([], password=password, service=svc)
        assert (r.status == 0) == (password == PASSWORD), r
        assert r.screen == [PROMPT, OK if password == PASSWORD else DENIED], r.screen
        assert r.scans_started == []
        only(r.logs, result="helperFailure", pam="PAM_AUTHINFO_UNAVAIL", cause=cause)
        assert time.monotonic() - started < 5
        assert any(re.search(said, m) for m in broken.lines("localauthd", mark)), broken.lines(None, mark)


# --- Chinese --------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["pam_env", "process_env"])
def test_chinese_messages(e2e, where):
    def run(**kw):
        if where == "pam_env":
            return e2e.run(pam_env={"LANG": "zh_CN.UTF-8"}, **kw)
        return e2e.run(env={"LANG": "zh_CN.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}, **kw)

    r = run(password=PASSWORD)
    assert r.status == 0
    assert r.screen == ["指纹登录不可用——请使用密码", PROMPT, OK], r.screen
    r = run(fingers=[OTHER, ENROLLED])
    assert r.status == 0
    assert r.screen == ["请在指纹读取器上划动右手食指", "指纹未能识别——还可尝试 2 次",
                        "请在指纹读取器上划动右手食指", "指纹已识别", OK], r.screen
    assert r.hints and all(re.search("[\u4e00-\u9fff]", h) for h in r.hints), r.hints


@pytest.mark.alone("the machine has one audit daemon")
def test_the_lockout_and_the_password_that_clears_it_are_audited(e2e):
    """Through the module and the helper: the failed match that locks fingerprints out
    writes ANOM_LOGIN_FAILURES and RESP_ACCT_LOCK, the password that lifts it USER_MGMT, as
    pam_faillock does."""
    from recorders import AuditDaemon
    assert e2e.run(password=PASSWORD).status == 0     # the first password, recorded
    with AuditDaemon() as audit:
        assert e2e.run([OTHER] * 3, password="wrong-1").status != 0
        assert e2e.run([OTHER] * 2, password="wrong-2").status != 0
        assert e2e.state_file()["failures"] == "5"
        ours = lambda t: [l for l in audit.search(t) if f'acct="{USER}"' in l]
        [anomaly] = ours("ANOM_LOGIN_FAILURES")
        # The helper's full path, as pam_faillock's records carry theirs: `ausearch -x` finds it.
        assert "op=localauth-lockout" in anomaly and f'exe="{os.path.realpath(e2e.inst.helper)}"' in anomaly, anomaly
        found = subprocess.run(["ausearch", "-if", str(audit.log), "-x", os.path.realpath(e2e.inst.helper),
                                "--raw"], capture_output=True, text=True)
        assert "op=localauth-lockout" in found.stdout, found.stdout + found.stderr
        assert len(ours("RESP_ACCT_LOCK")) == 1
        assert ours("USER_MGMT") == []
        r = e2e.run(password=PASSWORD)
        assert r.status == 0 and e2e.state_file()["failures"] == "0", r
        [cleared] = ours("USER_MGMT")
        assert "op=localauth-unlock" in cleared, cleared
        assert len(ours("ANOM_LOGIN_FAILURES")) == 1


# The first refusal, in each language: the rule itself for the account's owner, or the one
# line that says nothing about the account where the caller is someone else (login, su).
FIRST_REFUSAL = {
    "en": {FIRST_USE, "Fingerprint sign-in is not available - use the password"},
    "zh_CN": {"使用指纹前需要先输入密码", "指纹登录不可用——请使用密码"},
    "zh_TW": {"使用指紋前需要先輸入密碼", "指紋登入無法使用——請使用密碼"},
}


@pytest.mark.parametrize("env,pam_env,expected", [
    ({"LANG": "en_US.UTF-8", "LANGUAGE": "zh_TW"}, None, "zh_TW"),
    ({"LANG": "zh_CN.UTF-8"}, None, "zh_CN"),
    # What the application put in the PAM environment comes first (login's pam_env).
    ({"LANG": "en_US.UTF-8"}, {"LANG": "zh_CN.UTF-8", "LANGUAGE": "zh_TW:zh_CN"}, "zh_TW"),
    ({"LANG": "C", "LANGUAGE": "zh_TW"}, None, "en"),
])
def test_the_helpers_messages_follow_the_callers_language(e2e, env, pam_env, expected):
    r = e2e.run(password=PASSWORD, env=env, pam_env=pam_env)
    assert r.status == 0, r
    assert r.screen[0] in FIRST_REFUSAL[expected], r.screen


def test_the_modules_line_names_tty_rhost_ruser_and_the_rule(e2e):
    """An administrator reading auth.log sees where the attempt came from and which rule
    stood before the finger, as pam_unix's lines show the first."""
    r = e2e.run(password=PASSWORD, items={"tty": "/dev/pts/77", "rhost": "localhost", "ruser": "operator"})
    assert r.status == 0, r
    first = r.logs[0]
    assert (first["tty"], first["rhost"], first["ruser"]) == ("/dev/pts/77", "localhost", "operator"), first
    assert first["result"] == "biometryLockout" and first["reason"] == "never-used", first


# --- the helper is never in its caller's cgroup ------------------------------------------

def unified_hierarchy():
    """Where cgroup v2 is mounted (unified, or beside v1 at .../unified), else None: the
    file cgroup.controllers exists only in a v2 hierarchy."""
    for path in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if (Path(path) / "cgroup.controllers").is_file():
            return Path(path)
    return None


def cgroup_of(pid):
    """The process's path in the unified hierarchy (its `0::` line)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    raise AssertionError(f"pid {pid} has no cgroup v2 line")


def serving_helper(service, timeout=15):
    """The pid of the one helper ``service`` runs for a request now (not a spare)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = service.helpers()
        if found:
            assert len(found) == 1, found
            return found[0]
        time.sleep(0.02)
    raise AssertionError(f"no helper of localauthd (pid {service.pid}) serves a request")


def children_of(pid):
    return [int(d.parent.name) for d in Path("/proc").glob("[0-9]*/stat")
            if _ppid(d) == pid]


def _ppid(stat):
    try:
        return int(stat.read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


@pytest.fixture
def caller_cgroup():
    """A cgroup of the test's own in the unified hierarchy, standing for a user's delegated
    one (user@UID.service/app.slice/...); skipped where this machine does not allow one."""
    import secrets
    root = unified_hierarchy()
    if root is None:
        pytest.skip("no cgroup v2 hierarchy on this machine")
    cg = root / f"localauth-test-{secrets.token_hex(4)}"
    try:
        cg.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a cgroup here: {exc}")
    try:
        yield cg
    finally:
        for _ in range(250):          # until the processes that were in it are gone
            try:
                cg.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)


def test_the_helper_is_never_in_its_callers_cgroup_nor_below_it(e2e, caller_cgroup):
    """The caller (pamtester) runs in a cgroup of its own, which its user could freeze or
    throttle; while the reader waits, the root helper serving it is localauthd's child, in
    the service's cgroup, and the caller has no child at all: the module started nothing."""
    e2e.first_password()
    into_cgroup = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(caller_cgroup)]
    pt = e2e.world.pamtester(e2e.service, USER, prefix=into_cgroup)
    try:
        pt.expect(ASK_FINGER, timeout=15)
        pt.expect(SKIP_PROMPT, timeout=15)
        helper = serving_helper(e2e.localauthd)
        assert cgroup_of(pt.child.pid) == "/" + caller_cgroup.name
        assert os.readlink(f"/proc/{helper}/exe") == os.path.realpath(e2e.inst.helper)
        assert _ppid(Path(f"/proc/{helper}/stat")) == e2e.localauthd.pid
        assert cgroup_of(helper) == cgroup_of(e2e.localauthd.pid) != "/" + caller_cgroup.name
        assert children_of(pt.child.pid) == [], "the PAM host has a child"
        assert e2e.bed.reader.inject(f"SCAN {ENROLLED}") == "verify-match"
        res = pt.finish()
    finally:
        pt.kill()
    assert res.status == 0 and OK in res.output, res.output
