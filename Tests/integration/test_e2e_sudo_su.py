"""End to end with the real setuid sudo and su, a throwaway user, the installed module and
helper, and the real fprintd with the virtual reader, driven on a pseudo-terminal.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_e2e_sudo_su.py

sudo: a throwaway user, a PAM service file of its own in /etc/pam.d and a sudoers drop-in
naming it (`pam_service`), all removed afterwards (system.py). su's service name is fixed,
so its stack is bind-mounted over /etc/pam.d/su in a private mount namespace that lives as
long as the su command (system.PamServiceOverlay); the machine's file is never changed.
sudo and su are setuid, so sd-bus would ignore DBUS_SYSTEM_BUS_ADDRESS there: the test bus
is named by the module argument `dbus_address=`.

The stack (as pam.d/sudo, with the password module `requisite` so the authsucc line is
reached only after the password succeeded, and `nodelay` so a wrong password costs no
time):

    auth sufficient pam_localauth.so ARGS
    auth requisite  pam_unix.so nodelay
    auth optional   pam_localauth.so authsucc ARGS
"""
import contextlib
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from test_e2e_pam import is_hint, present  # noqa: E402
from testbed import Bed  # noqa: E402
from messages import FINGER, ENROLLED, OTHER, SWIPE, FIRST_USE, LOCKED, UNAVAILABLE  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)

# "Fingerprint recognized" comments, it tells the user nothing to do: under PAM_SILENT (which
# sudo always passes) the helper may leave it out, so the screens below do not count on it.
MATCHED = ("Fingerprint recognized", "指纹已识别")
NOT_RECOGNIZED = re.compile(r"^Fingerprint not recognized - (\d) tr(y|ies) left$")
TRIES_USED = "Fingerprint not recognized - use your password"
SUDO_PROMPT = re.compile(r"\[sudo\] password for \S+: ")
SU_PROMPT = re.compile(r"(^|\n)Password: ")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


@dataclass
class Run:
    status: int
    screen: list             # what the user saw, without the skip hints (see `hints`) and
                             # "Fingerprint recognized" (shown or not, as the helper decides)
    hints: list              # the skip hints shown
    events: list             # bed events during the run
    results: list            # what each presented finger gave
    prompts: int             # password prompts seen
    output: str = field(default="", repr=False)

    @property
    def scans_started(self):
        """fprintd's signs of a VerifyStart: VerifyFingerSelected (sent by every one) and
        the reader waiting for a finger."""
        return [e for e in self.events if e.name == "VerifyFingerSelected"
                or (e.name == "finger-needed" and e.args[0])]

    @property
    def verify_starts(self):
        return [e for e in self.events if e.name == "VerifyFingerSelected"]

    @property
    def matched(self):
        return any(e.name == "VerifyStatus" and e.args[0] == "verify-match" for e in self.events)


class Machine(contextlib.ExitStack):
    """A bed, a throwaway user with the right index finger enrolled as print f1, the
    product installed in a temporary prefix, a root-only state directory, and the stack
    as a PAM service for sudo (with a sudoers drop-in) and as su's overlay. Everything is
    removed on exit, whatever happened."""

    def __init__(self, inst=None, bed=None, scan_timeout=10, stack=None):
        super().__init__()
        self.inst, self.bed, self.scan_timeout = inst, bed, scan_timeout
        self.stack = stack or Machine.requisite_stack
        self.made = []          # names and paths of what this machine created

    def __enter__(self):
        super().__enter__()
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def _setup(self):
        self.inst = self.inst or system.shared_installation()
        if self.bed is None:
            self.bed = self.enter_context(Bed())
        self.user = self.enter_context(system.ThrowawayUser())
        self.made.append(self.user.name)
        self.bed.enroll(self.user.name, FINGER, ENROLLED)
        self.state = Path(self.enter_context(
            tempfile.TemporaryDirectory(prefix="localauth-state-")))
        self.state.chmod(0o700)
        args = " ".join([f"dbus_address={self.bed.address}", f"state_dir={self.state}",
                         f"fprint_dir={self.bed.state_dir}", f"config={self.inst.config}",
                         f"scan_timeout={self.scan_timeout}"])
        self.lines = self.stack(self.inst.module, args)
        self.service = self.enter_context(system.PamService("la-e2e-sudo-", self.lines))
        self.sudoers = self.enter_context(system.SudoersDropIn(self.user, self.service.name))
        self.made += [self.service.path, self.sudoers.path]

    @staticmethod
    def requisite_stack(module, args):
        return [f"auth sufficient {module} {args}",
                "auth requisite pam_unix.so nodelay",
                f"auth optional {module} authsucc {args}",
                "account required pam_unix.so",
                "session required pam_unix.so"]

    def left_behind(self):
        """What this machine made (users, groups, files) that still exists."""
        names = [str(x) for x in self.made]
        return [x for x in system.leftovers() if any(n in x for n in names)]

    def su_overlay(self):
        """su's own service, with this stack (pam_rootok first, as in pam.d/su)."""
        return self.enter_context(system.PamServiceOverlay(
            "su", ["auth sufficient pam_rootok.so"] + self.lines))

    def state_file(self, user=None):
        return system.state_fields(self.state / f"{user or self.user.name}.state")

    def drive(self, argv, run_as, prompt, password, fingers=(), answers=(),
              interrupt=False, env=None, prefix=()):
        """Runs ``argv`` as ``run_as`` on a terminal: presents ``fingers`` one by one as
        the terminal asks for them, types ``answers`` at the password prompts in turn,
        then Ctrl-C at the next one if ``interrupt`` (without it, a further prompt is a
        failure: Ctrl-C ends it). ``password`` is the right one, for the check that
        nothing succeeds without a match or it."""
        mark = self.bed.mark()
        pt = system.run_on_pty(list(argv), env=env, user=run_as, prefix=prefix)
        try:
            results = [present(pt, self.bed, p) for p in fingers]
            prompts = pt.answer_passwords(prompt, answers, interrupt)
            res = pt.finish(timeout=15)
        finally:
            pt.kill()
        # su - for a user without a home directory says so; not ours to show.
        lines = [l for l in system.screen_lines(res.output)
                 if not l.startswith("su: warning: cannot change directory")]
        run = Run(res.status, [l for l in lines if not is_hint(l) and l not in MATCHED],
                  [l for l in lines if is_hint(l)], self.bed.events(mark), results, prompts,
                  res.output)
        # No success without a match in this run or the right password.
        if run.status == 0:
            assert run.matched or password in answers, run
        return run

    def sudo(self, fingers=(), answers=(), interrupt=False, env=None, **kw):
        return self.drive(["sudo", "-k", "id", "-un"], self.user, SUDO_PROMPT,
                          self.user.password, fingers, answers, interrupt, env, **kw)

    def first_password(self):
        """A user never seen enters the password once."""
        r = self.sudo(answers=[self.user.password])
        assert r.status == 0 and r.screen[0] == FIRST_USE and r.screen[-1] == "root", r
        return r


@pytest.fixture
def machine(bed, inst):
    with Machine(inst, bed) as m:
        yield m
    assert m.left_behind() == []          # no user, group, pam.d or sudoers file remains


def not_recognized(lines):
    return [int(m.group(1)) for m in map(NOT_RECOGNIZED.match, lines) if m]


# --- sudo ------------------------------------------------------------------------------

def test_sudo_first_use_asks_password_then_finger_runs_command(machine):
    r = machine.sudo(answers=[machine.user.password])
    assert r.status == 0
    assert r.screen == [FIRST_USE, f"[sudo] password for {machine.user.name}:", "root"], r.screen
    assert r.scans_started == []
    assert machine.state_file()["failures"] == "0"
    r = machine.sudo([ENROLLED])
    assert r.status == 0
    assert r.screen == [SWIPE, "root"], r.screen
    assert r.prompts == 0 and r.hints


def test_sudo_fingerprint_runs_command_without_password(machine):
    machine.first_password()
    for _ in range(2):
        r = machine.sudo([ENROLLED])
        assert r.status == 0
        assert r.screen == [SWIPE, "root"], r.screen
        assert r.prompts == 0
        assert r.results == ["verify-match"]


def test_sudo_three_wrong_fingers_then_password(machine):
    machine.first_password()
    r = machine.sudo([OTHER] * 3, answers=[machine.user.password])
    assert r.status == 0
    assert r.results == ["verify-no-match"] * 3
    assert r.screen == [SWIPE, "Fingerprint not recognized - 2 tries left",
                        SWIPE, "Fingerprint not recognized - 1 try left",
                        SWIPE, TRIES_USED,
                        f"[sudo] password for {machine.user.name}:", "root"], r.screen
    assert machine.state_file()["failures"] == "0"


def test_sudo_password_retry_does_not_scan_again(machine):
    """sudo runs the whole stack again for each password try, in the same PAM handle."""
    machine.first_password()
    r = machine.sudo([OTHER] * 3, answers=["wrong", machine.user.password])
    assert r.status == 0 and r.screen[-1] == "root", r.screen
    assert len(r.verify_starts) == 3                  # one prompt's tries, no second prompt
    assert "Sorry, try again." in r.screen
    assert r.prompts == 2
    assert machine.state_file()["failures"] == "0"


def test_sudo_wrong_passwords_fail(machine):
    machine.first_password()
    r = machine.sudo([OTHER] * 3, answers=["wrong-1", "wrong-2", "wrong-3"])
    assert r.status != 0
    assert r.screen[-1] == "sudo: 3 incorrect password attempts", r.screen
    assert "root" not in r.screen
    assert machine.state_file()["failures"] == "3"


def test_sudo_five_failures_lock_out_until_the_password(machine):
    machine.first_password()
    r = machine.sudo([OTHER] * 3, interrupt=True)       # gives up at the password prompt
    assert r.status != 0 and "root" not in r.screen
    assert not_recognized(r.screen) == [2, 1] and TRIES_USED in r.screen
    r = machine.sudo([OTHER] * 2, interrupt=True)
    assert r.status != 0
    assert r.screen[:4] == [SWIPE, "Fingerprint not recognized - 1 try left", SWIPE, LOCKED]
    assert machine.state_file()["failures"] == "5"
    r = machine.sudo(answers=[machine.user.password])   # locked: no scan, the password
    assert r.status == 0
    assert r.screen == [LOCKED, f"[sudo] password for {machine.user.name}:", "root"], r.screen
    assert r.scans_started == []
    assert machine.state_file()["failures"] == "0"      # cleared by the authsucc line
    r = machine.sudo([ENROLLED])
    assert r.status == 0 and r.screen == [SWIPE, "root"], r.screen


def test_sudo_pam_rhost_is_still_local(machine):
    """With sudoers' pam_rhost flag sudo names this machine in PAM_RHOST."""
    machine.first_password()
    dropin = machine.enter_context(system.SudoersDropIn(machine.user, machine.service.name,
                                                        defaults=["pam_rhost"]))
    machine.made.append(dropin.path)
    r = machine.sudo([ENROLLED])
    assert r.status == 0 and r.screen == [SWIPE, "root"], r.screen
    assert r.prompts == 0


def test_sudo_chinese_messages(machine):
    env = system.default_env(LANG="zh_CN.UTF-8")
    r = machine.sudo(answers=[machine.user.password], env=env)
    assert r.status == 0 and r.screen[0] == "使用指纹前需要先输入密码", r.screen
    r = machine.sudo([OTHER, ENROLLED], env=env)
    assert r.status == 0
    assert r.screen == ["请在指纹读取器上划动右手食指", "指纹未能识别——还可尝试 2 次",
                        "请在指纹读取器上划动右手食指", "root"], r.screen


# --- su: the target's credentials --------------------------------------------------------

@pytest.fixture
def su_setup(machine):
    overlay = machine.su_overlay()
    runner = machine.enter_context(system.ThrowawayUser())
    machine.made.append(runner.name)
    target = machine.user

    def su(fingers=(), answers=(), interrupt=False):
        return machine.drive(["su", "-", target.name, "-c", "id -un"], runner, SU_PROMPT,
                             target.password, fingers, answers, interrupt,
                             prefix=overlay.prefix)
    yield su, target, runner


def test_su_target_finger_runs_command(su_setup, machine):
    su, target, runner = su_setup
    r = su(answers=[target.password])                 # the target was never seen
    assert r.status == 0
    assert r.screen == [UNAVAILABLE, "Password:", target.name], r.screen
    assert r.scans_started == []
    r = su([ENROLLED])
    assert r.status == 0
    assert r.screen == [SWIPE, target.name], r.screen
    assert r.prompts == 0
    assert not (machine.state / f"{runner.name}.state").exists()   # the target's state only


def test_su_three_wrong_fingers_then_password(su_setup, machine):
    su, target, _ = su_setup
    su(answers=[target.password])
    r = su([OTHER] * 3, answers=[target.password])
    assert r.status == 0
    assert not_recognized(r.screen) == [2, 1]
    assert r.screen[-3:] == [TRIES_USED, "Password:", target.name], r.screen
    r = su([OTHER] * 3, answers=["wrong"])
    assert r.status != 0 and target.name not in r.screen
    assert "su: Authentication failure" in r.screen
    assert machine.state_file()["failures"] == "3"


def test_su_five_failures_lock_out(su_setup, machine):
    su, target, _ = su_setup
    su(answers=[target.password])
    r = su([OTHER] * 3, answers=["wrong"])
    assert r.status != 0
    r = su([OTHER] * 2, answers=[target.password])
    assert r.status == 0
    assert r.screen == [SWIPE, "Fingerprint not recognized - 1 try left", SWIPE, UNAVAILABLE,
                        "Password:", target.name], r.screen
    assert machine.state_file()["failures"] == "0"
    r = su([ENROLLED])
    assert r.status == 0 and r.screen[-1] == target.name


def test_su_tells_another_users_terminal_nothing_of_the_account(su_setup, machine):
    """A user at someone else's unlocked terminal runs `su - target`: whether the target is
    locked out or must enter the password first, they see the same line; the target's own
    sudo says which rule applies."""
    su, target, runner = su_setup
    first = su(answers=["wrong"])                      # never seen: the password first
    assert first.screen[0] == UNAVAILABLE, first.screen
    su(answers=[target.password])
    su([OTHER] * 3, answers=["wrong"])
    su([OTHER] * 2, answers=["wrong"])                 # five: locked out
    assert machine.state_file()["failures"] == "5"
    locked = su(answers=["wrong"])
    assert locked.screen[0] == UNAVAILABLE, locked.screen
    assert not [l for l in first.screen + locked.screen if l in (FIRST_USE, LOCKED)]
    own = machine.sudo(answers=[target.password])      # the owner, at their own sudo
    assert own.screen[0] == LOCKED, own.screen


# --- nothing is left behind ------------------------------------------------------------

def test_everything_is_removed_even_after_an_error(bed, inst):
    made = {}
    with pytest.raises(RuntimeError, match="on purpose"):
        with Machine(inst, bed) as m:
            m.su_overlay()
            made = {"user": m.user.name, "service": m.service.path, "sudoers": m.sudoers.path,
                    "state": m.state}
            assert made["service"].is_file() and made["sudoers"].is_file()
            raise RuntimeError("on purpose")
    assert not system._user_exists(made["user"])
    assert not system._group_exists(made["user"])
    for key in ("service", "sudoers", "state"):
        assert not made[key].exists(), made[key]
    assert [p for p in system.pending_cleanups() if any(str(v) in p for v in made.values())] == []
    assert m.left_behind() == []
