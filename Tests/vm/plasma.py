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
    plasma.lock(); out = plasma.unlock_by_finger()

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
from guest import PASSWORDS, PRINTS, WAIT, Guest, GuestError, Mark, wait_for

# Per user, written before the login (the image is the base one plus Plasma's packages:
# Tests/vm/images.py). Each one takes away a thing that cost the tests under the emulator.
USER_CONFIG = {
    # The splash screen's service times out under TCG: a black screen for 50-60 s after
    # plasmashell starts (seen in the probe).
    "ksplashrc": "[KSplash]\nEngine=none\nTheme=None\n",
    # Keys sent through QEMU repeat in the Wayland session (a press and its release reach
    # KWin seconds apart under load).
    "kcminputrc": "[Keyboard]\nKeyRepeat=nothing\n",
    # No lock on idle or resume: the lock screen's cases lock it themselves; a slow first
    # login must not meet the lock screen.
    "kscreenlockerrc": "[Daemon]\nAutolock=false\nLockOnResume=false\n",
    # The file indexer: CPU for nothing here.
    "baloofilerc": "[Basic Settings]\nIndexing-Enabled=false\n",
}
PLASMA_JOURNAL = JOURNAL_OF | {"sddm-helper", "sddm", "kscreenlocker_greet", "kwalletd6",
                               "polkit-kde-authentication-agent-1", "ksmserver", "konsole"}
# The lock screen's PAM services (libkscreenlocker6 6.3.5): the password's and the finger's.
LOCKER = "kscreenlocker_greet"


class Plasma(Desktop):
    journal_of = PLASMA_JOURNAL

    def __init__(self, guest: Guest, shots: Path, uid: int = 1000):
        super().__init__(guest, shots)
        self.uid = uid

    # --- set-up -----------------------------------------------------------------------

    def configure_user(self, user: str = "alice") -> None:
        for name, text in USER_CONFIG.items():
            self.g.m.ssh(f"runuser -u {user} -- sh -c 'mkdir -p ~/.config && cat > ~/.config/{name}'",
                         input=text)

    def user_env(self) -> str:
        return (f"XDG_RUNTIME_DIR=/run/user/{self.uid} "
                f"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/{self.uid}/bus")

    def as_alice(self, command: str, check: bool = False) -> str:
        return self.g.m.ssh(f"runuser -u alice -- env {self.user_env()} {command}",
                            check=check).stdout

    # --- facts ------------------------------------------------------------------------

    def running(self, name: str, user: Optional[str] = None) -> set[str]:
        who = f"-u {user} " if user else ""
        return set(self.g.m.ssh(f"pgrep {who}-x {shlex.quote(name)}", check=False).stdout.split())

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

    # --- the lock screen --------------------------------------------------------------

    def lock(self) -> dict:
        """logind's Lock for the session: Plasma's ksmserver locks, kscreenlocker_greet
        draws the lock screen and sets LockedHint."""
        s = self.user_session()
        self.g.sh(f"loginctl lock-session {s['Id']}")
        wait_for("LockedHint=yes", lambda: (self.user_session() or {}).get("LockedHint") == "yes")
        wait_for("kscreenlocker_greet", lambda: self.running(LOCKER, "alice"))
        return s

    def unlocked(self) -> bool:
        return (self.user_session() or {}).get("LockedHint") == "no"

    def wake(self) -> None:
        """A key that raises the lock screen's prompt (and, in 6.3, starts its
        authenticators again after an earlier end)."""
        self.q.key("shift")


def wait_for_bool(probe: Callable[[], bool], timeout: float) -> bool:
    """probe() until true or timeout: True or False, never an error (a fact to compare)."""
    try:
        return bool(wait_for("a fact", probe, timeout=timeout))
    except GuestError:
        return False
