"""pytest fixtures of the VM tier (run with /usr/bin/python3 -m pytest Tests/vm, as root).

* ``deb``: the product's .deb under test: ``LOCALAUTH_VM_DEB``, else ``scripts/package
  --output build/vm/deb`` is run (``--no-build`` with ``LOCALAUTH_SKIP_BUILD=1``).
* ``image``: the test file's guest image (images.py: cached, built when missing). A file
  names its own with ``GUEST_SUITE`` and ``GUEST_DESKTOP`` (test_bookworm.py: Debian 12's
  base flavour); otherwise the Debian 13 one, the desktop flavour, which both other files
  boot: test_presence.py into its default, multi-user.target (no GDM; the auth stacks are
  the base image's, since GNOME's keyring adds itself only to common-password),
  test_desktop.py into graphical.target. One Debian 13 image instead of two spares a fresh
  machine the base image's build (about 110 s) and its downloads.
  test_plasma.py names the plasma flavour (the base image and Plasma's packages, booted
  into graphical.target: SDDM), its own image.
* ``machine``: that image booted with ``-snapshot`` as a console-only guest, once per test
  module; stopped at the module's end on every exit path.
* ``guest``: that machine prepared as every case starts from it: guest tools, the .deb
  installed and the pam-auth-update profiles enabled, alice's and bob's right index fingers
  enrolled (alice-rif, bob-rif), alice's password typed once this boot (sudo on tty1), bob's
  once (a login on tty2), fprintd's device watched.
* ``tty1`` (every test of test_presence.py): alice's console with a fresh prompt, its session
  checked local, active, unlocked and not idle, alice without a remote session; whatever a
  test registered with ``cleanup`` is undone afterwards, and the console made ready again.

Nothing is ever skipped: a missing qemu, a failed image build or a guest that does not come
up is an error of every test that needs it, with the reason.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

from guest import Console, Guest, GuestError, PASSWORDS, attempt, wait_for  # noqa: E402
from images import SUITE, ensure_image  # noqa: E402
from machine import Machine  # noqa: E402


_terminated: list[int] = []


def _raise_interrupt(signum, frame):
    _terminated.append(signum)
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_runtest_setup(item):
    # Once terminated, no later test starts (and boots a guest), even when the interrupt
    # met a wait that swallowed it: seen, the tier went on to the next file after SIGTERM.
    if _terminated:
        pytest.exit(f"terminated by signal {_terminated[0]}", returncode=1)


def pytest_configure(config):
    # SIGTERM unwinds the fixtures, so the guest is powered off by its PID.
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_interrupt)
    # scripts/test-vm runs the files on two pytest-xdist workers, a guest each: each worker
    # forwards its guests' sshd from ports of its own, so two boots never race for one.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and "LOCALAUTH_VM_PORTS" not in os.environ:
        first = 2230 + 5 * int(worker[2:])
        os.environ["LOCALAUTH_VM_PORTS"] = f"{first}-{first + 4}"


# The order of the files, each file's guest booted once, one guest at a time: Debian 13's
# console cases, Debian 12's (console cases too), GNOME's, then Plasma's (its guest keeps
# about 1.7 of the 2 cores busy: never beside another).
FILE_ORDER = {"test_presence.py": 0, "test_bookworm.py": 1, "test_desktop.py": 2,
              "test_plasma.py": 3}


def pytest_collection_modifyitems(session, config, items):
    # The desktop's file last. scripts/test starts this tier beside the integration tests,
    # which keep both host cores busy for their first 20 minutes or so; GNOME under TCG is
    # what suffers most from that (its login took over 4 min, a terminal's start 40 s),
    # while the console and SSH cases of test_presence.py pass beside them.
    items.sort(key=lambda item: FILE_ORDER.get(item.path.name, 1))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and not hasattr(rep, "wasxfail"):
        # This tier never reports a check it did not make as passed or skipped.
        rep.outcome = "failed"
        rep.longrepr = f"skipped, which this tier counts as a failure: {rep.longrepr}"
    setattr(item, f"rep_{rep.when}", rep)


@pytest.fixture(scope="session")
def deb() -> Path:
    named = os.environ.get("LOCALAUTH_VM_DEB")
    if named:
        path = Path(named)
        if not path.is_file():
            raise GuestError(f"LOCALAUTH_VM_DEB={named}: no such file")
        return path
    out = REPO / "build" / "vm" / "deb"
    argv = [str(REPO / "scripts" / "package"), "--output", str(out)]
    if os.environ.get("LOCALAUTH_SKIP_BUILD") == "1":
        argv.append("--no-build")
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise GuestError(f"scripts/package failed:\n{r.stdout[-2000:]}{r.stderr[-4000:]}")
    return Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def image(request, deb) -> Path:
    suite = getattr(request.module, "GUEST_SUITE", SUITE)
    desktop = getattr(request.module, "GUEST_DESKTOP", True)
    flavour = getattr(request.module, "GUEST_FLAVOUR", None)    # test_plasma.py: "plasma"
    return ensure_image(desktop=desktop, deb=deb, suite=suite, flavour=flavour)


@pytest.fixture(scope="module")
def machine(image):
    m = Machine(image)
    try:
        m.start()
        print(f"guest up after {m.boot_seconds:.0f} s on port {m.port}")
        yield m
    finally:
        m.stop()


def login_on_console(guest: Guest, vt: int, user: str) -> None:
    """user types name and password at the getty of virtual console vt, then logs out."""
    con = Console(guest, vt)
    guest.sh(f"chvt {vt}")
    try:
        wait_for(f"the login prompt on tty{vt}", lambda: con.text().rstrip().endswith("login:"))
        con.type_line(user)
        wait_for(f"the password prompt on tty{vt}", lambda: "Password:" in con.text())
        con.type_secret(PASSWORDS[user])
        wait_for(f"{user}'s shell on tty{vt}", lambda: f"{user}@localauth-vm" in con.text())
        con.type_line("exit")
    finally:
        guest.sh("chvt 1")


@pytest.fixture(scope="module")
def guest(machine, deb):
    g = Guest(machine)
    g.prepare(deb, ("alice", "bob"))
    console_ready(g)
    # The password once this boot (and the first time ever): the rule before any finger.
    first = attempt(g, Console(g), "sudo -k true", ident="sudo", prompt=r"\[sudo\] password for alice",
                    password=PASSWORDS["alice"])
    if (first.rc, first.line.get("reason"), first.finger_offered) != (0, "never-used", False):
        raise GuestError(f"alice's first sudo was not the password:{first.evidence()}")
    login_on_console(g, 2, "bob")
    for user in ("alice", "bob"):
        if not g.status(user)["password_this_boot"]:
            raise GuestError(f"{user}'s password was not recorded: {g.status(user)}")
    yield g
    g.stop_fingerwatch()


def console_ready(g: Guest) -> Console:
    """tty1 in front, alice's login shell in its foreground, the screen cleared. A console
    left otherwise (a command still running) gets Ctrl-C, then a new session."""
    g.sh("chvt 1")
    con = Console(g, 1)

    def shell_in_front():
        rows = [r.split() for r in g.sh("ps -t tty1 -o pid=,ppid=,pgid=,tpgid=,comm=").splitlines()]
        # Every login process, not tty1's alone: Debian 13's login has no controlling
        # terminal of its own (ps -t tty1 lists only the shell it started).
        logins = set(g.sh("pgrep -x login; true").split())
        return any(r[1] in logins and r[2] == r[3] and r[4] == "bash" for r in rows)

    def tty1_session():
        try:
            return g.console_session()["Id"]
        except GuestError:      # between the old session's end and the new one's start
            return None

    if not shell_in_front():
        con.key("ctrl-c")
        try:
            wait_for("alice's shell in front on tty1 after Ctrl-C", shell_in_front, timeout=10)
        except GuestError:
            old = g.console_session()["Id"]
            g.sh(f"loginctl terminate-session {old}")
            wait_for("a new session on tty1", lambda: tty1_session() not in (None, old))
            wait_for("alice's shell in front on tty1", shell_in_front)
    con.clear()
    return con


@pytest.fixture(autouse=True)
def no_apparmor_denial(request):
    """Every case of a guest with the package (the console's ``guest``, the desktop's
    ``desk``, Plasma's ``plasma``) ends with no AppArmor denial that names the package's profiles: what the
    service and its helpers did for the case was all within them."""
    name = next((n for n in ("guest", "desk", "plasma") if n in request.fixturenames), None)
    if name is None:
        yield
        return
    g = request.getfixturevalue(name)
    g = getattr(g, "g", g)
    since = g.denials_mark()
    yield
    denied = g.apparmor_denials(since)
    assert not denied, "AppArmor denied the package's profiles:\n" + "\n".join(denied)


@pytest.fixture
def cleanup():
    """Register undo actions; they run in reverse order after the test, each one even when
    another failed."""
    actions = []
    yield actions.append
    errors = []
    for undo in reversed(actions):
        try:
            undo()
        except Exception as e:  # noqa: BLE001 - every undo runs; the first error is raised
            errors.append(e)
    if errors:
        raise errors[0]


@pytest.fixture
def tty1(guest, cleanup):
    con = console_ready(guest)
    guest.wait_no_remote_session("alice")
    s = guest.console_session()
    expect = {"Remote": "no", "Seat": "seat0", "Active": "yes", "LockedHint": "no", "IdleHint": "no"}
    got = {k: s.get(k) for k in expect}
    if got != expect:
        raise GuestError(f"alice's console session is not as every case starts: {s}")
    yield con
