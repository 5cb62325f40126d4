"""What a touch approves, on every path: the line before the reader asks for the finger and
the `approves="..."` field of the helper's line for every approval and refusal, read by root
(TouchPurpose: the PAM items, the pinned caller's /proc, polkit's words from localauthd).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_touch_purpose.py

* sudo: the real setuid sudo under its own PAM service name `sudo` (the rule names sudo's
  command only for that service and the system's sudo), its stack bind-mounted over
  /etc/pam.d/sudo in a private mount namespace for the command's life
  (system.PamServiceOverlay), a sudoers drop-in for a throwaway user; a command with
  control characters (ESC[2J, CR, LF, U+202E) and a 10 kB argument list (cut, one line).
* su: util-linux's su with `-c`, as test_e2e_sudo_su drives it.
* pkexec through pkttyagent, with the real polkitd (test_polkit.Polkit).
* an application (la-probe, the LocalAuthentication library).
"""
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from messages import ENROLLED, FINGER, FIRST_USE, OTHER, SWIPE  # noqa: E402
from sudo_machine import Machine, SUDO_PROMPT  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

SU_PROMPT = re.compile(r"(^|\n)Password: ")
CONTROLS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def purpose_line(screen):
    """The purpose lines shown (pkttyagent puts `Info: ` before a PAM_TEXT_INFO line)."""
    lines = [l.removeprefix("Info: ") for l in screen]
    return [l for l in lines if l.startswith("Touch the reader to")]


def helper_lines(machine, mark):
    return machine.localauthd.lines("localauth-helper", since=mark)


def approves(lines):
    """The approves= values of the helper's verdict lines (user=... service=... result=...)."""
    found = []
    for line in lines:
        if line.startswith("user=") and " result=" in line:
            m = re.search(r' approves="([^"]*)"$', line)
            assert m, line                       # every verdict line carries it, last
            found.append(m.group(1))
    return found


class SudoAsSudo:
    """sudo for a throwaway user with the PAM service `sudo` itself (overlaid in a mount
    namespace; the machine's /etc/pam.d/sudo is never changed)."""

    def __init__(self, machine):
        self.machine = machine
        self.overlay = machine.enter_context(system.PamServiceOverlay("sudo", machine.lines))
        self.user = machine.enter_context(system.ThrowawayUser())
        machine.made.append(self.user.name)
        machine.bed.enroll(self.user.name, FINGER, ENROLLED)
        dropin = machine.enter_context(system.SudoersDropIn(self.user, "sudo"))
        machine.made.append(dropin.path)

    def run(self, command, fingers=(), answers=(), env=None):
        mark = self.machine.localauthd.syslog.mark()
        r = self.machine.drive(["sudo", "-k", *command], self.user, SUDO_PROMPT, self.user.password,
                               fingers, answers, env=env, prefix=self.overlay.prefix)
        return r, helper_lines(self.machine, mark)


@pytest.fixture
def sudo(bed, inst):
    with Machine(inst, bed) as m:
        s = SudoAsSudo(m)
        first, lines = s.run(["id", "-un"], answers=[s.user.password])
        # A refusal before any scan names nothing on the screen, but its line does.
        assert first.status == 0 and first.screen[0] == FIRST_USE, first.screen
        assert purpose_line(first.screen) == [], first.screen
        assert approves(lines) == ["run `id -un` as root"], lines
        yield s
    assert m.left_behind() == []


def test_sudo_names_its_command_and_target(sudo):
    r, lines = sudo.run(["id", "-un"], fingers=[ENROLLED])
    assert r.status == 0
    assert r.screen == ["Touch the reader to run `id -un` as root", SWIPE, "root"], r.screen
    assert approves(lines) == ["run `id -un` as root"], lines
    assert any("result=success" in l and l.endswith('approves="run `id -un` as root"') for l in lines), lines
    r, lines = sudo.run(["-u", "nobody", "-g", "nogroup", "id", "-gn"], fingers=[ENROLLED])
    assert r.status == 0 and r.screen[0] == "Touch the reader to run `id -gn` as nobody:nogroup", r.screen


def test_sudo_refusal_after_the_tries_names_the_command_too(sudo):
    r, lines = sudo.run(["id", "-un"], fingers=[OTHER] * 3, answers=[sudo.user.password])
    assert r.status == 0 and purpose_line(r.screen) == ["Touch the reader to run `id -un` as root"], r.screen
    assert approves(lines) == ["run `id -un` as root"], lines
    assert any("result=authenticationFailed" in l for l in lines), lines


def test_sudo_command_with_control_characters_is_one_clean_line(sudo):
    command = ["true", "\x1b[2J", "a\rb", "c\nd", "\u202etxt.exe", "e\tf"]
    r, lines = sudo.run(command, fingers=[ENROLLED])
    assert r.status == 0
    shown = "Touch the reader to run `true ' [2J' 'a b' 'c d' txt.exe 'e f'` as root"
    assert purpose_line(r.screen) == [shown], r.screen
    # Nothing of the command reached the terminal but that line (no ESC, no carriage return).
    assert "\x1b[2J" not in r.output and "\u202e" not in r.output
    assert approves(lines) == ["run `true ' [2J' 'a b' 'c d' txt.exe 'e f'` as root"], lines
    assert not [l for l in lines if CONTROLS.search(l)], lines


def test_sudo_ten_kilobytes_of_arguments_are_cut_to_one_line(sudo):
    command = ["true"] + [f"arg{i:03d}-" + "x" * 94 for i in range(100)]
    assert sum(len(a) + 1 for a in command) > 10_000
    r, lines = sudo.run(command, fingers=[ENROLLED])
    assert r.status == 0
    [shown] = purpose_line(r.screen)
    m = re.fullmatch(r"Touch the reader to run `(.*)` as root", shown)
    assert m, shown
    assert len(m.group(1)) == 120 and m.group(1).startswith("true arg000-xxx") and m.group(1).endswith("..."), shown
    [logged] = approves(lines)
    assert logged == f"run `{m.group(1)}` as root"
    assert all(len(l) < 1000 for l in lines), [len(l) for l in lines]


def test_sudo_in_chinese(sudo):
    # (terminal_finger.present knows the Simplified Chinese finger prompt only.)
    r, lines = sudo.run(["id", "-un"], fingers=[ENROLLED], env=system.default_env(LANG="zh_CN.UTF-8"))
    assert r.status == 0 and r.screen[0] == "以 root 身份运行 `id -un`：请触摸指纹读取器", r.screen
    assert approves(lines) == ["run `id -un` as root"], lines      # the log is English


def test_su_names_the_target_and_its_command(bed, inst):
    with Machine(inst, bed) as machine:
        overlay = machine.su_overlay()
        runner = machine.enter_context(system.ThrowawayUser())
        machine.made.append(runner.name)
        target = machine.user

        def su(argv, fingers=(), answers=()):
            mark = machine.localauthd.syslog.mark()
            r = machine.drive(["su", *argv], runner, SU_PROMPT, target.password, fingers, answers,
                              prefix=overlay.prefix)
            return r, helper_lines(machine, mark)

        r, lines = su(["-", target.name, "-c", "id -un"], answers=[target.password])   # never seen: password
        assert r.status == 0 and purpose_line(r.screen) == [], r.screen
        assert approves(lines) == [f"run `id -un` as {target.name} (su)"], lines
        r, lines = su(["-", target.name, "-c", "id -un"], fingers=[ENROLLED])
        assert r.status == 0
        assert r.screen == [f"Touch the reader to run `id -un` as {target.name}", SWIPE, target.name], r.screen
        r, lines = su([target.name, "-c", "echo '\x1b]0;x\x07'; id -un"], fingers=[ENROLLED])
        assert r.status == 0
        assert purpose_line(r.screen) == [f"Touch the reader to run `echo ' ]0;x '; id -un` as {target.name}"], r.screen
        assert approves(lines) == [f"run `echo ' ]0;x '; id -un` as {target.name} (su)"], lines
    assert machine.left_behind() == []


# --- through the installation's own localauthd -----------------------------------------------

@pytest.fixture(scope="module")
def svc():
    """An installation whose module names its own localauthd (the polkit and application
    paths start it as they need it), removed at the file's end."""
    from servicebed import ServiceInstallation
    with ServiceInstallation() as i:
        yield i


def test_pkexec_through_pkttyagent_names_the_polkit_request(svc, bed_factory, syslog):
    from polkit_agents import AUTH_SELF
    from test_polkit import Polkit
    if not Path("/usr/bin/pkttyagent").is_file():
        pytest.skip("pkttyagent missing")
    bed = bed_factory(polkit_rules=AUTH_SELF)
    with system.ThrowawayUser(prefix="la-pkp-") as user:
        p = Polkit(svc, bed, syslog, user)
        try:
            p.first_password()
            mark = syslog.mark()
            r = p.pkexec(fingers=[ENROLLED])
            assert r.authorized, r
            shown = purpose_line(r.screen)
            # localauthd names polkit's action where it read exactly one pending
            # authentication of this agent; else the request is named generically.
            assert len(shown) == 1, r.screen
            assert (shown[0] == "Touch the reader to approve a polkit request"
                    or ("org.freedesktop.policykit.exec" in shown[0] and "/usr/bin/id" in shown[0])), shown
            lines = syslog.since(mark, "localauth-helper")
            verdicts = approves(lines)
            assert len(verdicts) == 1, lines
            assert (verdicts[0] == "a polkit request"
                    or verdicts[0].startswith("polkit org.freedesktop.policykit.exec for /usr/bin/id")), verdicts
        finally:
            p.close()


# --- an application ------------------------------------------------------------------------

def test_an_application_is_named_by_its_program(svc, bed, syslog):
    from appbed import app_binary, app_world
    with app_world(svc, bed, syslog, app_binary("la-probe"), "la-app-p-") as world:
        run = world.run("eval", "biometrics", fingers=[ENROLLED])
        assert run.result["success"] == "1", run.output
        program = str(world.app)
        assert f"Touch the reader to approve a request of {program}" in run.output, run.output
        # The application's own reason still shows, before.
        assert "unlock the test" in run.output
        lines = [m for m in run.messages("localauth-helper") if "evaluate biometrics: success" in m]
        assert len(lines) == 1 and lines[0].endswith(f'approves="app {program}"'), run.messages("localauth-helper")
        pre = world.run("can", "biometrics")
        assert not [m for m in pre.messages("localauth-helper") if "approves=" in m]   # no touch, no field


def test_a_dialog_shows_the_line_before_the_finger(svc, bed_factory, syslog):
    """A dialog-shaped agent (polkit_dialog.py: the lines as GNOME's and Plasma's dialogs get
    them, PAM_TEXT_INFO through polkit-agent-helper-1): the line comes once, right before the
    reader asks, and not at all when the finger is refused before any scan."""
    from polkit_agents import AUTH_SELF, dialog
    from test_polkit import Polkit
    bed = bed_factory(polkit_rules=AUTH_SELF)
    with system.ThrowawayUser(prefix="la-pkd-") as user:
        p = Polkit(svc, bed, syslog, user)
        try:
            first = dialog(p, answers=[user.password])          # never seen: no scan
            assert first.authorized and purpose_line(first.texts("INFO")) == [], first.events
            r = dialog(p, fingers=[OTHER, ENROLLED])
            assert r.authorized, r.events
            infos = r.texts("INFO")
            shown = purpose_line(infos)
            assert len(shown) == 1 and infos.index(shown[0]) == infos.index(SWIPE) - 1, infos
            assert (shown[0] == "Touch the reader to approve a polkit request"
                    or "org.freedesktop.policykit.exec" in shown[0]), shown
        finally:
            p.close()
