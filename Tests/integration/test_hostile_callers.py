"""The hostile-caller tier: localauthd's socket (mode 0666) is reachable by every local uid,
and no uid may take the finger away from another. While callers of several uids abuse the
socket at once (hostile_load.py: connection floods, idle connections held open, empty and
malformed frames, slow writers, sign-ins naming another machine, and setuid-shaped
processes, real uid a user's and effective uid 0, that hold connections and write nothing),
a real setuid `sudo` of another user and a lock-screen-shaped caller of a third both get the
finger: their scan starts and the touch lets them in, with no password.

The abuse is bounded in count and time (hostile_load.MAX_CONNECTIONS, LOAD_SECONDS) and is
stopped by its PIDs on every exit path. What it cost the service is read from the service's
own log and children, never from a clock.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_hostile_callers.py
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)
from messages import ENROLLED as SUDO_PRINT, SWIPE  # noqa: E402
from sudo_machine import Machine  # noqa: E402
from test_unprivileged import ENROLLED, alice, bob, locker, open_tmp  # noqa: E402,F401

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="runs as root"),
              pytest.mark.alone("floods the socket and a core while the callers run")]

LOAD = Path(__file__).resolve().parent / "hostile_load.py"
LOAD_SECONDS = 240          # a bound: the load is stopped as soon as the callers are done
NOBODY = 65534


class Hostiles:
    """The abusing processes, each recorded by its PID and stopped by it."""

    def __init__(self, socket_path):
        self.socket = str(socket_path)
        self.procs = []

    def start(self, kind, user=None, setuid_uid=None):
        argv = [sys.executable, str(LOAD), self.socket, kind, str(LOAD_SECONDS)]
        if setuid_uid is not None:
            argv.append(str(setuid_uid))     # root drops to the setuid shape itself
        kw = dict(user=user.uid, group=user.gid) if user is not None else {}
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, **kw)
        self.procs.append(p)
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
        return p

    def stop(self):
        """Tells each to stop (a line on its stdin), then waits; one that does not end in
        30 s is killed by its PID. Returns each one's count of connections."""
        made = []
        for p in self.procs:
            try:
                p.stdin.write("\n")
                p.stdin.flush()
            except OSError:
                pass
        for p in self.procs:
            try:
                out, _ = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            made += [int(w.split()[1]) for w in out.splitlines() if w.startswith("made ")]
        self.procs = []
        return made


class Nobody:
    uid = gid = NOBODY


@pytest.fixture
def mallory():
    with system.ThrowawayUser(prefix="la-hostile-") as u:
        yield u


@pytest.fixture
def hostiles(locker, mallory):
    """Stopped before mallory is removed (the fixture depends on it)."""
    h = Hostiles(locker.inst.service_socket)
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture
def sudoer(inst, locker):
    """A real setuid sudo for a user of its own, through the same service and reader."""
    with Machine(inst, locker.bed) as m:
        yield m


def start_every_kind(hostiles, mallory):
    for kind in ("flood", "idle", "empty", "garbage", "slow", "rhost"):
        hostiles.start(kind, user=Nobody)
        hostiles.start(kind, user=mallory)
    for _ in range(2):
        hostiles.start("idle", setuid_uid=mallory.uid)
        hostiles.start("slow", setuid_uid=mallory.uid)
        hostiles.start("idle", setuid_uid=NOBODY)


def test_a_lock_screen_and_a_sudo_get_the_finger_while_other_uids_abuse_the_socket(
        locker, sudoer, hostiles, mallory):
    # Without the abuse first: the stacks and the service as they are, so what changes
    # below is the abuse's doing.
    calm = sudoer.sudo([SUDO_PRINT])
    assert calm.status == 0 and calm.screen == [SWIPE, "root"], calm.screen
    start_every_kind(hostiles, mallory)
    unlock = locker.run(fingers=[ENROLLED])
    sudo = sudoer.sudo([SUDO_PRINT])
    made = hostiles.stop()
    assert sum(made) > 0, made                # the abuse ran
    assert unlock.ok and unlock.results == ["verify-match"], unlock.output
    assert "Password:" not in unlock.output, unlock.output
    assert sudo.status == 0 and sudo.screen == [SWIPE, "root"], sudo.screen
    assert sudo.prompts == 0 and sudo.results == ["verify-match"]


def test_the_abuse_starts_no_root_helper(locker, hostiles, mallory):
    """Connections that never bring a request, or bring a malformed one or one naming
    another machine, start no root process: the service closes or answers them itself."""
    svc = locker.localauthd
    mark = locker.syslog.mark()
    for kind in ("flood", "empty", "garbage", "rhost"):
        hostiles.start(kind, user=Nobody)
        hostiles.start(kind, user=mallory)
    seen = set()
    # Sampled while the abuse runs: no child of the service serves a request (the one
    # started ahead of the next request waits and is not counted).
    for _ in range(50):
        seen.update(svc.helpers())
        if any(p.poll() is not None for p in hostiles.procs):
            break
        locker.syslog.wait_for(lambda i, m: False, timeout=0.1)
    made = hostiles.stop()
    assert sum(made) > 0, made
    started = [m for m in locker.syslog.since(mark, "localauthd") if "): helper pid " in m]
    assert started == [] and not seen, (started[:5], seen)
