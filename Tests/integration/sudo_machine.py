"""The real setuid sudo and su for a throwaway user, through a PAM service of the test's
own with the installed module on the bed's reader: the set-up and the driver of the sudo
and su end-to-end tests (test_e2e_sudo_su, test_lockout_holds; test_prompt_modes.Stack is
the set-up with prompts of its own).

``SudoSetup(inst=None, bed=None, scan_timeout=10, extra=(), stack=requisite_stack)`` is a
context manager (an ExitStack: everything it made is undone on exit, whatever happened):

* ``inst``: the installation (default system.shared_installation()); ``bed``: the given bed
  or one of its own;
* ``user``: a system.ThrowawayUser with the right index finger enrolled as print f1;
* ``state``: a root-only state directory;
* ``localauthd``: a real_helper.LocalService, localauthd with the installation's helper
  behind it, started as where no systemd runs (``localauthd --listen``), stopped on exit;
* ``lines``: ``stack(module, args)``, the module's arguments naming that service
  (``service=SOCKET``), this bed, state directory, configuration, ``scan_timeout`` and
  ``extra``;
* ``service``: those lines as /etc/pam.d/PREFIX<random> (``service_prefix``), and
  ``sudoers``: a drop-in that gives the user sudo through that service;
* ``made``: the names and paths of what it created (for the leftover checks).

``Machine`` is a SudoSetup that runs them: ``drive(argv, ...)`` on a pseudo-terminal, a
finger presented when the terminal asks for it (terminal_finger.present), passwords typed
at the prompts, and a ``Run`` back (the screen, the hints, the bed's events, what each
finger gave); ``sudo(...)``, ``su_overlay()`` (the same stack as su's, in a mount namespace),
``first_password()``, ``state_file()``, ``left_behind()``.
"""
from __future__ import annotations

import contextlib
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from messages import ENROLLED, FINGER, FIRST_USE  # noqa: E402
from real_helper import LocalService  # noqa: E402
from scan_events import ScanEvents  # noqa: E402
from terminal_finger import is_hint, present  # noqa: E402
from testbed import Bed  # noqa: E402


def requisite_stack(module, args, password_module="pam_unix.so nodelay"):
    """As pam.d/sudo ships it, with the password module `requisite`, so the authsucc line
    is reached only after the password succeeded (`nodelay`: a wrong one costs no time)."""
    return [f"auth sufficient {module} {args}",
            f"auth requisite {password_module}",
            f"auth optional {module} authsucc {args}",
            "account required pam_unix.so",
            "session required pam_unix.so"]


class SudoSetup(contextlib.ExitStack):
    service_prefix = "la-e2e-sudo-"
    localauthd_options = {}       # more of LocalService's (agent=True: its ssh-agent socket too)
    requisite_stack = staticmethod(requisite_stack)

    def __init__(self, inst=None, bed=None, scan_timeout=10, extra=(), stack=None):
        super().__init__()
        self.inst, self.bed, self.scan_timeout = inst, bed, scan_timeout
        self.extra = list(extra)
        self.stack = stack or requisite_stack
        self.made = []

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
        self.localauthd = self.enter_context(LocalService(self.inst.helper, bed=self.bed, state=self.state,
                                                          **self.localauthd_options))
        args = " ".join([self.localauthd.arg, f"dbus_address={self.bed.address}", f"state_dir={self.state}",
                         f"fprint_dir={self.bed.state_dir}", f"config={self.inst.config}",
                         f"scan_timeout={self.scan_timeout}", *self.extra])
        self.lines = self.stack(self.inst.module, args)
        self.service = self.enter_context(system.PamService(self.service_prefix, self.lines))
        self.sudoers = self.enter_context(system.SudoersDropIn(self.user, self.service.name))
        self.made += [self.service.path, self.sudoers.path]


# "Fingerprint recognized" comments, it tells the user nothing to do: under PAM_SILENT (which
# sudo always passes) the helper may leave it out, so the screens below do not count on it.
MATCHED = ("Fingerprint recognized", "指纹已识别")
SUDO_PROMPT = re.compile(r"\[sudo\] password for \S+: ")



@dataclass
class Run(ScanEvents):
    status: int
    screen: list             # what the user saw, without the skip hints (see `hints`) and
                             # "Fingerprint recognized" (shown or not, as the helper decides)
    hints: list              # the skip hints shown
    events: list             # bed events during the run
    results: list            # what each presented finger gave
    prompts: int             # password prompts seen
    output: str = field(default="", repr=False)


class Machine(SudoSetup):
    """A SudoSetup (a bed, a throwaway user with the right index finger enrolled
    as print f1, the product installed in a temporary prefix, a root-only state directory,
    the stack as a PAM service for sudo with a sudoers drop-in), and the same stack as su's
    overlay. Everything is removed on exit, whatever happened."""

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
