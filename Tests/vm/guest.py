"""The guest as the tests use it: the product installed and enabled, fingers enrolled, and the
facts a test asserts read from the guest itself.

* ``Guest(machine)``: ``prepare(deb)`` installs the guest tools (guest-tools/ into
  /usr/local/bin), the product's .deb (``dpkg -i``) and enables its pam-auth-update profiles;
  ``enroll(user, print_id)``; ``status(user)`` (``localauthctl status --json``);
  ``mark()`` and, since a mark, ``module_lines`` (the module's journal lines, parsed) and
  ``finger`` (every value fprintd's ``finger-needed`` took, from ``la-fingerwatch``'s log:
  a D-Bus monitor, so a short-lived ``true`` is not missed as a poll could miss it).
* Terminals a case is driven through, one interface (``run``, ``type_secret``, ``key``,
  ``text``, ``done``):
  ``Console`` (a virtual console, typed through QEMU's keyboard, read from /dev/vcsu),
  ``TmuxPane`` (a pane of alice's tmux server; keys sent by ``tmux send-keys`` from a shell
  the test names), ``SshTerminal`` (an SSH login from the host on a pseudo-terminal, pexpect).
* ``attempt(guest, term, command, ...)``: runs one authenticating command and answers it as a
  person at the machine would: a scan of the enrolled finger whenever fprintd wants one, the
  password at each password prompt; returns an ``Outcome`` with what was seen.

Waits are bounded (``WAIT``) and only ever wait for a state that stays once reached (a file,
a line on a screen, a journal line, a value in the monitor's log), so a slow machine takes
longer but reaches the same verdict.
"""
from __future__ import annotations

import fcntl
import json
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pexpect

from machine import Machine, MachineError

TOOLS = Path(__file__).resolve().parent / "guest-tools"
# The rights example (Examples/SecretVault), as scripts/test builds it.
VAULT = Path(__file__).resolve().parents[2] / "build" / "test" / "secret-vault"
FINGER_LOG = "/run/la-vm/finger.log"
# The package's AppArmor profiles (apparmor/), and where auditd writes.
OWN_PROFILES = ("localauthd", "localauth-helper")
PROVOKE = "la-provoke"
AUDIT_LOG = "/var/log/audit/audit.log"
WAIT = 120          # seconds: the bound of every wait for the guest (TCG, a busy host)
POLL = 0.3
PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw"}
PRINTS = {"alice": "alice-rif", "bob": "bob-rif"}     # the virtual reader's finger ids
SUMMARY = re.compile(r'pam_localauth\((?P<service>[^:]+):(?P<phase>\w+)\): user="')
FIELD = re.compile(r'(\w+)=("(?:[^"]*)"|\S+)')


def built_app(name: str) -> Path:
    """build/test/NAME (secret-vault, la-probe), once scripts/test has built it: it holds
    .apps.lock while it builds the applications, beside this tier."""
    app = VAULT.parent / name
    lock = VAULT.parent / ".apps.lock"
    if lock.exists():
        with open(lock) as f:
            fcntl.flock(f, fcntl.LOCK_SH)
    assert app.is_file(), f"{app} is not built (scripts/test builds it)"
    return app


def built_vault() -> Path:
    return built_app("secret-vault")


class GuestError(AssertionError):
    """The guest did not reach a state a test needs: a failure with the reason, never a skip."""


def wait_for(what: str, probe: Callable[[], object], timeout: float = WAIT):
    """probe() until it returns something true; that value. GuestError after timeout."""
    end = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            raise GuestError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(POLL)


def parse_fields(message: str) -> dict:
    return {k: v[1:-1] if v.startswith('"') else v for k, v in FIELD.findall(message)}


def flat(text: str) -> str:
    """Text with every run of white space as one space: wrapped lines compare as written."""
    return re.sub(r"\s+", " ", text)


@dataclass
class Mark:
    cursor: str
    finger_offset: int


class Guest:
    def __init__(self, machine: Machine):
        self.m = machine
        self._seq = 0

    def sh(self, command: str, **kw) -> str:
        return self.m.ssh(command, **kw).stdout

    def unique(self, stem: str) -> str:
        self._seq += 1
        return f"{stem}{self._seq}"

    # --- set-up ----------------------------------------------------------------------

    def install_tools(self) -> None:
        self.m.put(sorted(TOOLS.iterdir()), "/usr/local/bin/")
        self.sh("chmod 755 /usr/local/bin/la-* /usr/local/bin/vscan.py && "
                "install -d -m 1777 /tmp/la-vm && install -d -m 700 /run/la-vm")

    def install_product(self, deb: Path) -> None:
        """dpkg -i, the profiles enabled, and one setting for an emulated machine: fprintd's
        calls may take up to 30 s (bus_timeout, 2 s by default, is a bound for real hardware;
        under TCG on a busy host fprintd's D-Bus activation alone took longer, and the
        module then handed over to the password: a verdict of the host's load)."""
        self.m.put([deb], "/tmp/localauth.deb")
        self.sh("dpkg -i /tmp/localauth.deb && rm /tmp/localauth.deb && "
                "DEBIAN_FRONTEND=noninteractive pam-auth-update --enable localauth localauth-authsucc "
                "&& install -d /etc/security/localauth.conf.d && "
                "printf '%s\\n' '# the VM tier: an emulated, shared machine' 'bus_timeout = 30' "
                "> /etc/security/localauth.conf.d/50-vm-tier.conf", timeout=300)
        common = self.sh("cat /etc/pam.d/common-auth /etc/pam.d/common-account")
        if "pam_localauth.so" not in common:
            raise GuestError(f"pam-auth-update did not enable the profiles:\n{common}")

    def prepare(self, deb: Path, users: tuple[str, ...]) -> None:
        """A booted guest made ready for a test file: the tools, the product with its
        profiles, the fingerwatch, and each of ``users`` enrolled (PRINTS)."""
        self.install_tools()
        self.install_product(deb)
        self.start_fingerwatch()
        for user in users:
            self.enroll(user)

    def start_fingerwatch(self) -> None:
        """The monitor of fprintd's device (a transient unit: systemd keeps its PID)."""
        self.sh(f"install -d -m 700 /run/la-vm; rm -f {FINGER_LOG} {FINGER_LOG}.err; "
                f"systemctl stop la-fingerwatch 2>/dev/null; "
                f"systemd-run --quiet --unit=la-fingerwatch --collect la-fingerwatch {FINGER_LOG}")
        wait_for("the D-Bus monitor of fprintd's device", lambda: "Monitoring" in self.sh(
            f"cat {FINGER_LOG}.err 2>/dev/null || true"), timeout=60)

    def stop_fingerwatch(self) -> None:
        self.m.ssh("systemctl stop la-fingerwatch", check=False)

    def enroll(self, user: str) -> None:
        out = self.sh(f"(fprintd-enroll -f right-index-finger {user} & vscan.py enroll "
                      f"{PRINTS[user]} >/dev/null; wait) 2>&1; fprintd-list {user}", timeout=180)
        if "right-index-finger" not in out.split("Fingerprints for user")[-1]:
            raise GuestError(f"enrolling {user} failed:\n{out}")

    # --- facts -----------------------------------------------------------------------

    def mark(self) -> Mark:
        out = self.sh(f"journalctl -q -n 1 -o export | sed -n 's/^__CURSOR=//p'; "
                      f"stat -c %s {FINGER_LOG}")
        cursor, offset = out.split("\n")[:2]
        return Mark(cursor, int(offset))

    def observe(self, mark: Mark, rc: Optional[str] = None, vt: Optional[int] = None,
                tmux: Optional[str] = None) -> dict:
        args = f"--finger-log {FINGER_LOG} --offset {mark.finger_offset}"
        if rc:
            args += f" --rc {rc}"
        if vt:
            args += f" --vt {vt}"
        if tmux:
            args += f" --tmux {shlex.quote(tmux)}"
        return json.loads(self.sh(f"la-observe {args}"))

    def finger(self, mark: Mark) -> list[bool]:
        return self.observe(mark)["finger"]

    def journal(self, mark: Mark) -> list[dict]:
        out = self.sh(f"journalctl -q -o json --after-cursor={shlex.quote(mark.cursor)} "
                      f"--output-fields=MESSAGE,SYSLOG_IDENTIFIER,_PID,_SYSTEMD_UNIT,"
                      f"_SYSTEMD_USER_UNIT,_SYSTEMD_SESSION")
        entries = []
        for line in out.splitlines():
            e = json.loads(line)
            if isinstance(e.get("MESSAGE"), list):   # journald's form of a non-UTF-8 message
                e["MESSAGE"] = bytes(e["MESSAGE"]).decode(errors="replace")
            entries.append(e)
        return entries

    # --- the package's AppArmor profiles --------------------------------------------------

    def denials_mark(self) -> tuple[str, int]:
        """Where the journal and the audit log end now, for ``apparmor_denials``."""
        out = self.sh(f"journalctl -q -n 1 -o export | sed -n 's/^__CURSOR=//p'; "
                      f"stat -c %s {AUDIT_LOG} 2>/dev/null || echo 0")
        cursor, size = out.split("\n")[:2]
        return cursor, int(size)

    def apparmor_denials(self, since: tuple[str, int]) -> list[str]:
        """AppArmor's DENIED records since ``since`` that name one of the package's profiles
        (as the confined process, or as the peer another profile refused), from the audit
        log (where the kernel sends them while auditd runs) and the journal (the kernel's
        log before it does). Records of a program named PROVOKE are left out: a case
        that shows a denial on purpose runs it under that name."""
        cursor, size = since
        after = f"--after-cursor={shlex.quote(cursor)}" if cursor else "-b"   # ("", 0): this boot
        out = self.sh(f"tail -c +{size + 1} {AUDIT_LOG} 2>/dev/null; "
                      f"journalctl -q -o cat {after} -g 'apparmor=\"DENIED\"'", check=False)
        own = re.compile(r'(profile|peer|label)="(%s)[" ]' % "|".join(OWN_PROFILES))
        return [line for line in out.splitlines()
                if 'apparmor="DENIED"' in line and own.search(line) and f'comm="{PROVOKE}"' not in line]

    def module_lines(self, mark: Mark, ident: Optional[str] = None) -> list[dict]:
        """The module's summary lines since mark (``user=... result=... pam=...``), each
        parsed into its fields plus ident, pid, phase and the caller's units."""
        lines = []
        for e in self.journal(mark):
            msg = e.get("MESSAGE", "")
            m = SUMMARY.search(msg)
            if not m or (ident and e.get("SYSLOG_IDENTIFIER") != ident):
                continue
            f = parse_fields(msg[m.end() - len('user="'):])
            f.update(ident=e.get("SYSLOG_IDENTIFIER"), pid=e.get("_PID"), phase=m["phase"],
                     unit=e.get("_SYSTEMD_UNIT"), user_unit=e.get("_SYSTEMD_USER_UNIT"),
                     message=msg)
            lines.append(f)
        return lines

    def first_line(self, mark: Mark, ident: str) -> dict:
        """The first line's verdict, waited for (the module writes it when it returns): the
        caller's first auth summary, since the first line runs before the password and the
        authsucc line after it."""
        def probe():
            return next((f for f in self.module_lines(mark, ident) if f["phase"] == "auth"), None)
        return wait_for(f"the module's line from {ident}", probe)

    def status(self, user: str) -> dict:
        return json.loads(self.sh(f"localauthctl status {user} --json"))

    def sessions(self, user: str) -> list[dict]:
        """logind's sessions of user, each with the properties the rule reads."""
        out = self.sh(f"for s in $(loginctl show-user {user} -p Sessions --value 2>/dev/null); do "
                      f"loginctl show-session $s -p Id -p Remote -p RemoteHost -p Seat -p TTY "
                      f"-p Active -p State -p LockedHint -p IdleHint -p Class -p Type "
                      f"-p Service | paste -sd' '; done")
        return [dict(kv.split("=", 1) for kv in line.split()) for line in out.splitlines() if line]

    def console_session(self) -> dict:
        for s in self.sessions("alice"):
            if s.get("TTY") == "tty1" and s.get("State") != "closing":
                return s
        raise GuestError(f"alice has no session on tty1: {self.sessions('alice')}")

    def remote_sessions(self, user: str) -> list[dict]:
        return [s for s in self.sessions(user) if s.get("Remote") == "yes"]

    def wait_no_remote_session(self, user: str) -> None:
        wait_for(f"no remote session of {user}", lambda: not self.remote_sessions(user))

    def scan(self, finger: str) -> None:
        self.sh(f"vscan.py send {finger}")


# --- terminals -----------------------------------------------------------------------

class Console:
    """Virtual console VT of the guest: typed through QEMU's keyboard (the keys reach
    whatever runs in that console's foreground, as a person's would), read from /dev/vcsu."""
    kind = "vt"

    def __init__(self, guest: Guest, vt: int = 1):
        self.g = guest
        self.vt = vt

    def screen(self) -> dict:
        return json.loads(self.g.sh(f"la-screen {self.vt}"))

    @staticmethod
    def screen_text(screen: dict) -> str:
        return "\n".join(screen["lines"])

    def text(self, observed: Optional[dict] = None) -> str:
        return self.screen_text(observed["screen"] if observed else self.screen())

    def _before_cursor(self) -> str:
        s = self.screen()
        cells = "".join(line.ljust(s["cols"]) for line in s["lines"])
        return cells[:s["y"] * s["cols"] + s["x"]].rstrip()

    def type_line(self, text: str, tries: int = 3) -> None:
        """Types text and checks it arrived as typed before pressing Enter (a lost key is
        retyped: Ctrl-U, then again)."""
        q = self.g.m.qmp
        for _ in range(tries):
            q.type(text)
            try:
                wait_for(f"{text!r} on the console", lambda: self._before_cursor().endswith(text),
                         timeout=15)
            except GuestError:
                q.release_modifiers()
                q.key("ctrl-u")
                continue
            q.key("ret")
            return
        raise GuestError(f"could not type {text!r} on tty{self.vt}; the screen:\n"
                         f"{self.screen_text(self.screen())}")

    def run(self, command: str) -> None:
        self.type_line(command)

    def type_secret(self, text: str) -> None:
        """Typed without a check (a password is not echoed)."""
        self.g.m.qmp.type(text + "\n")

    def key(self, combo: str) -> None:
        self.g.m.qmp.key(combo)

    def clear(self) -> None:
        self.type_line("clear")
        wait_for("a cleared console", lambda: len([ln for ln in self.screen()["lines"] if ln]) <= 1,
                 timeout=30)


class TmuxPane:
    """A pane of alice's tmux server. Keys are sent by ``tmux send-keys`` run through
    ``sender`` (a function running a shell command in the guest: root's, or an SSH login of
    alice's); the pane is read as root."""
    kind = "tmux"

    def __init__(self, guest: Guest, target: str, sender: Callable[[str], object]):
        self.g = guest
        self.target = target
        self.sender = sender

    def _send(self, *keys: str, literal: bool = False) -> None:
        flag = "-l " if literal else ""
        self.sender(f"tmux send-keys -t {shlex.quote(self.target)} {flag}"
                    + " ".join(shlex.quote(k) for k in keys))

    def run(self, command: str) -> None:
        self._send(command, literal=True)
        self._send("Enter")

    def clear(self) -> None:
        self.run("clear")
        wait_for("a cleared pane", lambda: len([ln for ln in self.text().splitlines() if ln.strip()]) <= 1,
                 timeout=30)

    def type_secret(self, text: str) -> None:
        self.run(text)

    def key(self, combo: str) -> None:
        self._send({"ret": "Enter", "ctrl-c": "C-c"}.get(combo, combo))

    def text(self, observed: Optional[dict] = None) -> str:
        if observed is not None and observed.get("pane") is not None:
            return observed["pane"]
        return self.g.sh(f"runuser -u alice -- tmux capture-pane -p -J -t {shlex.quote(self.target)}")


class SshTerminal:
    """An SSH login from the host on a pseudo-terminal (ssh -tt), running one command."""
    kind = "ssh"

    def __init__(self, guest: Guest, user: str = "alice"):
        self.g = guest
        self.user = user
        self.child: Optional[pexpect.spawn] = None
        self.output = ""

    def run(self, command: str) -> None:
        argv = self.g.m.ssh_argv(self.user, tty=True) + [command]
        self.child = pexpect.spawn(argv[0], argv[1:], encoding="utf-8", codec_errors="replace",
                                   timeout=WAIT, dimensions=(50, 200))

    def _drain(self) -> None:
        while self.child is not None and not self.child.closed:
            try:
                self.output += self.child.read_nonblocking(65536, timeout=0)
            except (pexpect.TIMEOUT, pexpect.EOF):
                return

    def text(self, observed: Optional[dict] = None) -> str:
        self._drain()
        return self.output

    def type_secret(self, text: str) -> None:
        self.child.sendline(text)

    def key(self, combo: str) -> None:
        self.child.send({"ret": "\r", "ctrl-c": "\x03"}[combo])

    def done(self) -> Optional[int]:
        self._drain()
        if self.child.isalive():
            return None
        self.child.close()
        return self.child.exitstatus

    def close(self) -> None:
        if self.child is not None and self.child.isalive():
            self.child.terminate(force=True)


# --- one authentication, answered as the person at the machine would --------------------

def after(text: str, marker: str) -> str:
    """text from the last line that shows marker (the command as typed) on; all of it
    without a marker."""
    if not marker:
        return text
    at = text.rfind(marker)
    return text[at:] if at >= 0 else text

@dataclass
class Outcome:
    rc: Optional[int]                     # the command's exit status
    finger: list[bool]                    # every finger-needed value fprintd signalled
    scans: list[str]                      # the fingers scanned, in order
    prompts: int                          # password prompts answered
    text: str                             # the terminal's text at the end
    line: dict                            # the module's first-line verdict
    lines: list[dict]                     # all its summary lines of the caller
    seen: dict = field(default_factory=dict)   # what at_prompt() read at the first prompt
    service: list[str] = field(default_factory=list)   # localauthd's lines meanwhile

    @property
    def finger_offered(self) -> bool:
        return True in self.finger

    def evidence(self, facts: Optional[dict] = None) -> str:
        """What a failed assertion shows: the facts compared (default facts()), the module's
        lines, localauthd's (a refused connection is said only there) and the terminal's
        non-empty lines."""
        lines = "\n".join(f["message"] for f in self.lines) or "(no line of the module)"
        service = "\n".join(self.service) or "(no line of localauthd)"
        shown = "\n".join(ln for ln in self.text.splitlines() if ln.strip())
        return (f"\nfacts: {facts or self.facts()}\nmodule:\n{lines}\nlocalauthd:\n{service}"
                f"\nterminal:\n{shown}")

    def facts(self) -> dict:
        """The observable facts a test compares in one assertion (a failure shows them all)."""
        return {"finger_offered": self.finger_offered, "scans": self.scans,
                "password_prompts": self.prompts, "rc": self.rc,
                "result": self.line.get("result"), "reason": self.line.get("reason"),
                "pam": self.line.get("pam")}


def attempt(guest: Guest, term, command: str, *, ident: str, prompt: str, password: Optional[str],
            finger: str = PRINTS["alice"], max_scans: int = 3,
            at_prompt: Optional[Callable[[], dict]] = None, max_prompts: int = 1) -> Outcome:
    """Runs command on term and answers it: whenever fprintd wants a finger (a new verify
    began), one scan of finger (at most max_scans); at each new password prompt (regex
    prompt, at most max_prompts), at_prompt() is read first, then password is typed (None:
    Ctrl-C instead). Returns once the command has exited (la-run's file, or the SSH
    login's end) and the module's line is in the journal."""
    name = guest.unique("case")
    vt = term.vt if isinstance(term, Console) else None
    tmux = term.target if isinstance(term, TmuxPane) else None
    if isinstance(term, SshTerminal):
        mark = guest.mark()
        term.run(command)
        since = ""
    else:
        term.clear()   # an earlier command's prompt on the screen is not this one's
        mark = guest.mark()
        since = f"la-run {name} "
        term.run(since + command)
    scans: list[str] = []
    prompts = 0
    seen: dict = {}
    end = time.monotonic() + WAIT
    while True:
        obs = guest.observe(mark, rc=None if isinstance(term, SshTerminal) else name, vt=vt, tmux=tmux)
        rc = term.done() if isinstance(term, SshTerminal) else obs["rc"]
        if rc is not None:
            break
        values = obs["finger"]
        if values and values[-1] and values.count(True) > len(scans) and len(scans) < max_scans:
            guest.scan(finger)
            scans.append(finger)
            continue
        shown = len(re.findall(prompt, after(term.text(obs), since)))
        if shown > prompts and prompts < max_prompts:
            if at_prompt is not None and not seen:
                seen = at_prompt()
            prompts += 1
            if password is None:
                term.key("ctrl-c")
            else:
                term.type_secret(password)
            continue
        if time.monotonic() > end:
            raise GuestError(f"{command!r} did not finish within {WAIT} s; finger-needed values "
                             f"{values}, scans {scans}, prompts {prompts}; the terminal:\n"
                             f"{term.text()}")
        time.sleep(POLL)
    line = guest.first_line(mark, ident)
    out = Outcome(rc=rc, finger=guest.finger(mark), scans=scans, prompts=prompts,
                  text=term.text(), line=line, lines=guest.module_lines(mark, ident), seen=seen,
                  service=[e.get("MESSAGE", "") for e in guest.journal(mark)
                           if e.get("SYSLOG_IDENTIFIER") == "localauthd"])
    print(f"--- {command!r} on {term.kind}:{out.evidence()}")   # shown when the test fails
    return out
