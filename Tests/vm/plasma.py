"""KDE Plasma 6.3 on Wayland under SDDM 0.21 (Debian 13), driven as a person would: QEMU's
keyboard for the keys, QEMU's screendump for what a person sees (saved, and named in a failed
assertion), and the guest's own records for every fact a test asserts: the module's journal
lines, fprintd's finger-needed (la-fingerwatch), logind's sessions, la-run's exit status
files, kwalletd's answer on alice's bus.

    plasma = Plasma(guest, shots)
    plasma.configure_user("alice")         # before the login: no splash, no key repeat, ...
    plasma.wait_greeter()
    login = plasma.login("alice")          # the password typed into SDDM's focused field
    plasma.open_terminal()                 # Konsole, started in alice's manager, keys reaching it
    out = plasma.run_in_terminal("sudo -k id", ident="sudo", password=...)
    out = plasma.pkexec_by_password(finger="nobody-rif")   # typed while the reader waits
    plasma.lock(); out = plasma.at_lock_screen(scan="alice-rif")

The Desktop class (desktop.py, GNOME's) gives the common parts: the answer loop (a scan at
each new finger-needed, the password once the module has returned), la-run's files, shots.
What differs is here: SDDM's greeter, Konsole, Plasma's lock screen (kscreenlocker_greet
runs its authenticators, kde and kde-fingerprint, side by side: the password field is there
while the reader waits).
"""
from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Callable, Optional

from desktop import JOURNAL_OF, RETRY, Desktop, GuiOutcome
from guest import PASSWORDS, WAIT, Guest, GuestError, Mark, wait_for

# Per user, written before the login (the image is the base one plus Plasma's packages:
# Tests/vm/images.py). Each one takes away a thing that cost the tests under the emulator.
USER_CONFIG = {
    # The splash screen: under TCG startplasma's D-Bus activation of org.kde.KSplash waited
    # 60 s on a black screen (with no splash engine, the name's service file only waits for
    # the name). No engine, and the name's activation fails at once (alice's own service
    # file comes before the system's).
    ".config/ksplashrc": "[KSplash]\nEngine=none\nTheme=None\n",
    ".local/share/dbus-1/services/org.kde.KSplash.service":
        "[D-BUS Service]\nName=org.kde.KSplash\nExec=/bin/false\n",
    # Keys sent through QEMU repeat in the Wayland session (a press and its release reach
    # KWin seconds apart under load).
    ".config/kcminputrc": "[Keyboard]\nKeyRepeat=nothing\n",
    # No lock on idle or resume: the lock screen's cases lock it themselves; a slow first
    # login must not meet the lock screen.
    ".config/kscreenlockerrc": "[Daemon]\nAutolock=false\nLockOnResume=false\n",
    # The file indexer: CPU for nothing here.
    ".config/baloofilerc": "[Basic Settings]\nIndexing-Enabled=false\n",
}
PLASMA_JOURNAL = JOURNAL_OF | {"sddm-helper", "sddm", "kscreenlocker_greet", "kwalletd6",
                               "polkit-kde-authentication-agent-1", "ksmserver", "konsole"}
# The lock screen's PAM services (libkscreenlocker6 6.3.5): the password's and the finger's.
LOCKER = "kscreenlocker_greet"


class Plasma(Desktop):
    journal_of = PLASMA_JOURNAL
    # Not Ctrl-C: in Konsole, a key typed right after it was echoed but never reached bash
    # (readline drops what came while it handled SIGINT): "la-run probe true" ran as
    # "a-run", three tries in a row. Ctrl-U clears the line with no signal.
    clear_line = "ctrl-u"

    def __init__(self, guest: Guest, shots: Path, uid: int = 1000):
        super().__init__(guest, shots)
        self.uid = uid

    # --- set-up -----------------------------------------------------------------------

    def configure_user(self, user: str = "alice") -> None:
        for path, text in USER_CONFIG.items():
            self.g.m.ssh(f"runuser -u {user} -- sh -c 'cd && mkdir -p \"$(dirname {path})\" "
                         f"&& cat > {path}'", input=text)

    def user_env(self) -> str:
        return (f"XDG_RUNTIME_DIR=/run/user/{self.uid} "
                f"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/{self.uid}/bus")

    def as_alice(self, command: str, check: bool = False) -> str:
        return self.g.m.ssh(f"runuser -u alice -- env {self.user_env()} {command}",
                            check=check).stdout

    # --- facts ------------------------------------------------------------------------

    def running(self, name: str, user: Optional[str] = None) -> set[str]:
        """PIDs of the processes whose program is name (by its command line: the kernel's
        process name is cut at 15 characters, "sddm-greeter-qt", "kscreenlocker_g")."""
        who = f"-u {user} " if user else ""
        pattern = shlex.quote(f"(^|/){name}( |$)")
        return set(self.g.m.ssh(f"pgrep {who}-f {pattern}", check=False).stdout.split())

    def brightness(self, box=(320, 200, 960, 600)) -> float:
        """The mean of the box's pixels (0..255): a black screen (a splash that never came,
        a greeter not yet drawn) is near 0."""
        w, h, pix = self.q.screen()
        x0, y0, x1, y1 = box
        total = n = 0
        for y in range(y0, min(y1, h), 8):
            for x in range(x0, min(x1, w), 8):
                i = (y * w + x) * 3
                total += pix[i] + pix[i + 1] + pix[i + 2]
                n += 3
        return total / max(n, 1)

    def drawn(self, box=(320, 200, 960, 600)) -> bool:
        return self.brightness(box) > 20

    def wallet_open(self) -> bool:
        """kwalletd6 on alice's bus says her default wallet is open (pam_kwallet5 opened it
        with the login's password)."""
        out = self.as_alice("busctl --user call org.kde.kwalletd6 /modules/kwalletd6 "
                            "org.kde.KWallet isOpen s kdewallet")
        return out.strip() == "b true"

    def module_services(self, mark: Mark, ident: str = LOCKER) -> list[str]:
        """The PAM service of each of the module's first lines from ident since mark, in
        order (kde, kde-fingerprint: each is one run of that authenticator)."""
        return [f["service"] for f in self.module_lines_of(mark, ident)]

    def module_lines_of(self, mark: Mark, ident: str) -> list[dict]:
        out = []
        for f in self.g.module_lines(mark, ident):
            if f["phase"] == "auth" and "authsucc:" not in f["message"]:
                f["service"] = f["message"].split("pam_localauth(", 1)[1].split(":", 1)[0]
                out.append(f)
        return out

    # --- SDDM -------------------------------------------------------------------------

    def wait_greeter(self) -> None:
        wait_for("SDDM's greeter", lambda: (self.running("sddm-greeter-qt6") or
                                            self.running("sddm-greeter")), timeout=WAIT * 3)
        wait_for("SDDM's greeter drawn", self.drawn, timeout=WAIT * 2)

    def session_ready(self, user: str = "alice") -> bool:
        """alice's Wayland session, plasmashell running in it, the desktop drawn."""
        return (self.user_session(user) is not None and bool(self.running("plasmashell", user))
                and self.drawn())

    def login(self, user: str = "alice") -> GuiOutcome:
        """The password typed into the greeter (its password field has the focus, the first
        user chosen); again when no login began (keys before the field took them are lost).
        Done when Plasma's desktop is drawn."""
        mark = self.g.mark()
        shots = [self.shot("greeter")]
        tries = 0

        def began():
            return any(self.workers_of("sddm-helper", user))

        def type_password():
            nonlocal tries
            tries += 1
            self.q.type(PASSWORDS[user] + "\n")
        self._until(lambda: began() or self.user_session(user) is not None, type_password,
                    "SDDM's login for " + user, wait=RETRY * 2)
        try:
            wait_for("Plasma's desktop drawn", lambda: self.session_ready(user), timeout=WAIT * 4)
        except GuestError:
            pass
        shots.append(self.shot("desktop"))
        out = GuiOutcome(finger=self.g.finger(mark), scans=[], passwords=tries,
                         done=self.session_ready(user), rc=None,
                         line=next((f for f in self.g.module_lines(mark, "sddm-helper")
                                    if f["phase"] == "auth"), {}),
                         lines=self.g.module_lines(mark), shots=shots,
                         journal=self.talk(mark))
        out.extra["wallet_open"] = out.done and wait_for_bool(self.wallet_open, 60)
        return out

    def workers_of(self, name: str, user: str) -> set[str]:
        """PIDs of name's processes working for user (sddm-helper --user alice)."""
        return set(self.g.m.ssh(f"pgrep -f '^/usr/lib/[^ ]*{name} .*--user {user}'",
                                check=False).stdout.split())

    def talk(self, mark: Mark) -> str:
        return "\n".join(f"{e.get('SYSLOG_IDENTIFIER')}[{e.get('_PID')}]: {e.get('MESSAGE')}"
                         for e in self.g.journal(mark)
                         if e.get("SYSLOG_IDENTIFIER") in self.journal_of)

    # --- Konsole ----------------------------------------------------------------------

    def terminal_shells(self) -> list[str]:
        out = self.g.sh("for p in $(pgrep -u alice -x bash); do "
                        "grep -q 'app-org.kde.konsole' /proc/$p/cgroup "
                        "2>/dev/null && echo $p; done; true")
        return out.split()

    def launch_terminal(self) -> None:
        """Konsole started by alice's manager in a unit named as Plasma's launcher names
        one (app-org.kde.konsole@….service in app.slice), with the session's environment
        (WAYLAND_DISPLAY) that Plasma's start gave the manager. Started over SSH as a
        child of the SSH login, it would sit in that login's session and be remote."""
        self.seen.append(f"{time.strftime('%H:%M:%S')} launch")
        unit = f"app-org.kde.konsole@{self.g.unique('la')}.service"
        self.as_alice(f"systemd-run --user --quiet --collect --slice=app.slice --unit={unit} "
                      f"/usr/bin/konsole", check=True)

    def shell_in_front(self) -> bool:
        """No sudo runs and a Konsole shell of alice's is its terminal's foreground (ps's
        "+"), reading its next line."""
        out = self.g.sh("pgrep -x sudo >/dev/null && exit 0; for p in $(pgrep -u alice -x bash); do "
                        "grep -q app-org.kde.konsole /proc/$p/cgroup 2>/dev/null && "
                        "ps -o stat= -p $p; done; true")
        return "+" in out

    def front_window(self, click: bool) -> None:
        """The newest window has the focus in KWin; after a lost try, a click into the
        middle of the screen, where KWin places Konsole's window."""
        if click:
            self.q.click(*self.MIDDLE)

    def screen_state(self) -> str:
        return f"brightness {self.brightness():.0f}"

    def terminal_evidence(self, mark: Mark) -> str:
        procs = self.g.sh("ps -u alice -o pid,ppid,stat,wchan:20,args --sort=pid | cut -c1-150; true")
        return (f"the screen at each launch and try: {', '.join(self.seen)}\n"
                f"alice's processes:\n{procs}\njournal:\n{self.talk(mark)[-4000:]}")

    def lock_out(self, finger: str) -> None:
        """Five failed matches in a row, through sudo in Konsole: finger (one nobody
        enrolled) at each wait, Ctrl-C at the password prompt that follows; three sudo
        prompts at most (3 tries each, lockout at 5)."""
        for _ in range(3):
            if self.g.status("alice")["locked_out"]:
                return
            name = self.g.unique("lockout")
            mark = self.g.mark()
            self.q.type(f"la-run {name} sudo -k true\n")
            scans = 0
            end = time.monotonic() + WAIT
            while time.monotonic() < end:
                if [f for f in self.g.module_lines(mark, "sudo") if f["phase"] == "auth"]:
                    break       # the module returned: sudo's own password prompt next
                values = self.g.finger(mark)
                if values and values[-1] and values.count(True) > scans:
                    self.g.scan(finger)
                    scans += 1
                    continue
                time.sleep(1)
            wait_for("sudo's password prompt", lambda: self.echo_off("sudo -k true"))
            self.q.key("ctrl-c")
            # sudo may end by the signal itself, and la-run with it (no status file): what
            # stays is no sudo running and Konsole's shell in front of its terminal again.
            wait_for(f"sudo ended ({name}) and the shell in front", self.shell_in_front)
        if not self.g.status("alice")["locked_out"]:
            raise GuestError(f"alice is not locked out after three sudo prompts: {self.g.status('alice')}")

    # --- polkit-kde-agent-1's dialog ---------------------------------------------------

    INFO_BLUE = (203, 227, 240)     # the dialog's info line (Breeze), where the module's text is

    def dialog_info_shown(self, box=(330, 280, 950, 480)) -> bool:
        """polkit-kde-agent-1's dialog is drawn with an info line (the module's "Swipe your
        …" or "Fingerprint not recognized …"): its light blue band in the middle."""
        w, h, pix = self.q.screen()
        x0, y0, x1, y1 = box
        hits = 0
        for y in range(y0, min(y1, h), 2):
            for x in range(x0, min(x1, w), 4):
                i = (y * w + x) * 3
                if all(abs(pix[i + k] - self.INFO_BLUE[k]) <= 10 for k in range(3)):
                    hits += 1
        return hits > 300

    def dialog_waits_for_the_finger(self, mark: Mark, shot: str) -> None:
        """Until the reader waits and the dialog shows it (under TCG the dialog is drawn
        10-30 s after the agent helper asked); then the screen is kept as shot."""
        wait_for("the reader waiting for pkexec", lambda: True in self.g.finger(mark))
        # Bounded well inside the scan's own timeout (30 s): under scripts/with-load the
        # dialog was drawn 40 s after the reader began to wait, and a scan held for it came
        # after the module had handed over to the password.
        drawn = wait_for_bool(self.dialog_info_shown, 20)
        self.seen.append(f"dialog drawn: {drawn}")
        self.shot(shot)

    def run_in_terminal(self, command: str, *, ident: str, password: str,
                        before: Optional[Callable[[Mark], None]] = None) -> GuiOutcome:
        if before is None and command.startswith("pkexec"):
            def before(mark):
                self.dialog_waits_for_the_finger(mark, "polkit-dialog-finger")
        return super().run_in_terminal(command, ident=ident, password=password, before=before)

    def pkexec_by_password(self, finger: str, command: str = "id") -> GuiOutcome:
        """pkexec in Konsole; in the dialog, the password typed into its field while the
        reader waits, then finger (one nobody enrolled) at each new wait, until pkexec ends."""
        name = self.g.unique("gui")
        mark = self.g.mark()
        self.q.type(f"la-run {name} pkexec {command}\n")
        self.dialog_waits_for_the_finger(mark, "polkit-dialog-password")
        self.q.type(PASSWORDS["alice"] + "\n")
        scans: list[str] = []

        def rc():
            return self.g.observe(mark, rc=name)["rc"]
        end = time.monotonic() + WAIT * 2
        while rc() is None and time.monotonic() < end:
            values = self.g.finger(mark)
            if values and values[-1] and values.count(True) > len(scans) and len(scans) < 3:
                self.g.scan(finger)
                scans.append(finger)
                continue
            time.sleep(1)
        code = rc()
        shots = [] if code is not None else [self.shot("stuck")]
        if code is None:
            self.q.key("esc")
            self.q.key("ctrl-c")
        return GuiOutcome(finger=self.g.finger(mark), scans=scans, passwords=1,
                          done=code is not None, rc=code, line={},
                          lines=self.g.module_lines(mark, "polkit-agent-helper-1"), shots=shots,
                          journal=self.talk(mark))

    # --- the lock screen --------------------------------------------------------------

    def lock(self) -> dict:
        """logind's Lock for the session: Plasma's ksmserver locks, kscreenlocker_greet
        draws the lock screen and sets LockedHint. Only once the last lock's greeter has
        exited: it outlives the unlock by seconds under TCG (its password conversation is
        ended first), and a lock asked meanwhile was lost ("QProcess::start: Process is
        already running", then the old greeter's exit taken as this lock's unlock)."""
        wait_for("the last lock's greeter gone", lambda: not self.running(LOCKER, "alice"))
        s = self.user_session()
        self.g.sh(f"loginctl lock-session {s['Id']}")
        wait_for("LockedHint=yes", lambda: (self.user_session() or {}).get("LockedHint") == "yes")
        wait_for("kscreenlocker_greet", lambda: self.running(LOCKER, "alice"))
        return s

    def prompt_drawn(self, box=(500, 462, 745, 486)) -> bool:
        """The lock screen's password field (white, under the user's name) is drawn."""
        w, h, pix = self.q.screen()
        x0, y0, x1, y1 = box
        white = total = 0
        for y in range(y0, min(y1, h), 3):
            for x in range(x0, min(x1, w), 6):
                i = (y * w + x) * 3
                total += 1
                white += min(pix[i:i + 3]) > 235
        return white > total * 0.6

    def unlocked(self) -> bool:
        return (self.user_session() or {}).get("LockedHint") == "no"

    def wake(self) -> None:
        """A key that raises the lock screen's prompt (and, in 6.3, starts its
        authenticators again after an earlier end)."""
        self.q.key("shift")

    def fingerprint_requests(self, mark: Mark) -> int:
        """The module's first lines for kde-fingerprint from the locker since mark: one a
        start of its fingerprint authenticator (a PAM transaction), whoever answered it
        (the helper, or localauthd itself when fprintd is absent)."""
        return self.module_services(mark).count("kde-fingerprint")

    def at_lock_screen(self, *, scan: Optional[str] = None, password: bool = False,
                       reader_waits: bool = True, wakes: int = 1, shot: str = "lock-screen") -> GuiOutcome:
        """The locked session's prompt raised by a key (kscreenlocker_greet begins its kde
        and kde-fingerprint authenticators then), then as a person: scan (a finger id) once
        the reader waits, or the password typed into the field (while the reader waits when
        reader_waits; else once the fingerprint authenticator has had its answer, a refusal
        that holds). wakes: keys pressed in all before the password, each once the one
        before was answered, to show a refusal is not asked again. Done when unlocked."""
        mark = self.g.mark()
        self._until(lambda: "kde" in self.module_services(mark), self.wake,
                    "the lock screen's password authenticator", wait=RETRY)
        shots, scans, typed = [], [], 0
        if reader_waits:
            wait_for("the lock screen's finger request", lambda: True in self.g.finger(mark))
        else:
            wait_for("the lock screen's fingerprint authenticator answered",
                     lambda: self.fingerprint_requests(mark))
            for _ in range(wakes - 1):
                # A key that (rightly) starts nothing has no sign to wait for: a pause, then
                # the next. What is asserted is the count of requests after the unlock.
                time.sleep(5)
                self.wake()
        # The prompt (user, password field) is drawn some seconds after the key under TCG;
        # the screen kept is the one a person sees when the reader waits.
        wait_for_bool(self.prompt_drawn, RETRY)
        shots.append(self.shot(shot))
        if scan:
            self.g.scan(scan)
            scans.append(scan)
        if password:
            self.q.type(PASSWORDS["alice"] + "\n")
            typed += 1
        wait_for_bool(self.unlocked, WAIT)
        if not self.unlocked():
            shots.append(self.shot("still-locked"))
        # The greeter ends after the unlock once each of its PAM transactions has returned
        # (6.3 cannot cancel one): only then are all of the module's lines in.
        ended = wait_for_bool(lambda: not self.running(LOCKER, "alice"), WAIT)
        lines = self.module_lines_of(mark, LOCKER)
        out = GuiOutcome(finger=self.g.finger(mark), scans=scans, passwords=typed,
                         done=self.unlocked(), rc=None,
                         line=next((f for f in lines if f["service"] == "kde-fingerprint"), {}),
                         lines=self.g.module_lines(mark, LOCKER), shots=shots,
                         journal=self.talk(mark))
        out.extra["kde"] = [(f.get("result"), f.get("reason")) for f in lines
                            if f["service"] == "kde"]
        out.extra["fingerprint_requests"] = self.fingerprint_requests(mark)
        out.extra["locker_ended"] = ended
        return out


def wait_for_bool(probe: Callable[[], bool], timeout: float) -> bool:
    """probe() until true or timeout: True or False, never an error (a fact to compare)."""
    try:
        return bool(wait_for("a fact", probe, timeout=timeout))
    except GuestError:
        return False
