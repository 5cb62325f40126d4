"""polkit for real: pkexec with pkttyagent on a pseudo-terminal, the real polkitd on the
test bed's bus, the setuid polkit-agent-helper-1, and the project's pam.d/polkit-1 as it
ships.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_polkit.py

Everything a user's pkexec touches runs in a private mount namespace (desktop.Desktop): the
bed's bus at /run/dbus/system_bus_socket (pkexec and the agent helper are setuid and ignore
DBUS_SYSTEM_BUS_ADDRESS), pam.d/polkit-1 as /etc/pam.d/polkit-1 with the module found by
its plain name, /etc/security/localauth.conf naming the bed's prints and a state directory
of the test's, and the installation's localauthd listening at the socket its module names
(desktop.Desktop.serve: the module starts no helper itself, the finger is reached through
localauthd only). polkitd runs in a namespace of its own with one rule over
/etc/polkit-1/rules.d: pkexec asks the subject's own password (auth_self), as on a desktop
where the user is an administrator (Debian's default rule would ask any member of the sudo
group). Nothing on the machine changes.

There is no logind here, so polkitd knows no session: pkttyagent registers for the shell
that runs pkexec (`--process $$`, the subject pkexec names), which polkit allows without a
session. pkexec's own text agent cannot be used: it registers as root (pkexec is setuid)
and polkitd then refuses the agent helper's answer ("No session for cookie") whatever the
password; that is polkit's, and the same without localauth.

The helper decides presence from the agent (the agent helper's parent): here pkttyagent,
with the terminal as its controlling terminal. An agent with no terminal and no display
gets no scan: `polkit-agent-helper-1` is then driven directly, as an agent drives it (its
line protocol), from a process with neither. What ran for real there: the agent helper, its
PAM conversation and result, the module and helper; polkitd then refuses the made-up
cookie.

What the touch approves: localauthd watches polkitd's calls to the agents and pkexec's call
to polkitd (a monitor of the bed's bus) and names the one pending authentication of the agent
helper's agent on the agent's line and in the helper's `approves=`; a call polkitd did not
send (the agent's own, another uid's) and two pending name nothing ("a polkit request").
"""
import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pexpect
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from desktop import LoginSession, UserDesktop  # noqa: E402
from logind_bus import LogindBus  # noqa: E402
from messages import ENROLLED, OTHER, SWIPE, FIRST_USE, LOCKED  # noqa: E402
from polkit_agents import AUTH_SELF, PKEXEC, dialog  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)
from scan_events import ScanEvents  # noqa: E402
from pamenv import LogLine, outcomes  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
AGENT_HELPER = "/usr/lib/polkit-1/polkit-agent-helper-1"
ASK_FINGER = re.compile(r"Swipe your right index finger across the fingerprint reader")
PASSWORD_PROMPT = re.compile(r"(^|\n)Password: ")
# localauthd's line for a request it handed to a helper.
HELPER_STARTED = re.compile(r"^uid \d+ pid \d+ \([^)]*\): helper pid \d+")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="runs as root"),
    pytest.mark.skipif(not (Path("/usr/bin/pkexec").is_file() and Path(AGENT_HELPER).is_file()
                            and Path("/usr/bin/pkttyagent").is_file()),
                       reason="pkexec, pkttyagent or polkit-agent-helper-1 missing"),
]


@dataclass
class Run(ScanEvents):
    status: int
    screen: list                    # what the agent showed, one line each, colours removed
    results: list                   # what each presented finger gave
    events: list                    # bed events during the run
    prompts: int                    # password prompts answered or interrupted
    output: str = field(default="", repr=False)
    served: list = field(default_factory=list, repr=False)   # localauthd's lines

    @property
    def authorized(self):
        return self.status == 0 and self.screen[-1:] == ["root"]


class Polkit(UserDesktop):
    """A desktop with pam.d/polkit-1 as shipped, a throwaway user with the right index
    finger enrolled as print f1, and pkexec run by that user with pkttyagent."""

    def __init__(self, inst, bed, syslog, user):
        super().__init__(inst, bed, syslog, user, lambda desktop: desktop.pam_file(
            "polkit-1", (REPO / "pam.d" / "polkit-1").read_text()))

    def pkexec(self, fingers=(), answers=(), interrupt=False, around_scan=None, command="id -un", **namespace) -> Run:
        """pkexec as the user: presents ``fingers`` as the agent asks for them, types
        ``answers`` at the password prompts in turn; a further prompt is interrupted.
        ``command``: what pkexec runs (shell words).
        ``around_scan``: a context manager entered once the agent has asked for a finger and
        left once the scan's result is in.
        ``namespace``: a login session for it all, or logind running (desktop.Namespace)."""
        mark, log_mark = self.bed.mark(), self.syslog.mark()
        script = PKEXEC.replace("pkexec id -un", f"pkexec {command}")
        pt = self.desktop.run_on_pty(["/bin/sh", "-c", script], user=self.user, **namespace)
        results = []
        try:
            for p in fingers:
                pt.expect(ASK_FINGER, timeout=20)
                with around_scan() if around_scan else contextlib.nullcontext():
                    results.append(self.bed.reader.inject(f"SCAN {p}", timeout=15))
            prompts = pt.answer_passwords(PASSWORD_PROMPT, answers, interrupt, timeout=20, end_timeout=30)
            res = pt.finish(timeout=20)
        finally:
            pt.kill()
        screen = [ANSI.sub("", l).strip() for l in system.screen_lines(res.output)]
        run = Run(res.status, [l for l in screen if l], results, self.bed.events(mark),
                  prompts, res.output, self.served(log_mark))
        if run.status == 0:      # no success without a match in this run or the password
            assert run.matched or self.user.password in answers, run
        return run

    def first_password(self):
        r = self.pkexec(answers=[self.user.password])
        assert r.authorized and FIRST_USE in " ".join(r.screen), r
        assert r.verify_starts == []
        return r


@pytest.fixture
def polkit(inst, bed_factory, syslog):
    bed = bed_factory(polkit_rules=AUTH_SELF)
    with system.ThrowawayUser(prefix="la-pk-") as user:
        p = Polkit(inst, bed, syslog, user)
        try:
            yield p
        finally:
            p.close()


def shown(run, text):
    """How often the agent showed a line containing ``text``."""
    return sum(text in line for line in run.screen)


# --- pkexec with pkttyagent ----------------------------------------------------------------

def test_pkexec_first_use_takes_the_password_then_the_finger(polkit):
    polkit.first_password()
    r = polkit.pkexec([ENROLLED])
    assert r.authorized, r
    assert r.results == ["verify-match"] and r.prompts == 0
    assert shown(r, SWIPE) == 1, r.screen              # the message reached the agent
    assert shown(r, "Ctrl-C") == 0, r.screen           # which would end pkexec, not skip
    assert polkit.state()["failures"] == "0"
    assert any(HELPER_STARTED.match(l) for l in r.served), r.served   # through localauthd


def test_a_match_is_authentication_complete_for_an_agent_that_wakes_late(polkit):
    """polkit's agent library (pkttyagent's, GNOME Shell's, KDE's) reads one line of the
    agent helper per wake-up, and when the helper's exit has come with lines still unread it
    ends the session as failed: a line the module sent just before SUCCESS turned a match
    into "AUTHENTICATION FAILED" (GNOME: "Sorry, that didn't work", and the dialog asks
    again) whenever the agent woke after the helper had exited, as on a busy machine. Here
    the agent is stopped while the finger is read and continued once its helper has exited."""
    polkit.first_password()

    @contextlib.contextmanager
    def agent_asleep():
        # The agent running a helper now (the first run's may still be on its way out).
        [agent] = [pid for pid in processes_named("pkttyagent", polkit.user.uid)
                   if children_states(pid)]
        os.kill(agent, signal.SIGSTOP)
        try:
            yield
            wait_until("the agent helper's exit after the match",
                       lambda: all(state == "Z" for state in children_states(agent)), 30)
        finally:
            os.kill(agent, signal.SIGCONT)

    r = polkit.pkexec([ENROLLED], around_scan=agent_asleep)
    assert r.results == ["verify-match"] and r.authorized, r
    assert (shown(r, "AUTHENTICATION COMPLETE"), shown(r, "AUTHENTICATION FAILED")) == (1, 0), r.screen


def processes_named(comm: str, uid: int) -> list[int]:
    return [pid for pid in system._processes_of(uid) if proc_stat(pid)[:1] == [comm]]


def children_states(parent: int) -> list[str]:
    """The state letter of each child of ``parent`` (Z: exited, not yet waited for). Only
    the test's user runs pkttyagent, and its only child is polkit's agent helper."""
    states = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        fields = proc_stat(int(entry))
        if fields[2:3] == [str(parent)]:
            states.append(fields[1])
    return states


def proc_stat(pid: int) -> list[str]:
    """comm, state, ppid of /proc/PID/stat ([] once the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    comm = text[text.index("(") + 1:text.rindex(")")]
    return [comm, *text[text.rindex(")") + 2:].split()[:2]]


def wait_until(what: str, reached, seconds: float) -> None:
    end = time.monotonic() + seconds
    while not reached():
        if time.monotonic() > end:
            raise TimeoutError(f"no {what} within {seconds} s")
        time.sleep(0.05)


def test_pkexec_three_wrong_fingers_then_the_password(polkit):
    polkit.first_password()
    r = polkit.pkexec([OTHER] * 3, answers=[polkit.user.password])
    assert r.authorized, r
    assert r.results == ["verify-no-match"] * 3
    assert shown(r, "Fingerprint not recognized - 2 tries left") == 1, r.screen
    assert shown(r, "Fingerprint not recognized - 1 try left") == 1, r.screen
    assert shown(r, "Fingerprint not recognized - use your password") == 1, r.screen
    assert r.prompts == 1 and len(r.verify_starts) == 3
    assert polkit.state()["failures"] == "0"            # the password cleared the count


def test_pkexec_lockout_then_the_password_in_the_same_agent_clears_it(polkit):
    polkit.first_password()
    r = polkit.pkexec([OTHER] * 3, answers=["wrong"])
    assert not r.authorized and r.status != 0, r
    assert polkit.state()["failures"] == "3"
    r = polkit.pkexec([OTHER] * 2, answers=[polkit.user.password])
    assert r.authorized, r
    assert r.results == ["verify-no-match"] * 2
    assert shown(r, LOCKED) == 1, r.screen
    assert polkit.state()["failures"] == "0"            # cleared by the same agent's password
    r = polkit.pkexec(answers=[])                       # would fail at a password prompt
    assert r.prompts == 1 and r.verify_starts, r        # ... but the finger is asked first
    r = polkit.pkexec([ENROLLED])
    assert r.authorized and r.prompts == 0, r


def test_pkexec_locked_out_goes_straight_to_the_password(polkit):
    polkit.first_password()
    polkit.pkexec([OTHER] * 3, answers=["wrong"])
    polkit.pkexec([OTHER] * 2, interrupt=True)
    assert polkit.state()["failures"] == "5"
    r = polkit.pkexec(answers=["wrong"])
    assert not r.authorized and r.verify_starts == [], r
    assert shown(r, LOCKED) == 1, r.screen
    assert polkit.state()["failures"] == "5"            # a wrong password clears nothing


# --- logind's view of the agent ------------------------------------------------------------
# logind cannot run here (no init system), so these give the helper and polkitd logind's
# record of a session instead: a cgroup named like the session's scope holding pkexec,
# pkttyagent and the agent helper, and the session's file in /run/systemd/sessions
# (desktop.LoginSession). sd-login reads exactly these; what logind would do to make them
# is not exercised. localauthd is started again in the same view of /run/systemd as the
# command it serves (desktop.Desktop.prefix), so its helper reads the same records.

@pytest.fixture
def session_for(polkit):
    """Sessions' records, and logind's bus API for their hints (logind_bus.LogindBus)."""
    made = []

    def make(**kw):
        s = LoginSession(polkit.user, **kw)
        made.append(s)
        return s
    with LogindBus(polkit.bed.address):
        yield make
    for s in made:
        s.close()


def test_logind_agent_in_a_local_session_on_a_seat_gets_the_finger(polkit, session_for):
    local = session_for()
    polkit.pkexec(answers=[polkit.user.password], session=local, logind=True)
    r = polkit.pkexec([ENROLLED], session=local, logind=True)
    assert r.authorized and r.prompts == 0, r


def test_logind_agent_in_a_remote_session_gets_no_scan(polkit, session_for):
    polkit.first_password()
    remote = session_for(remote=True)
    r = polkit.pkexec(answers=[polkit.user.password], session=remote, logind=True)
    assert r.authorized and r.verify_starts == [], r      # straight to the password
    assert shown(r, SWIPE) == 0, r.screen


def test_logind_agent_in_a_session_without_a_seat_gets_no_scan(polkit, session_for):
    polkit.first_password()
    seatless = session_for(seat=None)
    r = polkit.pkexec(answers=[polkit.user.password], session=seatless, logind=True)
    assert r.authorized and r.verify_starts == [], r


def test_logind_running_and_the_agent_in_no_session_gets_no_scan(polkit):
    polkit.first_password()
    r = polkit.pkexec(answers=[polkit.user.password], logind=True)
    assert r.authorized and r.verify_starts == [], r


# --- a dialog: no terminal ----------------------------------------------------------------

def test_dialog_offers_the_finger_and_shows_the_messages(polkit):
    r = dialog(polkit, answers=[polkit.user.password])
    assert r.authorized, r.events
    assert r.texts("ERROR") == [FIRST_USE] and r.verify_starts == [], r.events
    r = dialog(polkit, fingers=[OTHER, ENROLLED])
    assert r.authorized, r.events
    assert r.results == ["verify-no-match", "verify-match"]
    assert r.texts("PROMPT") == [], r.events               # no password asked
    assert r.texts("INFO").count(SWIPE) == 2, r.events
    assert not any("Ctrl-C" in t for k, t in r.events), r.events  # a dialog has no Ctrl-C
    assert "Fingerprint not recognized - 2 tries left" in r.texts("ERROR") + r.texts("INFO")


def test_dialog_lockout_is_cleared_by_the_password_typed_in_the_dialog(polkit):
    dialog(polkit, answers=[polkit.user.password])
    r = dialog(polkit, fingers=[OTHER] * 3, answers=["wrong"])
    assert not r.authorized and r.texts("HELPER") == ["FAILURE"], r.events
    r = dialog(polkit, fingers=[OTHER] * 2, answers=[polkit.user.password])
    assert r.authorized, r.events
    assert LOCKED in r.texts("ERROR") + r.texts("INFO"), r.events
    assert polkit.state()["failures"] == "0"
    r = dialog(polkit, fingers=[ENROLLED])
    assert r.authorized and r.texts("PROMPT") == [], r.events


def test_an_agent_with_no_terminal_and_no_display_gets_no_scan(polkit):
    dialog(polkit, answers=[polkit.user.password])
    r = dialog(polkit, display=False, answers=[polkit.user.password])
    assert r.authorized, r.events
    assert r.verify_starts == [], r.events                # nobody there: no scan at all
    assert r.texts("INFO") == [] and len(r.texts("PROMPT")) == 1, r.events
    r = dialog(polkit, display=False)                      # and the Cancel fails it
    assert not r.authorized and r.verify_starts == [], r.events


# --- polkit 127+: the agent helper started from a socket, through localauthd ----------------

class HelperSocket:
    """polkit_helper_socket.py in the desktop's namespace: the service manager's part of a
    socket-activated agent helper (the helper's parent is it, not the agent), with no
    terminal, as a service manager has none. Stopped by its PID."""

    def __init__(self, polkit):
        script = polkit.desktop.ns.root / "polkit_helper_socket.py"
        script.write_text((Path(__file__).parent / "polkit_helper_socket.py").read_text())
        script.chmod(0o644)
        self.path = polkit.desktop.ns.root / "agent-helper.socket"
        self.log = polkit.desktop.ns.root / "agent-helper.log"
        argv = polkit.desktop.ns.prefix() + ["/usr/bin/python3", str(script), str(self.path)]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
        deadline = time.monotonic() + 30
        while "READY" not in self.output():
            assert self.proc.poll() is None and time.monotonic() < deadline, self.output()
            time.sleep(0.05)

    def output(self) -> str:
        """What it and the helpers it started wrote (their stderr)."""
        return self.log.read_text()

    def stop(self):
        system.stop_popen(self.proc)


@pytest.fixture
def helper_socket(polkit):
    s = HelperSocket(polkit)
    try:
        yield s
    finally:
        s.stop()


def test_a_socket_activated_agent_helper_through_localauthd_judges_the_agent_on_its_stdin(polkit, helper_socket):
    """polkit 127 and later: the agent connects to polkit-agent-helper.socket and the
    helper runs on that connection, a child of the service manager. Through localauthd
    (the desktop's, at the socket the shipped module names) the helper's agent is the peer
    of its stdin when that stdin was accepted on polkit's socket (`polkit_agent_socket`;
    here the stand-in's): the dialog, which names a display, gets the finger. A helper
    whose stdin is any other socket (a user's setuid helper connected to some desktop
    process) is judged for its parent: the password, never a scan. With no localauthd the
    module starts nothing: the password at once, with its one line."""
    mark = polkit.syslog.mark()
    polkit.desktop.configure(polkit_agent_socket=helper_socket.path)
    first = dialog(polkit, answers=[polkit.user.password], helper_socket=helper_socket.path)
    assert first.authorized and first.verify_starts == [], first.events
    finger = polkit.syslog.mark()
    r = dialog(polkit, fingers=[ENROLLED], helper_socket=helper_socket.path)
    helper = polkit.syslog.since(mark, "localauth-helper")
    found = [m for m in helper if "the peer of its stdin" in m]
    assert (r.authorized, r.results, r.texts("PROMPT"), len(found) >= 2) == \
        (True, ["verify-match"], [], True), (r.events, helper)
    assert any(m.startswith("uid 0 pid ") for m in polkit.served(mark)), polkit.served(mark)
    # The same agent names polkit's request to localauthd too (PolkitAgentHelper).
    assert sum(NAMED_EXEC in m for m in polkit.served(finger)) == 1, polkit.served(finger)

    polkit.desktop.configure()          # polkit's own socket is elsewhere: not this one
    other = polkit.syslog.mark()
    r = dialog(polkit, answers=[polkit.user.password], helper_socket=helper_socket.path)
    assert r.authorized and r.verify_starts == [] and len(r.texts("PROMPT")) == 1, r.events
    assert not any("named to its helper" in m for m in polkit.served(other)), polkit.served(other)
    # Its parent (the stand-in for the service manager) has no authentication pending.
    assert any(m.endswith(": not named") for m in polkit.served(other)), polkit.served(other)

    polkit.desktop.stop_serving()       # no localauthd: the module starts nothing
    polkit.desktop.configure(polkit_agent_socket=helper_socket.path)
    mark = polkit.syslog.mark()
    r = dialog(polkit, answers=[polkit.user.password], helper_socket=helper_socket.path)
    assert r.authorized and r.verify_starts == [] and len(r.texts("PROMPT")) == 1, r.events
    missing = f"localauthd is not running (no socket at {polkit.desktop.inst.service_socket})"
    (line,) = outcomes([LogLine(0, m) for m in polkit.syslog.since(mark)])
    assert (line["result"], line["pam"]) == ("helperFailure", "PAM_AUTHINFO_UNAVAIL"), line
    assert line["cause"].startswith(missing), line
    assert polkit.served(mark) == [] and polkit.syslog.since(mark, "localauth-helper") == []


# --- what the touch approves: polkit's action and program, read by root --------------------
# localauthd watches polkitd's BeginAuthentication calls to the agents (a monitor of the
# bus, PolkitWatch) and hands the one pending authentication of the agent helper's agent to
# the request's helper, which names it in the agent's lines and its log line.

NAMED_EXEC = "polkit's agent helper answers org.freedesktop.policykit.exec for /usr/bin/id: named to its helper"
APPROVES_EXEC = 'approves="polkit org.freedesktop.policykit.exec for /usr/bin/id: '
APPROVES_UNNAMED = 'approves="a polkit request"'


def helper_lines(polkit, mark):
    """The helper's approval and refusal lines since ``mark``."""
    return [l for l in polkit.syslog.since(mark, "localauth-helper") if " result=" in l]


def test_pkexec_names_its_action_and_program(polkit):
    polkit.first_password()
    mark = polkit.syslog.mark()
    r = polkit.pkexec([ENROLLED])
    assert r.authorized, r
    assert sum(NAMED_EXEC in l for l in r.served) == 1, r.served
    # The agent's line before the finger is asked names the action and the program ...
    touch = [l for l in r.screen if "Touch the reader" in l]
    assert len(touch) == 1 and "org.freedesktop.policykit.exec" in touch[0] and "/usr/bin/id" in touch[0], r.screen
    assert r.screen.index(touch[0]) < next(i for i, l in enumerate(r.screen) if SWIPE in l), r.screen
    # ... and so does the helper's line of the approval.
    [line] = helper_lines(polkit, mark)
    assert "result=success" in line and APPROVES_EXEC in line, line


def test_pkexec_of_a_program_named_with_control_characters_is_named_on_one_clean_line(polkit):
    """The program's path is the user's to choose: escapes, a carriage return, a bidi
    override and a newline in it reach the agent's line and the log line cleaned, one line."""
    folder = polkit.desktop.ns.root / f"la-pk-prog-{os.getpid()}"
    folder.mkdir(mode=0o755)
    program = folder / "run\x1b[2J\rnow\u202eexe\nnext line"
    program.write_text("#!/bin/sh\nid -un\n")
    program.chmod(0o755)
    polkit.first_password()
    mark = polkit.syslog.mark()
    r = polkit.pkexec([ENROLLED], command=shlex.quote(str(program)))
    assert r.authorized, r
    raw = r.output[r.output.index("Touch the reader"):]
    raw = raw[:raw.index("\n")].removesuffix("\r")     # the terminal's line end
    assert "org.freedesktop.policykit.exec" in raw and f"{folder.name}/run" in raw, raw
    assert not any(c in raw for c in "\x1b\r\u202e"), repr(raw)
    [line] = helper_lines(polkit, mark)
    assert 'approves="polkit org.freedesktop.policykit.exec for ' in line and f"{folder.name}/run" in line, line
    assert not any(c in line for c in "\x1b\r\n\u202e"), repr(line)


def test_a_dialogs_pkexec_names_its_action_and_program(polkit):
    dialog(polkit, answers=[polkit.user.password])
    mark = polkit.syslog.mark()
    r = dialog(polkit, fingers=[ENROLLED])
    assert r.authorized, r
    assert sum(NAMED_EXEC in l for l in polkit.served(mark)) == 1, polkit.served(mark)
    touch = [t for t in r.texts("INFO") if "Touch the reader" in t]
    assert len(touch) == 1 and "org.freedesktop.policykit.exec" in touch[0] and "/usr/bin/id" in touch[0], r.events
    [line] = helper_lines(polkit, mark)
    assert "result=success" in line and APPROVES_EXEC in line, line


def test_a_begin_authentication_not_sent_by_polkitd_names_nothing(polkit):
    """The agent sends itself a BeginAuthentication of its own making (any uid can address
    one to any connection) and runs the agent helper for it: root saw no such call of
    polkitd's, so nothing is named; the made-up cookie then fails at polkitd."""
    dialog(polkit, answers=[polkit.user.password])
    mark = polkit.syslog.mark()
    r = dialog(polkit, fingers=[ENROLLED], forge=True)
    served = polkit.served(mark)
    assert r.texts("BEGIN")[:1] == ["org.localauth.test.forged Forged message: approve nothing"], r
    assert r.texts("HELPER") == ["FAILURE"] and not r.authorized, r
    assert not any("named to its helper" in l for l in served), served
    assert sum("no pending polkit authentication of its agent seen: not named" in l for l in served) == 1, served
    assert not any("forged" in t.lower() for k, t in r.events if k in ("INFO", "ERROR")), r.events
    [line] = helper_lines(polkit, mark)
    assert APPROVES_UNNAMED in line and "forged" not in line.lower(), line


def test_a_begin_authentication_another_uid_sends_to_an_agent_names_nothing(polkit):
    """Another uid (nobody) calls the agent's BeginAuthentication; the agent runs the agent
    helper for it as it would for polkitd's: nothing is named."""
    dialog(polkit, answers=[polkit.user.password])
    mark = polkit.syslog.mark()
    sent = []

    def forge(name):
        argv = system.as_user("nobody", [
            "gdbus", "call", "--system", "--dest", name, "--object-path", "/org/localauth/test/Agent",
            "--method", "org.freedesktop.PolicyKit1.AuthenticationAgent.BeginAuthentication",
            "org.localauth.test.forged", "Forged message: approve nothing", "",
            "{'program': '/usr/bin/forged-program'}", "forged-cookie", "@a(sa{sv}) []"])
        sent.append(subprocess.Popen([*polkit.desktop.prefix(), *argv], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL))

    try:
        r = dialog(polkit, fingers=[ENROLLED], forge_from=forge)
    finally:
        for p in sent:
            p.kill()
            p.wait()
    served = polkit.served(mark)
    assert r.texts("BEGIN")[:1] == ["org.localauth.test.forged Forged message: approve nothing"], r
    assert not any("named to its helper" in l for l in served), served
    assert sum("no pending polkit authentication of its agent seen: not named" in l for l in served) == 1, served
    [line] = helper_lines(polkit, mark)
    assert APPROVES_UNNAMED in line and "forged" not in line.lower(), line


def test_two_pending_authentications_of_one_agent_name_nothing(polkit):
    dialog(polkit, answers=[polkit.user.password])
    mark = polkit.syslog.mark()
    r = dialog(polkit, fingers=[ENROLLED], two=True)
    served = polkit.served(mark)
    assert len(r.texts("BEGIN")) == 2 and r.authorized, r
    assert not any("named to its helper" in l for l in served), served
    assert sum("its polkit agent has 2 authentications pending: not named" in l for l in served) == 1, served
    [line] = helper_lines(polkit, mark)
    assert "result=success" in line and APPROVES_UNNAMED in line, line


def test_after_polkitd_restarts_its_requests_are_named_again(polkit):
    """polkitd changes hands: localauthd forgets what the old one had and makes its monitor
    again for the new unique name (its line says so), then names the new one's requests."""
    polkit.first_password()
    mark = polkit.syslog.mark()
    polkit.bed.restart_polkit()
    # Seen taking the name while localauthd watched: every authentication it begins is seen.
    wait_until("localauthd's monitor of the new polkitd",
               lambda: any("a monitor of polkitd's calls" in l and "watched from its start" in l
                           for l in polkit.served(mark)), 30)
    r = polkit.pkexec([ENROLLED])
    assert r.authorized, r
    assert sum(NAMED_EXEC in l for l in r.served) == 1, r.served


def test_an_agent_older_than_localauthds_watch_is_not_named(polkit):
    """localauthd starts again while an agent runs: authentications that agent was given
    before root watched polkitd are unknown, so none of its requests is named (the one seen
    could be the wrong one), until an agent started after the watch asks."""
    dialog(polkit, answers=[polkit.user.password])
    flag = polkit.desktop.ns.root / f"la-pk-go-{os.getpid()}"
    mark = polkit.syslog.mark()

    def restart_then_go():
        polkit.desktop.stop_serving()
        polkit.desktop.serve()
        wait_until("localauthd's monitor of polkitd",
                   lambda: any("a monitor of polkitd's calls" in l for l in polkit.served(mark)), 30)
        flag.touch()

    waiting = f'while [ ! -e "{flag}" ]; do sleep 0.1; done; pkexec id -un'
    r = dialog(polkit, fingers=[ENROLLED], command=["/bin/sh", "-c", waiting], at_start=restart_then_go)
    assert r.subject == (0, ["root"]), r.events
    served = polkit.served(mark)
    assert not any("named to its helper" in l for l in served), served
    assert sum("the agent is older than root's watch of polkitd" in l for l in served) == 1, served
    [line] = helper_lines(polkit, mark)
    assert "result=success" in line and APPROVES_UNNAMED in line, line

