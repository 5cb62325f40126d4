"""GNOME 48 on Wayland under GDM 48 (Debian 13), driven as a person would: QEMU's keyboard
for the keys, QEMU's screendump for what a person sees (saved for a failed test, since no
text can be read off the screen), and the guest's own records for every fact a test
asserts: the module's journal lines, fprintd's finger-needed (la-fingerwatch), logind's
sessions, la-run's exit status files and pam_gnome_keyring's journal lines.

    desk = Desktop(guest)
    desk.wait_greeter()
    login = desk.login("alice")            # Enter on the greeter's first user, then the password
    term = desk.open_terminal()            # GNOME Terminal's window, focused, keys reaching it
    out = desk.run_in_terminal(term, "sudo -k id", ident="sudo")
    out = desk.unlock()                    # loginctl lock-session, Escape, then the finger

Every wait is bounded and waits for a state that stays; where a key may reach the screen
before the widget that wants it (a greeter still drawing, an entry not yet shown), the key is
sent again only after its effect failed to appear (``RETRY``), never on a guessed delay alone.
"""
from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from guest import PASSWORDS, PRINTS, WAIT, Guest, GuestError, Mark, wait_for

RETRY = 30          # seconds for a key's effect to appear before it is sent again
JOURNAL_OF = {"sudo", "pkexec", "polkitd", "polkit-agent-helper-1", "gnome-shell",
              "gdm-password]", "localauth-helper", "fprintd"}


@dataclass
class GuiOutcome:
    finger: list[bool]
    scans: list[str]
    passwords: int                 # passwords typed
    done: bool                     # the command exited / the session is there / unlocked
    rc: Optional[int]
    line: dict                     # the module's first-line verdict
    lines: list[dict]
    extra: dict = field(default_factory=dict)
    shots: list[str] = field(default_factory=list)
    journal: str = ""              # the callers' and polkit's lines meanwhile, for a failure

    @property
    def finger_offered(self) -> bool:
        return True in self.finger

    @property
    def approves(self) -> set[str]:
        """What root said each touch approved: the ``approves=`` field of the helper's
        approval and refusal lines meanwhile (the helper's own journal lines)."""
        return set(re.findall(r'^localauth-helper\[\d+\]: .* approves="([^"]*)"$', self.journal, re.M))

    def facts(self) -> dict:
        return {"finger_offered": self.finger_offered, "scans": self.scans,
                "passwords_typed": self.passwords, "done": self.done, "rc": self.rc,
                "result": self.line.get("result"), "reason": self.line.get("reason"),
                "pam": self.line.get("pam"), **self.extra}

    def evidence(self) -> str:
        lines = "\n".join(f["message"] for f in self.lines) or "(no line of the module)"
        return (f"\nfacts: {self.facts()}\nmodule:\n{lines}\njournal:\n{self.journal}"
                f"\nscreens: {' '.join(self.shots)}")


class Desktop:
    journal_of = JOURNAL_OF        # whose journal lines a failure shows (plasma.py adds its own)
    clear_line = "ctrl-c"          # the key that clears a half-typed line before a probe

    def __init__(self, guest: Guest, shots: Path):
        self.g = guest
        self.q = guest.m.qmp
        self.shots = shots
        self._shot = 0
        self.seen: list[str] = []      # the screen at each launch and try

    def shot(self, what: str) -> str:
        self._shot += 1
        path = self.shots / f"{self._shot:02d}-{what}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        return self.q.shot(str(path))

    # --- facts ------------------------------------------------------------------------

    def shell_registered(self, uid: int, mark: Optional[Mark] = None) -> bool:
        """gnome-shell of uid said it is up (it logs this once its session is ready)."""
        after = f"--after-cursor='{mark.cursor}'" if mark else "-b"
        out = self.g.sh(f"journalctl -q {after} _UID={uid} _COMM=gnome-shell "
                        f"-g 'Registering session with GDM' -o cat || true")
        return "Registering session" in out

    def user_session(self, user: str = "alice") -> Optional[dict]:
        for s in self.g.sessions(user):
            if s.get("Type") == "wayland" and s.get("State") != "closing":
                return s
        return None

    def keyring_unlocked(self, mark: Mark) -> bool:
        return any(e.get("MESSAGE") == "gkr-pam: unlocked login keyring"
                   for e in self.g.journal(mark))

    def workers(self, service: str) -> set[str]:
        """PIDs of GDM's session workers for service (a login's worker stays for the session)."""
        return set(self.g.m.ssh(f"pgrep -f 'pam/{service}\\]'", check=False).stdout.split())

    def new_worker(self, service: str, before: set[str]) -> Callable[[], bool]:
        return lambda: bool(self.workers(service) - before)

    # --- the greeter ------------------------------------------------------------------

    def greeter_uids(self) -> set[int]:
        """The uids of logind's greeter sessions: Debian-gdm's in GDM 48 (Debian 13), a
        dynamic `gdm-greeter` user's in GDM 49 and later (sid)."""
        out = self.g.sh("for s in $(loginctl list-sessions --no-legend | awk '{print $1}'); do "
                        "loginctl show-session $s -p User -p Class | paste -sd' '; done")
        found = [dict(kv.split("=", 1) for kv in line.split()) for line in out.splitlines() if line]
        return {int(s["User"]) for s in found if s.get("Class") == "greeter" and s.get("User", "").isdigit()}

    def wait_greeter(self) -> None:
        wait_for("GDM's greeter", lambda: any(self.shell_registered(uid) for uid in self.greeter_uids()),
                 timeout=WAIT * 2)

    def drawn(self, box=(440, 280, 840, 520)) -> bool:
        """Something light is drawn in box (x0, y0, x1, y1) of the screen: the greeter's
        user list, not yet the empty stage it shows first."""
        w, h, pix = self.q.screen()
        x0, y0, x1, y1 = box
        light = 0
        for y in range(y0, min(y1, h), 4):
            row = pix[y * w * 3:(y + 1) * w * 3]
            for x in range(x0, min(x1, w), 4):
                if min(row[3 * x:3 * x + 3]) > 200:
                    light += 1
        return light > 20

    FOCUS_RING = (119, 159, 206)    # GNOME 48's focus ring on the greeter's dark entry

    def entry_focused(self, box=(495, 462, 785, 515)) -> bool:
        """The greeter's password entry is shown and has the focus: its focus ring is in box
        (the entry's row under the user's name; the user list draws nothing there but the
        "Not listed?" text). It comes some seconds after the conversation asked for the
        password (under TCG about 7 s); keys typed before it are lost."""
        w, h, pix = self.q.screen()
        x0, y0, x1, y1 = box
        ring = 0
        for y in range(y0, min(y1, h)):
            row = pix[y * w * 3:(y + 1) * w * 3]
            for x in range(x0, min(x1, w)):
                if all(abs(c - f) <= 16 for c, f in zip(row[3 * x:3 * x + 3], self.FOCUS_RING)):
                    ring += 1
        return ring > 30

    def login(self, user: str = "alice") -> GuiOutcome:
        """Enter on the greeter's first user (alice), then the password once the password
        field has the focus (a finger if one is wanted). Done when the user's GNOME Shell is
        up. A conversation the greeter ended ("conversation failed") is begun again from
        the user list."""
        mark = self.g.mark()
        outcomes = []
        # In its first minute or so the greeter ends a conversation begun from its user list
        # within seconds ("conversation failed", the list again): seen on every early Enter
        # under TCG. Each end is a line in the journal; the login begins again after it.
        end = time.monotonic() + WAIT * 3
        while time.monotonic() < end and len(outcomes) < 10:
            wait_for("the greeter's user list", self.drawn)
            attempt_mark = self.g.mark()
            before = self.workers("gdm-password")
            self._until(self.new_worker("gdm-password", before), lambda: self.q.key("ret"),
                        "the greeter's password conversation")
            worker = self.workers("gdm-password") - before
            out = self._answer(attempt_mark, ident="gdm-password]", password=PASSWORDS[user],
                               done=lambda: (self.user_session(user) is not None
                                             and self.shell_registered(1000, mark)),
                               failed="pam_unix(gdm-password:auth): conversation failed",
                               give_up_on_failure=True, ready=self.entry_focused,
                               abandoned=lambda: not (self.workers("gdm-password") & worker),
                               # The first session's start is the slowest thing the guest
                               # does: beside a busy host it took over 4 min once (GNOME
                               # Shell up at 6). A failure or the worker's end still ends
                               # the wait at once; only a slow success waits this long.
                               patience=WAIT * 4)
            outcomes.append(out)
            if out.done:
                break
        first = outcomes[0]
        out = GuiOutcome(finger=self.g.finger(mark), scans=sum((o.scans for o in outcomes), []),
                         passwords=sum(o.passwords for o in outcomes), done=outcomes[-1].done,
                         rc=None, line=first.line, lines=sum((o.lines for o in outcomes), []),
                         shots=sum((o.shots for o in outcomes), []),
                         journal="\n".join(o.journal for o in outcomes))
        out.extra["keyring_unlocked"] = self.keyring_unlocked(mark)
        # GDM's own fingerprint conversation must stay off (Tests/vm/image/setup.sh): when it
        # runs beside gdm-password, its failures can end the password's conversation.
        out.extra["fingerprint_conversations"] = sum(
            e.get("SYSLOG_IDENTIFIER") == "gdm-fingerprint]" for e in self.g.journal(mark))
        return out

    # --- GNOME Terminal ---------------------------------------------------------------

    def terminal_shells(self) -> list[str]:
        out = self.g.sh("for p in $(pgrep -u alice -x bash); do "
                        "grep -q 'app-org.gnome.Terminal.slice/vte-spawn-' /proc/$p/cgroup "
                        "2>/dev/null && echo $p; done; true")
        return out.split()

    def open_terminal(self) -> str:
        """GNOME Terminal's window (launch_terminal), brought in front with the keyboard; the
        name of a probe that ran in its shell, typed through QEMU: the keys reach it."""
        mark = self.g.mark()
        self.seen = []
        try:
            return self._open_terminal()
        except GuestError as e:
            raise GuestError(f"{e}\n{self.terminal_evidence(mark)}") from None

    def _open_terminal(self) -> str:
        if not self.terminal_shells():
            # Beside a busy host gnome-terminal-server's D-Bus activation may time out (25 s);
            # a try waits for the shell that long and more.
            self._until(self.terminal_shells, self.launch_terminal, "a GNOME Terminal shell",
                        wait=WAIT)
        probe = self.g.unique("probe")
        tries = []

        def type_probe():
            # A try whose probe never ran: its keys went elsewhere. Known causes under TCG: a
            # modifier whose release the guest lost (qmp.py), and keys typed before the
            # window is in front or while it has no focus. So modifiers are released, the
            # keys wait for the window, and after a lost try the window is clicked.
            tries.append(self.shot("probe-lost") if tries else "")
            self.q.release_modifiers()
            self.front_window(click=bool(tries[1:]))
            self.q.key(self.clear_line)    # whatever half-line an earlier try left
            self.q.type(f"la-run {probe} true\n")
        try:
            self._until(lambda: self.g.m.ssh(f"test -f /tmp/la-vm/{probe}.rc",
                                             check=False).returncode == 0,
                        type_probe, "keys reaching the terminal")
        except GuestError as e:
            raise GuestError(f"{e}\nscreens of the lost tries: {' '.join(tries[1:])}") from None
        return probe

    def launch_terminal(self) -> None:
        """gnome-terminal run as alice with her session's bus and display: the client asks
        gnome-terminal-server (D-Bus activated into app-org.gnome.Terminal.slice) for a
        window, whose shell runs in a vte-spawn scope there, as from the overview. Not the
        overview's search, which under TCG lost typed keys and took 35 s to show results."""
        self.seen.append(f"{time.strftime('%H:%M:%S')} launch, screen: {self.screen_state()}")
        self.g.m.ssh("runuser -u alice -- env DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus "
                     "XDG_RUNTIME_DIR=/run/user/1000 WAYLAND_DISPLAY=wayland-0 gnome-terminal",
                     check=False, timeout=WAIT)

    def front_window(self, click: bool) -> None:
        """The terminal's window in front: GNOME 48 shows the overview after the login and
        keeps it over a window launched from outside; Escape closes it, and the newest
        window has the keyboard focus. click: also a click into the window's middle (QMP's
        pointer, the USB tablet), which focuses it as a person's click would."""
        state = self.screen_state()
        self.seen.append(f"{time.strftime('%H:%M:%S')} {state}{' click' if click else ''}")
        if state == "overview":
            self.q.key("esc")
        self._poll(self.window_shown, RETRY)
        if click:
            self.q.click(*self.MIDDLE)

    # Points of the 1280x800 screen that tell GNOME Shell's states apart (the image's theme
    # and wallpaper are fixed, so are these): the top bar, the overview's backdrop at the
    # left, and the middle of the screen, where the first window is placed. OVERVIEW_GRAY
    # is the backdrop's colour.
    TOP_BAR, BACKDROP, MIDDLE = (400, 15), (100, 400), (640, 400)
    OVERVIEW_GRAY = (35, 35, 35)

    def screen_state(self) -> str:
        """"overview" (the windows' view), "window" (a light window in the middle, no
        overview: the terminal's), or "other" (the desktop, an animation, a dialog)."""
        w, _, pix = self.q.screen()

        def at(x, y):
            return tuple(pix[(y * w + x) * 3:(y * w + x) * 3 + 3])

        def gray(p):
            return all(abs(c - g) <= 8 for c, g in zip(p, self.OVERVIEW_GRAY))
        top, backdrop, middle = (at(*p) for p in (self.TOP_BAR, self.BACKDROP, self.MIDDLE))
        if gray(top) and gray(backdrop):
            return "overview"
        if max(top) <= 8 and min(middle) >= 230:
            return "window"
        return "other"

    def window_shown(self) -> bool:
        return self.screen_state() == "window"

    @staticmethod
    def _poll(reached: Callable[[], bool], timeout: float) -> bool:
        """reached() within timeout, polled each second: True, or False when it never came."""
        deadline = time.monotonic() + timeout
        while not reached():
            if time.monotonic() > deadline:
                return False
            time.sleep(1)
        return True

    def terminal_evidence(self, mark: Mark) -> str:
        """What the guest says about the terminal when keys did not reach it: alice's
        processes with their states, and gnome-shell's and the terminal's journal since mark."""
        procs = self.g.sh("ps -u alice -o pid,ppid,stat,wchan:20,args --sort=pid | cut -c1-150; true")
        shell = [f"{e.get('SYSLOG_IDENTIFIER')}: {e.get('MESSAGE')}" for e in self.g.journal(mark)
                 if e.get("SYSLOG_IDENTIFIER") in ("gnome-shell", "gnome-terminal-server",
                                                   "gnome-terminal-", "gnome-session-binary")]
        return (f"the screen at each launch and try: {', '.join(self.seen)}\n"
                f"alice's processes:\n{procs}\nthe shell's journal:\n" + "\n".join(shell[-40:]))

    def run_in_terminal(self, command: str, *, ident: str, password: str,
                        before: Optional[Callable[[Mark], None]] = None) -> GuiOutcome:
        """command typed into the terminal, then answered (_answer); before(mark), when
        given, runs first once the command is typed (plasma.py: the dialog's screen)."""
        name = self.g.unique("gui")
        mark = self.g.mark()
        self.q.type(f"la-run {name} {command}\n")
        if before is not None:
            before(mark)
        rc: dict = {}

        def done():
            rc["rc"] = self.g.observe(mark, rc=name)["rc"]
            return rc["rc"] is not None
        out = self._answer(mark, ident=ident, password=password, done=done,
                           failed=f"pam_unix({'polkit-1' if ident.startswith('polkit') else 'sudo'}"
                                  f":auth): authentication failure",
                           ready=lambda: self.echo_off(command))
        out.rc = rc.get("rc")
        if not out.done:
            # A dialog left open would take the next test's finger (it did once, for the
            # vault's right): Escape is its Cancel. Then the terminal's own prompt: the
            # next command must not land in it.
            self.q.key("esc")
            self.q.key("ctrl-c")
        return out

    def echo_off(self, command: str) -> bool:
        """The newest process running command has its terminal's echo off (sudo at its
        password prompt: what is typed before that is flushed). True for a command with no
        terminal of its own waiting (pkexec: the dialog asks)."""
        if not command.startswith("sudo"):
            return True
        # By name (-x): a pattern on the command line would also find this very shell.
        out = self.g.sh(f"p=$(pgrep -n -x {shlex.quote(command.split()[0])}) && "
                        f"t=$(ps -o tty= -p $p) && stty -a -F /dev/$t; true")
        return " -echo " in f" {out} "

    # --- the lock screen --------------------------------------------------------------

    def lock(self) -> dict:
        s = self.user_session()
        self.g.sh(f"loginctl lock-session {s['Id']}")
        wait_for("LockedHint=yes", lambda: (self.user_session() or {}).get("LockedHint") == "yes")
        return s

    def unlock(self) -> GuiOutcome:
        """Escape raises the unlock prompt (GDM's worker starts gdm-password); then a finger
        when one is wanted, else the password."""
        mark = self.g.mark()
        before = self.workers("gdm-password")
        self._until(self.new_worker("gdm-password", before), lambda: self.q.key("esc"),
                    "the lock screen's password conversation")
        return self._answer(mark, ident="gdm-password]", password=PASSWORDS["alice"],
                            done=lambda: (self.user_session() or {}).get("LockedHint") == "no",
                            failed="pam_unix(gdm-password:auth): authentication failure")

    # --- the common part --------------------------------------------------------------

    def _until(self, reached: Callable[[], object], act: Callable[[], None], what: str,
               tries: int = 4, wait: float = RETRY) -> None:
        """act(), then wait for reached(); again if it did not come within wait."""
        for _ in range(tries):
            act()
            try:
                wait_for(what, reached, timeout=wait)
                return
            except GuestError:
                continue
        shot = self.shot("timeout")
        raise GuestError(f"no {what} after {tries} tries; the screen: {shot}")

    def _answer(self, mark: Mark, *, ident: str, password: str, done: Callable[[], bool],
                failed: str, max_scans: int = 3, max_passwords: int = 3,
                give_up_on_failure: bool = False,
                ready: Callable[[], bool] = lambda: True,
                abandoned: Callable[[], bool] = lambda: False,
                patience: float = WAIT * 2) -> GuiOutcome:
        """Until done(): a scan of alice's finger at each new finger-needed true; the password
        once the module's first line is in (it returned, so the password module asks next)
        and no finger is wanted and ready() says the field is there, again only after a
        failure line (give_up_on_failure: return instead, for the caller to begin again).
        Returns early when abandoned() (the conversation's process ended without done())."""
        scans: list[str] = []
        passwords = 0
        typed_at = None
        failures_seen = 0
        shots = []
        end = time.monotonic() + patience
        while not done():
            if time.monotonic() > end:
                shots.append(self.shot("stuck"))
                break
            values = self.g.finger(mark)
            if values and values[-1] and values.count(True) > len(scans) and len(scans) < max_scans:
                self.g.scan(PRINTS["alice"])
                scans.append(PRINTS["alice"])
                continue
            lines = self.g.module_lines(mark, ident)
            failures = sum(failed in e.get("MESSAGE", "") for e in self.g.journal(mark))
            if failures and give_up_on_failure:
                break
            if abandoned():     # the conversation's worker is gone: nothing more will come
                break
            waiting = values and values[-1]
            retype = typed_at is None or failures > failures_seen
            matched = any(f.get("pam") == "PAM_SUCCESS" for f in lines)  # a finger let it in
            if lines and not waiting and not matched and retype and passwords < max_passwords \
                    and ready():
                if typed_at is None:
                    shots.append(self.shot("password-field"))
                failures_seen = failures
                self.q.type(password + "\n")
                passwords += 1
                typed_at = time.monotonic()
                continue
            time.sleep(1)
        lines = self.g.module_lines(mark, ident)
        first = next((f for f in lines if f["phase"] == "auth"), {})
        talk = "\n".join(f"{e.get('SYSLOG_IDENTIFIER')}[{e.get('_PID')}]: {e.get('MESSAGE')}"
                         for e in self.g.journal(mark) if e.get("SYSLOG_IDENTIFIER") in self.journal_of)
        return GuiOutcome(finger=self.g.finger(mark), scans=scans, passwords=passwords,
                          done=done(), rc=None, line=first, lines=lines, shots=shots,
                          journal=talk)
