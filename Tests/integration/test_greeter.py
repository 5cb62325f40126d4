"""Greeters: a login screen's conversation, no terminal, and the login keyring.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_greeter.py

A greeter (GDM's worker, LightDM, SDDM) calls PAM as root from a process with no
controlling terminal and nothing to read on stdin, names the display in PAM_XDISPLAY (and
PAM_TTY), and shows the module's messages in its own window. GDM runs the fingerprint as a
conversation of its own (`gdm-fingerprint`) that answers no prompt. The driver here
(pamenv.drive, in its own session: `setsid`) is that: PAM_XDISPLAY=:0, PAM_TTY=:0, a
conversation that records every message and fails every prompt it has no answer for, then
pam_acct_mgmt as GDM does. The services live in a pam_wrapper world with copies of the
machine's common-* files, and the whole run is in a namespace whose /dev/log the test reads
(pam_gnome_keyring logs through syslog).

The `gdm-fingerprint` files are recreated from what GDM and the distributions ship (the
auth and account lines as documented; GDM's data/pam-arch, Fedora's authselect profile
`fingerprint-auth` behind GDM's data/pam-redhat, Debian's and Ubuntu's gdm3 package), with
`pam_fprintd.so` replaced by `pam_localauth.so policy=biometrics` on its own line, as the
README tells. Stand-ins, each because Debian has no such file or module: Arch's
`system-local-login` and Fedora's `postlogin` are Debian's common-account/common-session;
`pam_gdm.so` (which only hands the password to the keyring) is `pam_permit.so`.

The login keyring: pam_gnome_keyring's auth part only keeps the typed password for the
session ("stashed password to try later in open session" in its log) or logs that none is
there. The first login after boot must take the password (the product's rule), so the
keyring gets it then; later logins may take the finger.
"""
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from servicebed import namespace_prefix  # noqa: E402
from pamenv import PamWorld  # noqa: E402
from messages import FINGER, ENROLLED, OTHER, SWIPE, FIRST_USE, LOCKED, UNAVAILABLE  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)
from scan_events import ScanEvents  # noqa: E402
from real_helper import LocalService  # noqa: E402

KEYRING_GOT = "gkr-pam: stashed password to try later in open session"
KEYRING_NONE = "gkr-pam: no password is available for user"
GREETER = {"xdisplay": ":0", "tty": ":0"}
OURS = "@LOCALAUTH@"     # replaced by the installed module and the test's arguments

# The module's line in place of pam_fprintd.so; the rest as each distribution ships it.
GDM_FINGERPRINT = {
    "debian": {"gdm-fingerprint": [
        "auth    requisite       pam_nologin.so",
        "auth    required        pam_succeed_if.so user != root quiet_success",
        f"auth    required        {OURS} policy=biometrics",
        "auth    optional        pam_gnome_keyring.so",
        "@include common-account",
        "session required        pam_loginuid.so",
        "session optional        pam_keyinit.so force revoke",
        "session required        pam_limits.so",
        "session required        pam_env.so readenv=1",
        "@include common-session",
        "session optional        pam_gnome_keyring.so auto_start"]},
    "fedora": {
        "gdm-fingerprint": [
            "auth        substack      fingerprint-auth",
            "auth        include       postlogin",
            "account     required      pam_nologin.so",
            "account     include       fingerprint-auth",
            "password    include       fingerprint-auth",
            "session     required      pam_loginuid.so",
            "session     optional      pam_keyinit.so force revoke",
            "session     include       fingerprint-auth",
            "session     include       postlogin"],
        "fingerprint-auth": [
            "auth        required                     pam_env.so",
            f"auth        [success=done default=bad]   {OURS} policy=biometrics",
            "auth        required                     pam_deny.so",
            "account     required                     pam_unix.so",
            "account     required                     pam_permit.so",
            "password    required                     pam_deny.so",
            "session     optional                     pam_keyinit.so revoke",
            "session     required                     pam_limits.so",
            "session     required                     pam_unix.so"],
        "postlogin": [
            "session     optional                     pam_umask.so silent"]},
    "arch": {"gdm-fingerprint": [
        "auth       required                    pam_shells.so",
        "auth       requisite                   pam_nologin.so",
        "auth       requisite                   pam_faillock.so      preauth",
        f"auth       required                    {OURS} policy=biometrics",
        "auth       optional                    pam_permit.so",
        "auth       required                    pam_env.so",
        "auth       [success=ok default=1]      pam_permit.so",
        "auth       optional                    pam_gnome_keyring.so",
        "account    include                     common-account",
        "password   required                    pam_deny.so",
        "session    include                     common-session",
        "session    optional                    pam_gnome_keyring.so auto_start"]},
}

# The README's: pam.d/gdm-fingerprint as the project ships it.
GDM_FINGERPRINT["shipped"] = {"gdm-fingerprint": [
    l.replace("pam_localauth.so", OURS)
    for l in (Path(__file__).resolve().parents[2] / "pam.d" / "gdm-fingerprint").read_text().splitlines()
    if l.strip() and not l.startswith("#")]}

# A password conversation: Debian's gdm-password, and a one-conversation greeter
# (LightDM's, SDDM's) with the product's two lines around common-auth.
GDM_PASSWORD = [
    "auth    requisite       pam_nologin.so",
    "auth    required        pam_succeed_if.so user != root quiet_success",
    "@include common-auth",
    "auth    optional        pam_gnome_keyring.so",
    "@include common-account"]
ONE_CONVERSATION = [
    f"auth    sufficient      {OURS}",
    "@include common-auth",
    f"auth    optional        {OURS} authsucc",
    "auth    optional        pam_gnome_keyring.so",
    "@include common-account"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


class Greeter:
    """A pam_wrapper world with the machine's common-* files, a throwaway user with the right
    index finger enrolled, a state directory, and the greeter-shaped driver."""

    def __init__(self, inst, bed, user, syslog):
        self.inst, self.bed, self.user, self.syslog = inst, bed, user, syslog
        self.tmp = Path(tempfile.mkdtemp(prefix="localauth-greeter-"))
        try:
            self.tmp.chmod(0o755)
            self.state = self.tmp / "state"
            self.state.mkdir(mode=0o700)
            (self.tmp / "world").mkdir(mode=0o755)
            self.world = PamWorld(root=self.tmp / "world")
            # localauthd with the installation's helper, as where no systemd runs; it and
            # its helpers log to the test's syslog.
            self.localauthd = LocalService(inst.helper, bed=bed, state=self.state, syslog=syslog)
            for common in sorted(Path("/etc/pam.d").glob("common-*")):
                self.world.service(common.name, common.read_text().splitlines())
            bed.enroll(user.name, FINGER, ENROLLED)
        except BaseException:
            self.close()
            raise

    def close(self):
        if getattr(self, "localauthd", None) is not None:
            self.localauthd.close()
        if getattr(self, "world", None) is not None:
            self.world.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def args(self, **extra) -> str:
        options = dict(service=self.localauthd.socket, dbus_address=self.bed.address, state_dir=self.state,
                       fprint_dir=self.bed.state_dir, config=self.inst.config, scan_timeout=10)
        options.update(extra)
        return " ".join(f"{k}={v}" for k, v in options.items())

    def install(self, files: dict, **extra) -> None:
        """Service files; an include or substack names the world's file by its path (libpam
        under pam_wrapper looks for them in /etc/pam.d otherwise)."""
        ours = f"{self.inst.module} {self.args(**extra)}"
        names = {p.name for p in self.world.services.iterdir()} | set(files)

        def resolve(line):
            words = line.split()
            if len(words) >= 2 and words[-2] in ("@include", "include", "substack") \
                    and words[-1] in names:
                return line[:line.rindex(words[-1])] + str(self.world.services / words[-1])
            return line.replace(OURS, ours)
        for name, lines in files.items():
            self.world.service(name, [resolve(l) for l in lines])

    def drive(self, service="gdm-fingerprint", fingers=(), answers=(), items=None):
        """One greeter conversation; returns (DriveResult, bed events, finger results,
        syslog messages, seconds)."""
        mark, log_mark = self.bed.mark(), self.syslog.mark()
        injection = self.bed.inject_async([f"SCAN {p}" for p in fingers]) if fingers else None
        started = time.monotonic()
        r = self.world.drive(service, self.user.name, answers=answers,
                             items=GREETER if items is None else items, account=True,
                             prefix=[*namespace_prefix(self.syslog), "setsid"])
        elapsed = time.monotonic() - started
        results = injection.wait(20) if injection else []
        return Outcome(r, self.bed.events(mark), results,
                       [m for _, m in self.syslog.lines[log_mark:]], elapsed)

    def first_password(self):
        """The first login after boot, in a one-conversation greeter: the password."""
        self.install({"la-greeter": ONE_CONVERSATION})
        o = self.drive("la-greeter", answers=[self.user.password])
        assert o.rv == "PAM_SUCCESS" and o.verify_starts == [], o
        return o

    def state_values(self) -> dict:
        return system.state_fields(self.state / f"{self.user.name}.state")


class Outcome(ScanEvents):
    def __init__(self, drive, events, results, logs, elapsed):
        self.drive, self.events, self.results = drive, events, results
        self.logs, self.elapsed = logs, elapsed

    @property
    def rv(self):
        return self.drive.rv

    def shown(self):
        return [t for s, t in self.drive.messages if s in ("PAM_TEXT_INFO", "PAM_ERROR_MSG")]

    def prompts(self):
        return [t for s, t in self.drive.messages if s.startswith("PAM_PROMPT")]

    def __repr__(self):
        return (f"Outcome(rv={self.rv}, acct={self.drive.acct_rv}, messages={self.drive.messages}, "
                f"results={self.results}, logs={self.logs}, elapsed={self.elapsed:.1f})")


@pytest.fixture
def greeter(inst, bed, syslog):
    with system.ThrowawayUser(prefix="la-gdm-") as user:
        g = Greeter(inst, bed, user, syslog)
        try:
            yield g
        finally:
            g.close()


DISTROS = sorted(GDM_FINGERPRINT)


# --- GDM's fingerprint conversation -----------------------------------------------------------

@pytest.mark.parametrize("distro", DISTROS)
def test_gdm_fingerprint_the_finger_logs_in(greeter, distro):
    greeter.first_password()
    greeter.install(GDM_FINGERPRINT[distro])
    o = greeter.drive(fingers=[ENROLLED])
    assert o.rv == "PAM_SUCCESS" and o.drive.acct_rv == "PAM_SUCCESS", o
    assert o.results == ["verify-match"]
    assert o.prompts() == [], o                  # the conversation was never asked anything
    assert o.shown()[0] == SWIPE, o              # the greeter has something to show
    assert not any("Ctrl-C" in t for t in o.shown()), o   # no key a greeter could send


@pytest.mark.parametrize("distro", DISTROS)
def test_gdm_fingerprint_wrong_fingers_fail_the_service(greeter, distro):
    greeter.first_password()
    greeter.install(GDM_FINGERPRINT[distro])
    o = greeter.drive(fingers=[OTHER] * 3)
    assert o.rv != "PAM_SUCCESS" and not o.matched, o
    assert o.results == ["verify-no-match"] * 3
    assert "Fingerprint not recognized - 2 tries left" in o.shown(), o
    assert o.prompts() == [], o
    assert greeter.state_values()["failures"] == "3"


@pytest.mark.parametrize("distro", DISTROS)
def test_gdm_fingerprint_lockout_fails_the_service_without_a_scan(greeter, distro):
    greeter.first_password()
    greeter.install(GDM_FINGERPRINT[distro])
    greeter.drive(fingers=[OTHER] * 3)
    o = greeter.drive(fingers=[OTHER] * 2)
    assert o.rv != "PAM_SUCCESS" and UNAVAILABLE in o.shown(), o
    assert LOCKED not in o.shown(), o
    o = greeter.drive()
    assert o.rv != "PAM_SUCCESS" and o.verify_starts == [], o
    assert o.shown() == [UNAVAILABLE], o
    assert greeter.state_values()["failures"] == "5"


@pytest.mark.parametrize("distro", DISTROS)
def test_gdm_fingerprint_user_not_opted_in_fails_the_service(greeter, distro):
    greeter.first_password()
    greeter.install(GDM_FINGERPRINT[distro], opt_in="required")
    o = greeter.drive()
    assert o.rv != "PAM_SUCCESS" and o.verify_starts == [], o
    assert o.prompts() == [], o


@pytest.mark.parametrize("distro", DISTROS)
def test_gdm_fingerprint_nothing_waits_past_scan_timeout(greeter, distro):
    greeter.first_password()
    greeter.install(GDM_FINGERPRINT[distro], scan_timeout=2)
    o = greeter.drive()                          # nobody touches the reader
    assert o.rv != "PAM_SUCCESS" and len(o.verify_starts) == 1, o
    # The driver's own start and the bed's round trips are included: a second is plenty
    # for them on this machine; the bound is scan_timeout plus that, not the helper's 120 s.
    assert 2 <= o.elapsed < 2 + 5, o
    assert o.prompts() == [], o


@pytest.mark.parametrize("distro", DISTROS)
def test_gdm_first_login_after_boot_is_the_password_and_the_keyring_gets_it(greeter, distro):
    greeter.install(GDM_FINGERPRINT[distro])
    o = greeter.drive()                          # the fingerprint conversation gives up ...
    assert o.rv != "PAM_SUCCESS" and o.verify_starts == [], o
    assert o.shown() == [UNAVAILABLE], o         # ... saying only that
    greeter.install({"gdm-password": GDM_PASSWORD})
    o = greeter.drive("gdm-password", answers=[greeter.user.password])
    assert o.rv == "PAM_SUCCESS", o
    assert KEYRING_GOT in o.logs, o              # the keyring module has the password


# --- one conversation (LightDM, SDDM) ------------------------------------------------------

def test_one_conversation_first_login_takes_the_password_for_the_keyring(greeter):
    o = greeter.first_password()
    assert o.shown() == [UNAVAILABLE] and len(o.prompts()) == 1, o
    assert KEYRING_GOT in o.logs, o
    # Later logins take the finger; the stack ends at the `sufficient` line and the keyring
    # module gets no password, which is why the first login after boot must be the password.
    o = greeter.drive("la-greeter", fingers=[ENROLLED])
    assert o.rv == "PAM_SUCCESS" and o.results == ["verify-match"] and o.prompts() == [], o
    assert KEYRING_GOT not in o.logs, o


def test_one_conversation_returns_to_the_password_when_no_finger_comes(greeter):
    greeter.first_password()
    greeter.install({"la-greeter": ONE_CONVERSATION}, scan_timeout=2)
    o = greeter.drive("la-greeter", answers=[greeter.user.password])
    assert o.rv == "PAM_SUCCESS" and len(o.verify_starts) == 1 and not o.matched, o
    assert len(o.prompts()) == 1, o              # the module returned; pam_unix asked
    assert KEYRING_GOT in o.logs, o


# --- GDM on Wayland: a virtual console in PAM_TTY, no display -------------------------------

WAYLAND = {"tty": "/dev/tty1"}


@pytest.mark.skipif(not Path("/dev/tty1").is_char_device(), reason="no /dev/tty1")
def test_gdm_on_a_console_gets_the_finger(greeter):
    greeter.first_password()
    greeter.install(GDM_FINGERPRINT["debian"])
    o = greeter.drive(fingers=[ENROLLED], items=WAYLAND)
    assert o.rv == "PAM_SUCCESS" and o.results == ["verify-match"] and o.prompts() == [], o


@pytest.mark.skipif(not Path("/dev/tty1").is_char_device(), reason="no /dev/tty1")
def test_a_console_named_with_the_password_from_a_pipe_gets_no_scan(greeter):
    """`sudo -S` on a console: the caller has that terminal, stdin is a pipe."""
    greeter.first_password()
    greeter.install({"la-pipe": ONE_CONVERSATION})
    mark = greeter.bed.mark()
    script = (f"echo {greeter.user.password} | pamtester -I tty=/dev/tty1 la-pipe "
              f"{greeter.user.name} authenticate")
    pt = system.run_on_pty(greeter.world.command(["/bin/sh", "-c", script]))
    res = pt.finish(timeout=30)
    assert res.status == 0 and "successfully authenticated" in res.output, res.output
    assert [e for e in greeter.bed.events(mark) if e.name == "VerifyFingerSelected"] == []
