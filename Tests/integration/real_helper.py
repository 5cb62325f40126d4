"""The real helper against a test bed through a pam_wrapper world, one transaction at a time:
the driver of the fault matrix (test_faults.py) and of the logind cases
(test_never_remote.py).

* ``Real(world, bed)``: a made-up user with a password, a state directory, and
  ``stack(*args)``, the module (then the password module) with arguments that name the
  bed; ``attempt(fault, service)`` drives one transaction with someone at the reader;
  ``match_works(service)``; ``in_background(...)``.
* ``attempt(...)``, ``Tally``: a transaction, counted in a tally when one is given (tried,
  wrongful successes, host crashes); ``check(r, result, pam, cause)``: the first line's
  outcome, its log line and the password after it; ``prompts(r)``,
  ``password_prompt_at(r)``;
* ``bed_args(world, bed, state, *extra)``: the module arguments that point the real helper
  at a bed, a state directory and no configuration file, without password-age rules;
* ``helper_pids_below(pid)``: the real helpers started below a process; ``parent_of(pid)``.
"""
import concurrent.futures
import dataclasses
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pamenv  # noqa: E402
from pamenv import MODULE, outcomes  # noqa: E402

REAL_HELPER = pamenv.REPO / "build" / "libexec" / "localauth" / "localauth-helper"
USER = "la-fault-user"          # made up: pam_matrix knows its password, fprintd any name
PASSWORD = "fault-pw-7"
ENROLLED, STRANGER = "f1", "f-stranger"   # virtual prints: the user's and someone else's
# Someone can be at the reader: the driver reads its script from a pipe, so a graphical
# display says so instead of a terminal.
PRESENT = {"DISPLAY": ":0"}
NOBODY = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}
RECOGNIZED = "Fingerprint recognized"

needs_helper = pytest.mark.skipif(not REAL_HELPER.is_file(),
                                  reason="localauth-helper not built (scripts/build)")


@dataclasses.dataclass
class Tally:
    """The faults tried, those that ended in a wrongful success, those that killed the host."""

    tried: list = dataclasses.field(default_factory=list)
    wrongful: list = dataclasses.field(default_factory=list)
    crashed: list = dataclasses.field(default_factory=list)


def prompts(result):
    return [text for style, text in result.messages if style.startswith("PAM_PROMPT")]


def attempt(fault, world, service, user=USER, *, tally=None, answers=(PASSWORD,), **kw):
    """One transaction under a fault, counted in ``tally`` when given. A host that dies is
    a failure of this test; a success without a matched finger and without the password is
    noted (in a run where no finger is meant to match)."""
    if tally is not None:
        tally.tried.append(fault)
    try:
        r = world.drive(service, user, answers=list(answers), **kw)
    except RuntimeError as exc:  # the driver died: the application would have
        if tally is not None:
            tally.crashed.append(fault)
        pytest.fail(f"{fault}: the host process did not survive: {exc}")
    ours = outcomes(r.logs)
    if tally is not None and ((ours and ours[0]["pam"] == "PAM_SUCCESS") or (
            r.rv == "PAM_SUCCESS" and "Password: " not in prompts(r))):
        tally.wrongful.append(fault)
    return r


def check(r, result, pam, cause, *, password=True):
    """The first line's outcome, its log line, and the password after it."""
    ours = outcomes(r.logs)
    assert ours, f"no outcome line: {[l.message for l in r.logs]}"
    first = ours[0]
    assert (first["result"], first["pam"]) == (result, pam), first
    assert cause in first["cause"], first
    assert r.children == [], "the helper was not reaped"
    if password:
        assert r.rv == "PAM_SUCCESS", r.stderr[-2000:]
        assert prompts(r)[-1] == "Password: "
    return first


def password_prompt_at(r):
    """When the password prompt came (the driver's clock)."""
    for (style, text), at in zip(reversed(r.messages), reversed(r.times["messages"])):
        if style == "PAM_PROMPT_ECHO_OFF" and text == "Password: ":
            return at
    raise AssertionError(f"no password prompt: {r.messages}")


def bed_args(world, bed, state, *extra, helper=REAL_HELPER):
    """The real helper with ``bed``'s bus and prints and the state directory ``state``; a
    configuration file that does not exist; no password-age rules (a user the product has
    never seen reaches the reader); ``extra`` arguments last."""
    return [f"helper={helper}", f"state_dir={state}", f"config={world.root}/absent.conf",
            f"dbus_address={bed.address}", f"fprint_dir={bed.state_dir}",
            "password_after_reboot=no", "password_after_idle=0", "password_stale=0", *extra]


class Real:
    """The real helper in a pam_wrapper world, pointed at a bed. The password is not
    required first (that rule has its own tests): every run reaches the reader. Its
    attempts are counted in ``tally`` (a class attribute; None: not counted)."""

    tally = None

    def __init__(self, world, bed):
        self.world, self.bed = world, bed
        self.state = world.root / "state"
        self.state.mkdir(mode=0o700)
        world.add_user(USER, PASSWORD)

    def args(self, *extra, helper=REAL_HELPER, state=None):
        return bed_args(self.world, self.bed, state or self.state, *extra, helper=helper)

    def stack(self, *extra, authsucc=False, name="la-fault", **kw):
        args = " ".join(self.args(*extra, **kw))
        lines = [f"auth sufficient {MODULE} {args}", f"auth required {self.world.matrix}"]
        if authsucc:
            lines.append(f"auth optional {MODULE} authsucc {args}")
            lines.append(f"account required {MODULE} {args}")
            lines.append("account required pam_permit.so")   # ours answers PAM_IGNORE
        return self.world.service(name, lines)

    def attempt(self, fault, service, user=USER, **kw):
        kw.setdefault("env", PRESENT)
        kw.setdefault("account", True)   # the account phase after success, as sudo runs it
        return attempt(fault, self.world, service, user, tally=self.tally, **kw)

    def in_background(self, fault, service, **kw):
        pool = concurrent.futures.ThreadPoolExecutor(1)
        future = pool.submit(self.attempt, fault, service, **kw)
        pool.shutdown(wait=False)
        return future

    def match_works(self, service):
        """After the fault is gone, the finger works again (nothing left claimed)."""
        inj = self.bed.scan_when_ready(ENROLLED)
        r = self.world.drive(service, USER, answers=[PASSWORD], env=PRESENT)
        assert inj.wait(15) == ["verify-match"]
        assert outcomes(r.logs)[0]["result"] == "success", outcomes(r.logs)
        assert "Password: " not in prompts(r)


def helper_pids_below(ancestor):
    """Processes running the real helper whose parent is a child of `ancestor` (the driver
    is our child; others may run helpers at the same time)."""
    target = os.path.realpath(REAL_HELPER)
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{d}/exe") != target:
                continue
            if parent_of(parent_of(int(d))) == ancestor:
                found.append(int(d))
        except OSError:
            continue
    return found


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
