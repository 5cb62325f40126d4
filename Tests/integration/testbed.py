"""localauth test bed: a private system bus with the real fprintd and a virtual reader.

Run with /usr/bin/python3 (it has dbus, gi and dbusmock; the python3 first on PATH may not).

    from testbed import Bed
    with Bed() as bed:                       # dbus-daemon + polkitd + fprintd -t
        bed.enroll("alice", print_id="f1")   # fprintd-enroll, fed "SCAN f1" per stage
        subprocess.Popen(cmd, env=bed.env()) # something that claims and verifies ...
        assert bed.scan("f1") == "verify-match"

What runs (all started by this module, every PID recorded, only those PIDs stopped):

* ``dbus-daemon --nofork --config-file=DIR/system.conf --print-address=1`` (type ``system``,
  listening on ``unix:path=DIR/system_bus_socket``, allow-everything policy, no service
  activation). Not ``--fork``: a forked daemon is re-parented to PID 1, which on machines
  without an init never reaps it, and it would stay a zombie.
* polkit: ``polkit="real"`` (default) runs ``/usr/lib/polkit-1/polkitd --no-debug`` on that
  bus (root callers are authorised; the daemon drops to the ``polkitd`` user itself);
  ``"deny"`` runs dbusmock's polkitd template, which refuses every check; ``"allow"`` the
  same template with ``AllowUnknown(true)``; ``None`` no polkit at all. With
  ``polkit_rules=TEXT`` the real polkitd runs in a private mount namespace where a directory
  holding TEXT as its only rules file is bind-mounted over ``/etc/polkit-1/rules.d`` (the
  machine's rules are never touched; ``/usr/share/polkit-1/rules.d`` still applies);
  ``polkit_actions=[FILE, ...]`` adds those action files in that namespace: a directory
  holding copies of the machine's ``/usr/share/polkit-1/actions`` and them is bind-mounted
  over it (the product's own action, before it is installed).
* ``/usr/libexec/fprintd -t`` with ``STATE_DIRECTORY=DIR/state RUNTIME_DIRECTORY=DIR/run
  FP_DRIVERS_ALLOWLIST=virtual_device FP_VIRTUAL_DEVICE=DIR/virtdev.sock``.
  ``reader=False``: the allowlist names no driver, so fprintd runs with no device at all.
  ``fprintd=False``: no fprintd (the name ``net.reactivated.Fprint`` has no owner).

Daemons are started from one long-lived thread with PR_SET_PDEATHSIG=SIGKILL, so even if
the Python process is killed outright they do not outlive it (polkitd loses that setting
when it changes user, but exits when the bus goes). ``stop()`` runs from
``__exit__`` and from ``atexit``; it sends SIGCONT (a frozen daemon cannot die) and SIGTERM
to exactly the recorded PIDs, SIGKILL after 2 s, reaps them and removes DIR (``keep=True`` or
``LOCALAUTH_BED_KEEP=1`` keeps DIR, logs included: DIR/logs/*.log, fprintd with
``G_MESSAGES_DEBUG=all``).

Timing, measured on the 2-core Debian 12 machine (``/usr/bin/python3 testbed.py --measure``,
20 runs each, two sessions): start with the real polkitd 0.04-0.06 s median, 0.07 s max
(dbus-daemon, then polkitd and fprintd in parallel until both own their names and
GetDevices lists the reader); ``polkit="deny"`` 0.09-0.10 s (dbusmock is a Python
process); stop 0.004-0.015 s median, 0.04 s max. ``enroll()`` takes 0.026 s median.

The virtual reader, and how to feed it reliably (all of it observed against fprintd 1.94.2
and libfprint 1.94.5; each point is handled here, the PAM and sensor tests must not
re-invent it):

1. The socket ``DIR/virtdev.sock`` listens only while the device is open, i.e. while some
   client holds a ``Claim``. Before that it does not exist; after a ``Release`` the file
   stays but ``connect`` is refused. ``send()`` retries on ENOENT/ECONNREFUSED.
2. One command per connection, and the listener keeps only the newest connection: a second
   connection that arrives before the first was read silently drops the first command
   ("Error on old connection, ignoring" in the fprintd log); three commands written back
   to back were seen to lose the first. ``send()`` therefore waits for
   the device to close the connection (EOF), which it does right after it has queued and
   processed the command; only then is the next command sent. No newline: the bytes are
   the command.
3. A command that arrives while the device is open but no verify/enroll is running is
   queued, not lost: the next VerifyStart on the same claim consumes it at once (a stale
   scan "matches" a verify nobody has presented a finger to yet). Each open and each close
   of the device throws away one queued command with a warning. So never send before the
   reader waits: wait for ``finger-needed`` true.
4. ``finger-needed`` alone cannot tell two arms apart: after ``verify-retry-scan`` it goes
   false and true again within a millisecond, and after ``verify-no-match`` (done) it stays
   false until the client calls VerifyStart again. Polling can miss the blip, and
   fprintd's (gdbus-codegen) skeleton emits PropertiesChanged from an idle callback and
   drops a change that flipped back before it ran. What works every time (``inject()``): record the signals of
   the device path (a watcher thread with its own bus connection and GLib main context);
   after each command wait for its result signal (VerifyStatus or EnrollStatus); before the
   next command wait until, *after that result*, the reader was re-armed -- the result
   itself if it was not final (done=false: retry, enroll stage passed), else a
   ``VerifyFingerSelected`` signal (emitted by every VerifyStart) or a finger-needed=true
   signal or a restart of fprintd -- and a fresh ``Get`` of ``finger-needed`` is true.
   A ``Get`` issued after a result signal always sees the state after that result.
5. fprintd emits ``VerifyStatus``/``EnrollStatus`` as broadcast signals, so the bed sees
   the results that the product's helper sees; ``scan()`` returns the result name.
6. What each command gives during a verify (fprintd-verify and VerifyStatus agree):
   ``SCAN <enrolled id>`` verify-match; ``SCAN <other id>`` verify-no-match; ``RETRY 0..3``
   verify-retry-scan, -swipe-too-short, -finger-not-centered, -remove-and-retry (not done,
   the verify goes on); ``ERROR 5`` verify-disconnected; ``ERROR 7`` verify-no-match;
   every other ``ERROR n`` (0..11) verify-unknown-error (all done). During an enrollment a
   scan of the id gives enroll-stage-passed x4 then enroll-completed (5 stages).
7. fprintd does not end a verify by itself: without a scan it waits for ever (there is no
   "no command" timeout in this path). The client's timeout is what ends it.
8. ``SIGSTOP`` on fprintd: the bus still accepts calls to it and they only fail at the
   caller's own timeout (Gio: "Timeout was reached"; sd-bus/dbus-python: NoReply).
   Connecting to the reader's socket still succeeds (kernel backlog), so a command sent
   while frozen is acknowledged only after ``thaw_fprintd()``. A restarted fprintd serves
   the same device path and state directory; its first Claim re-creates the socket.
9. dbus-python proxies introspect their object asynchronously when made, and the first
   call waits for that: with fprintd frozen it then takes the default 25 s instead of the
   call's timeout. Make proxies with ``introspect=False`` in tests.
10. Print files are named by finger *number* (libfprint's FpFinger, left-thumb 1 ...
    right-index-finger 7 ... right-little-finger 10): ``print_file(user, finger)``.
    fprintd (called by root) accepts any user name, existing or not.

pypamtest holds the GIL for a whole PAM transaction, which starves threads in the same
process (including this module's watcher): inject from another process with
``bed.spawn_injector([...])`` (runs ``scripts/testbed inject``).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import queue
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Callable, Iterable, Optional

import gi

gi.require_version("Gio", "2.0")
gi.require_version("GLib", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

FPRINT_NAME = "net.reactivated.Fprint"
MANAGER_PATH = "/net/reactivated/Fprint/Manager"
MANAGER_IFACE = "net.reactivated.Fprint.Manager"
DEVICE_IFACE = "net.reactivated.Fprint.Device"
PROPS_IFACE = "org.freedesktop.DBus.Properties"
POLKIT_NAME = "org.freedesktop.PolicyKit1"
DEFAULT_DEVICE = "/net/reactivated/Fprint/Device/0"
DEFAULT_USER = "localauth-bed-user"   # fprintd (called by root) takes any user name

# fprintd's finger names; a print is stored in a file named by the finger's number
# (libfprint's FpFinger: left-thumb 1 ... right-index-finger 7 ... right-little-finger 10).
FINGERS = ("left-thumb", "left-index-finger", "left-middle-finger", "left-ring-finger",
           "left-little-finger", "right-thumb", "right-index-finger", "right-middle-finger",
           "right-ring-finger", "right-little-finger")

DBUS_DAEMON = "dbus-daemon"
POLKITD = "/usr/lib/polkit-1/polkitd"
FPRINTD = "/usr/libexec/fprintd"
PYTHON = "/usr/bin/python3"
REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "scripts" / "testbed"

# Results of a command that ends the current verify/enroll ("done" in the signal).
RESULT_SIGNALS = ("VerifyStatus", "EnrollStatus")

# Environment variables of a caller that must not leak into the daemons.
_SCRUB_ENV = ("DBUS_SESSION_BUS_ADDRESS", "NOTIFY_SOCKET", "FP_VIRTUAL_DEVICE",
              "FP_VIRTUAL_IMAGE", "FP_VIRTUAL_DEVICE_STORAGE", "FP_DRIVERS_ALLOWLIST",
              "FP_DEVICE_EMULATION", "LD_PRELOAD", "PAM_WRAPPER")


class BedError(RuntimeError):
    """Something in the bed did not come up or behave as expected."""


class DBusCallError(BedError):
    """A D-Bus call failed; ``name`` is the D-Bus error name (or None for local errors)."""

    def __init__(self, name: Optional[str], message: str):
        super().__init__(f"{name}: {message}" if name else message)
        self.name = name


# --------------------------------------------------------------------------------------
# Spawning: one long-lived thread forks every daemon, so PR_SET_PDEATHSIG (which fires when
# the *thread* that forked dies) only fires when the whole process goes away.

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl


def _child_setup() -> None:
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class _Spawner:
    def __init__(self) -> None:
        self._q: "queue.Queue" = queue.Queue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def _run(self) -> None:
        while True:
            args, kwargs, box, done = self._q.get()
            try:
                box.append(subprocess.Popen(args, preexec_fn=_child_setup, **kwargs))
            except BaseException as exc:  # handed back to the caller
                box.append(exc)
            done.set()

    def popen(self, args, **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="bed-spawner",
                                                daemon=True)
                self._thread.start()
        box: list = []
        done = threading.Event()
        self._q.put((args, kwargs, box, done))
        done.wait()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]


_spawner = _Spawner()
_live_beds: "weakref.WeakSet[Bed]" = weakref.WeakSet()


@atexit.register
def _stop_all_beds() -> None:
    for bed in list(_live_beds):
        with contextlib.suppress(Exception):
            bed.stop()


# --------------------------------------------------------------------------------------
# D-Bus helpers (Gio; every connection is a private one to the bed's bus).

def _connect(address: str) -> Gio.DBusConnection:
    flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
             | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
    return Gio.DBusConnection.new_for_address_sync(address, flags, None, None)


def _call(conn: Gio.DBusConnection, dest: str, path: str, iface: str, method: str,
          args: Optional[GLib.Variant] = None, timeout: float = 5.0):
    try:
        reply = conn.call_sync(dest, path, iface, method, args, None,
                               Gio.DBusCallFlags.NONE, int(timeout * 1000), None)
    except GLib.Error as exc:
        name = Gio.DBusError.get_remote_error(exc)
        if name:
            Gio.DBusError.strip_remote_error(exc)
        raise DBusCallError(name, exc.message) from None
    return reply.unpack() if reply is not None else ()


def _name_has_owner(conn: Gio.DBusConnection, name: str) -> bool:
    return _call(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                 "org.freedesktop.DBus", "NameHasOwner", GLib.Variant("(s)", (name,)))[0]


def _wait(cond: Callable[[], bool], timeout: float, what: str, interval: float = 0.005):
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.1f}s waiting for {what}")
        time.sleep(interval)


# --------------------------------------------------------------------------------------
# The reader: the virtual device's socket plus the device's D-Bus signals.

class Event:
    """One signal seen on the device path (or a change of fprintd's bus name owner)."""

    __slots__ = ("seq", "name", "args", "time")

    def __init__(self, seq: int, name: str, args: tuple):
        self.seq, self.name, self.args, self.time = seq, name, args, time.monotonic()

    def __repr__(self) -> str:
        return f"Event({self.seq}, {self.name}, {self.args})"


class Reader:
    """Feeds the virtual reader of a running bed. Needs only the bus address, the socket
    path and the device path, so it also works from another process (``scripts/testbed``).

    Injections are serialised; see the module docstring (point 4) for the rule used."""

    def __init__(self, address: str, sock_path: str,
                 device_path: str = DEFAULT_DEVICE, fprintd_log: Optional[Path] = None):
        self.address, self.sock_path, self.device_path = address, sock_path, device_path
        # fprintd's own debug log (the bed's): a second witness of a re-arm, read only
        # when the signals have not shown one for a while (see ``_armed_by_log``).
        self._fprintd_log = Path(fprintd_log) if fprintd_log else None
        self._log_mark = 0           # size of that log when the last command was sent
        self._cv = threading.Condition()
        self._events: list[Event] = []
        self._seq = itertools.count(1)
        self._inject_lock = threading.RLock()
        self._arm_after = 0          # seq after which a re-arm event is required (0: none)
        self.last_injected: Optional[Event] = None   # result of the last inject()
        self._ctx: Optional[GLib.MainContext] = None
        self._loop: Optional[GLib.MainLoop] = None
        self._conn: Optional[Gio.DBusConnection] = None
        self._thread: Optional[threading.Thread] = None
        self._start_watcher()

    # ---- watcher thread ------------------------------------------------------------
    def _start_watcher(self) -> None:
        ready = threading.Event()
        failure: list = []

        def run() -> None:
            ctx = GLib.MainContext()
            ctx.push_thread_default()
            try:
                conn = _connect(self.address)
                conn.signal_subscribe(None, None, None, self.device_path, None,
                                      Gio.DBusSignalFlags.NONE, self._on_signal)
                conn.signal_subscribe("org.freedesktop.DBus", "org.freedesktop.DBus",
                                      "NameOwnerChanged", "/org/freedesktop/DBus",
                                      FPRINT_NAME, Gio.DBusSignalFlags.NONE,
                                      self._on_signal)
                # A round trip after the AddMatch calls: every signal emitted after this
                # returns is delivered to us.
                _call(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                      "org.freedesktop.DBus", "GetId")
                self._ctx, self._conn = ctx, conn
                self._loop = GLib.MainLoop.new(ctx, False)
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            self._loop.run()
            ctx.pop_thread_default()

        self._thread = threading.Thread(target=run, name="bed-watcher", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise BedError(f"cannot watch the bus {self.address}: {failure[0]}")

    def _on_signal(self, _conn, sender, path, iface, member, params) -> None:
        args = params.unpack()
        if member == "PropertiesChanged":
            changed = args[1]
            if "finger-needed" not in changed:
                return
            name, args = "finger-needed", (bool(changed["finger-needed"]),)
        elif member == "NameOwnerChanged":
            name, args = "fprintd-owner", (args[2],)
        else:
            name = member
        with self._cv:
            self._events.append(Event(next(self._seq), name, tuple(args)))
            self._cv.notify_all()

    def close(self) -> None:
        if self._loop is not None:
            loop = self._loop
            self._ctx.invoke_full(GLib.PRIORITY_DEFAULT, lambda *a: loop.quit() or False)
            self._thread.join(5)
            self._loop = None
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close_sync(None)
            self._conn = None

    # ---- events --------------------------------------------------------------------
    def settle(self, timeout: float = 5.0) -> None:
        """Return once every signal that the bus had sent the watcher before this call is
        recorded. The watcher's thread can lag behind the bus on a loaded machine (a test
        that read ``events()`` 30 ms after fprintd's last signal once got none). A round
        trip to the bus daemon on the watcher's connection comes back behind every signal
        routed to it earlier, and GDBus has then queued their callbacks on the watcher's
        context; a low-priority callback queued after them runs after them."""
        ctx, conn = self._ctx, self._conn
        if ctx is None or conn is None or self._loop is None:
            return
        try:
            _call(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                  "org.freedesktop.DBus", "GetId", timeout=timeout)
        except DBusCallError:
            return                    # the bus is gone: nothing more can arrive
        ran = threading.Event()
        source = GLib.Idle(priority=GLib.PRIORITY_LOW)
        source.set_callback(lambda *_: ran.set() or False)
        source.attach(ctx)
        if not ran.wait(timeout):
            raise TimeoutError(f"the bed's watcher did not catch up within {timeout:.1f}s")

    def mark(self) -> int:
        """The sequence number of the newest event; pass it as ``since`` later. Signals
        sent before the call are all older than the mark (``settle``)."""
        self.settle()
        with self._cv:
            return self._events[-1].seq if self._events else 0

    def events(self, since: int = 0) -> list[Event]:
        """The events newer than ``since``, every signal sent before the call included."""
        self.settle()
        with self._cv:
            return [e for e in self._events if e.seq > since]

    def wait_event(self, names: Iterable[str] | str, since: int = 0,
                   timeout: float = 10.0, where: Callable[[Event], bool] = None) -> Event:
        """Wait for an event named in ``names`` newer than ``since``; raises TimeoutError."""
        names = (names,) if isinstance(names, str) else tuple(names)
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                for e in self._events:
                    if e.seq > since and e.name in names and (where is None or where(e)):
                        return e
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {'/'.join(names)} within {timeout:.1f}s")
                self._cv.wait(left)

    def last_result(self) -> Optional[Event]:
        with self._cv:
            for e in reversed(self._events):
                if e.name in RESULT_SIGNALS:
                    return e
        return None

    # ---- D-Bus state ---------------------------------------------------------------
    def finger_needed(self) -> bool:
        """A fresh Get of the device property ``finger-needed`` (False if unreachable)."""
        try:
            return bool(_call(self._conn, FPRINT_NAME, self.device_path, PROPS_IFACE, "Get",
                              GLib.Variant("(ss)", (DEVICE_IFACE, "finger-needed")),
                              timeout=1.0)[0])
        except DBusCallError:
            return False

    def wait_finger_needed(self, timeout: float = 10.0, value: bool = True) -> bool:
        """Poll ``finger-needed`` until it equals ``value``; False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if self.finger_needed() == value:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    # ---- the socket ----------------------------------------------------------------
    def send(self, command: str, timeout: float = 10.0) -> str:
        """Write one raw command to the virtual device and wait until the device has read
        it (it closes the connection then). Retries while the socket is missing or refuses
        connections (device not open). Returns what the device wrote back (LIST only)."""
        deadline = time.monotonic() + timeout
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(max(0.05, deadline - time.monotonic()))
                try:
                    s.connect(self.sock_path)
                except (FileNotFoundError, ConnectionRefusedError):
                    if time.monotonic() >= deadline:
                        raise TimeoutError(
                            f"reader socket {self.sock_path} refused {command!r} for "
                            f"{timeout:.1f}s (is the device claimed?)") from None
                    time.sleep(0.01)
                    continue
                s.sendall(command.encode())
                reply = b""
                try:
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            return reply.decode(errors="replace")
                        reply += chunk
                except socket.timeout:
                    raise TimeoutError(f"the reader did not take {command!r} within "
                                       f"{timeout:.1f}s (fprintd frozen?)") from None
                except ConnectionResetError:
                    return reply.decode(errors="replace")
            finally:
                s.close()

    # ---- injections ----------------------------------------------------------------
    def _armed(self) -> bool:
        if self._arm_after:
            with self._cv:
                rearmed = any(
                    e.seq > self._arm_after and (
                        e.name in ("VerifyFingerSelected", "fprintd-owner")
                        or (e.name == "finger-needed" and e.args[0])
                        or (e.name in RESULT_SIGNALS and not e.args[1]))
                    for e in self._events)
            if not rearmed:
                return False
        return self.finger_needed()

    # fprintd's debug lines for a new verify or identify, and for the finger-needed flag.
    _LOG_START = ("start verification device", "start identification device")
    _LOG_NEEDED = "Finger needed "

    def _log_size(self) -> int:
        try:
            return self._fprintd_log.stat().st_size if self._fprintd_log else 0
        except OSError:
            return 0

    def _armed_by_log(self) -> bool:
        """Whether fprintd's own log shows, since the last command was sent, a new verify
        (or identify) that is waiting for a finger and has consumed no command yet.

        Used only after the signals have shown no re-arm for a while: once in a full CI
        run (the machine under load) the watcher saw no re-arm signal for 15 s while
        fprintd's log showed the helper's VerifyStart and "Finger needed 1" 17 ms after
        the result. The log is fprintd's word on its own state, written unbuffered."""
        if self._fprintd_log is None or not self._arm_after:
            return False
        try:
            with open(self._fprintd_log, "rb") as f:
                f.seek(self._log_mark)
                text = f.read().decode(errors="replace")
        except OSError:
            return False
        starts = [text.rfind(s) for s in self._LOG_START]
        start = max(starts)
        if start < 0:
            return False
        after = text[start:]
        if "Received command" in after:
            return False
        needed = after.rfind(self._LOG_NEEDED)
        return needed >= 0 and after[needed + len(self._LOG_NEEDED):].startswith("1")

    def _arm_report(self) -> str:
        """What the watcher saw since the last result, for a timeout's message."""
        with self._cv:
            seen = [e for e in self._events if e.seq > self._arm_after]
        return (f"signals since the last result (seq {self._arm_after}): {seen[-8:]}; "
                f"finger-needed now {self.finger_needed()}")

    def wait_armed(self, timeout: float = 10.0,
                   give_up: Optional[Callable[[], Optional[str]]] = None) -> None:
        """Wait until the reader waits for a finger that no earlier injection has fed.
        ``give_up`` is polled meanwhile; a string it returns is raised as BedError.
        After 2 s without a re-arm signal, fprintd's log is asked as well."""
        started = time.monotonic()
        deadline = started + timeout
        while not self._armed():
            if time.monotonic() - started > 2.0 and self._armed_by_log():
                return
            reason = give_up() if give_up is not None else None
            if reason:
                raise BedError(reason)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the reader did not wait for a finger within "
                                   f"{timeout:.1f}s ({self._arm_report()})")
            with self._cv:           # woken by any signal, else poll every 20 ms
                self._cv.wait(min(left, 0.02))

    def inject(self, command: str, timeout: float = 10.0, wait_result: bool = True,
               give_up: Optional[Callable[[], Optional[str]]] = None) -> Optional[str]:
        """Wait until the reader waits for a finger, send ``command`` (``SCAN id``,
        ``RETRY n``, ``ERROR n``), and return the result signal it caused
        (``verify-match``, ``enroll-stage-passed``, ...), or None if
        ``wait_result`` is false. Raises TimeoutError if any step takes longer than
        ``timeout``."""
        with self._inject_lock:
            self.wait_armed(timeout, give_up)
            before = self.mark()
            self._log_mark = self._log_size()
            self.send(command, timeout)
            self._arm_after = before
            if not wait_result:
                return None
            ev = self.wait_event(RESULT_SIGNALS, since=before, timeout=timeout)
            # A final result (done) needs a new arm after it; a non-final one (retry,
            # enroll stage) is itself the re-arm: the action goes on.
            self._arm_after = ev.seq if ev.args[1] else ev.seq - 1
            self.last_injected = ev
            return ev.args[0]

    def inject_sequence(self, commands: Iterable[str], timeout: float = 10.0) -> list:
        """``inject`` each command in turn (each waits for the reader to re-arm)."""
        return [self.inject(c, timeout) for c in commands]

    def scan(self, print_id: str, timeout: float = 10.0, wait_result: bool = True):
        return self.inject(f"SCAN {print_id}", timeout, wait_result)

    def retry(self, code: int = 0, timeout: float = 10.0, wait_result: bool = True):
        return self.inject(f"RETRY {int(code)}", timeout, wait_result)

    def error(self, code: int = 0, timeout: float = 10.0, wait_result: bool = True):
        return self.inject(f"ERROR {int(code)}", timeout, wait_result)

    def inject_async(self, commands: Iterable[str], timeout: float = 10.0) -> "Injection":
        return Injection(self, list(commands), timeout)


class Injection:
    """A sequence of injections running in a thread. ``wait()`` returns the list of result
    names or re-raises what went wrong in the thread."""

    def __init__(self, reader: Reader, commands: list, timeout: float):
        self.commands, self.results, self.exception = commands, [], None
        self._thread = threading.Thread(target=self._run, args=(reader, timeout),
                                        name="bed-injection", daemon=True)
        self._thread.start()

    def _run(self, reader: Reader, timeout: float) -> None:
        try:
            for c in self.commands:
                self.results.append(reader.inject(c, timeout))
        except BaseException as exc:
            self.exception = exc

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, timeout: Optional[float] = None) -> list:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"injection {self.commands} still running")
        if self.exception is not None:
            raise self.exception
        return self.results


# --------------------------------------------------------------------------------------

_SYSTEM_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
  </policy>
</busconfig>
"""


class NewClients:
    """Times (time.monotonic) at which clients joined the bus at `address`: the first thing
    a client does is Hello, which the bus announces as a new unique name. Clients that
    joined before this watcher was ready are not counted. ``exclude_pid``: a process whose
    own connections are not counted (a service of the test's, which connects again after a
    connection that timed out on a loaded machine: its joins say nothing of its helpers)."""

    def __init__(self, address: str, exclude_pid: Optional[int] = None):
        self.times: list[float] = []
        self._exclude_pid = exclude_pid
        self._lock = threading.Lock()
        ready = threading.Event()
        failure: list = []

        def run() -> None:
            ctx = GLib.MainContext()
            ctx.push_thread_default()
            try:
                self._conn = _connect(address)
                self._conn.signal_subscribe("org.freedesktop.DBus", "org.freedesktop.DBus",
                                            "NameOwnerChanged", "/org/freedesktop/DBus", None,
                                            Gio.DBusSignalFlags.NONE, self._on_signal)
                # A round trip after the AddMatch: every client joining later is seen.
                _call(self._conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                      "org.freedesktop.DBus", "GetId")
                self._ctx, self._loop = ctx, GLib.MainLoop.new(ctx, False)
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            self._loop.run()
            ctx.pop_thread_default()

        self._thread = threading.Thread(target=run, name="bed-clients", daemon=True)
        self._thread.start()
        ready.wait(5)
        if failure:
            raise BedError(f"cannot watch the bus {address}: {failure[0]}")

    def _on_signal(self, _conn, _sender, _path, _iface, _member, params) -> None:
        name, old, new = params.unpack()
        if name.startswith(":") and not old and new:
            if self._exclude_pid is not None and self._pid_of(name) == self._exclude_pid:
                return
            with self._lock:
                self.times.append(time.monotonic())

    def _pid_of(self, name: str) -> Optional[int]:
        """The joining client's pid as the bus daemon knows it; None when it is gone already
        (then it is counted: only a known pid is left out)."""
        try:
            reply = self._conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                         "GetConnectionUnixProcessID", GLib.Variant("(s)", (name,)),
                                         GLib.VariantType("(u)"), Gio.DBusCallFlags.NONE, 5000, None)
        except GLib.Error:
            return None
        return reply.unpack()[0]

    def first_after(self, t: float) -> Optional[float]:
        with self._lock:
            later = [x for x in self.times if x >= t]
        return min(later) if later else None

    def close(self) -> None:
        loop = self._loop
        self._ctx.invoke_full(GLib.PRIORITY_DEFAULT, lambda *a: loop.quit() or False)
        self._thread.join(5)
        with contextlib.suppress(Exception):
            self._conn.close_sync(None)


class BedClient:
    """What needs only a running bed's addresses: fprintd calls, enrollment and the reader.
    ``Bed`` is one; inside ``scripts/testbed run`` a command gets one with
    ``BedClient.from_env()`` (LOCALAUTH_BED_ADDRESS, LOCALAUTH_BED_SOCK, ...)."""

    def __init__(self, address: str, sock_path, device_path: str = DEFAULT_DEVICE,
                 state_dir=None):
        self._address, self._sock_path = address, Path(sock_path)
        self._state_dir = Path(state_dir) if state_dir else None
        self.device_path = device_path
        self._conn: Optional[Gio.DBusConnection] = _connect(address)
        self._reader: Optional[Reader] = Reader(address, str(sock_path), device_path)

    @classmethod
    def from_env(cls, environ: Optional[dict] = None) -> "BedClient":
        environ = os.environ if environ is None else environ
        if "LOCALAUTH_BED_ADDRESS" not in environ:
            raise BedError("LOCALAUTH_BED_ADDRESS is not set: run inside `scripts/testbed run`")
        return cls(environ["LOCALAUTH_BED_ADDRESS"], environ["LOCALAUTH_BED_SOCK"],
                   environ.get("LOCALAUTH_BED_DEVICE", DEFAULT_DEVICE),
                   environ.get("LOCALAUTH_BED_STATE"))

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close_sync(None)
            self._conn = None

    @property
    def address(self) -> str:
        """The bus address, ``unix:path=...``."""
        return self._address

    @property
    def state_dir(self) -> Optional[Path]:
        """fprintd's STATE_DIRECTORY: prints are in <state>/<user>/<driver>/<dev-id>/<finger>."""
        return self._state_dir

    @property
    def sock_path(self) -> Path:
        """The virtual reader's socket (FP_VIRTUAL_DEVICE)."""
        return self._sock_path

    def print_file(self, user: str, finger: str = "right-index-finger",
                   driver: str = "virtual_device", device_id: str = "0") -> Path:
        """Where fprintd stores a print: <state>/<user>/<driver>/<device-id>/<N>, N being
        the finger's number (1-10), not its name."""
        return self.state_dir / user / driver / device_id / str(FINGERS.index(finger) + 1)

    def _env_vars(self) -> dict:
        env = {
            "DBUS_SYSTEM_BUS_ADDRESS": self.address,
            "LOCALAUTH_BED_ADDRESS": self.address,
            "LOCALAUTH_BED_SOCK": str(self.sock_path),
            "LOCALAUTH_BED_DEVICE": self.device_path or DEFAULT_DEVICE,
        }
        if self.state_dir is not None:
            env["LOCALAUTH_BED_STATE"] = str(self.state_dir)
        return env

    def env(self, extra: Optional[dict] = None, base: Optional[dict] = None) -> dict:
        """Environment for a subprocess that should use this bed's bus: ``base`` (default
        os.environ) plus DBUS_SYSTEM_BUS_ADDRESS and the LOCALAUTH_BED_* variables."""
        env = dict(os.environ if base is None else base)
        env.update(self._env_vars())
        if extra:
            env.update(extra)
        return env

    # ---- D-Bus ---------------------------------------------------------------------
    def connection(self) -> Gio.DBusConnection:
        """A new private connection to the bed's bus (caller closes it)."""
        return _connect(self.address)

    def call(self, method: str, *args, signature: str = "", path: Optional[str] = None,
             iface: str = DEVICE_IFACE, timeout: float = 5.0,
             conn: Optional[Gio.DBusConnection] = None):
        """Call fprintd (the device by default) and return the unpacked reply tuple.
        Raises DBusCallError with the D-Bus error name."""
        params = GLib.Variant(f"({signature})", args) if signature else None
        return _call(conn or self._conn, FPRINT_NAME, path or self.device_path, iface,
                     method, params, timeout)

    def devices(self) -> list:
        """Manager.GetDevices()."""
        return list(self.call("GetDevices", path=MANAGER_PATH, iface=MANAGER_IFACE)[0])

    def device_property(self, name: str):
        return self.call("Get", DEVICE_IFACE, name, signature="ss", iface=PROPS_IFACE)[0]

    def list(self, user: str) -> list:
        """ListEnrolledFingers(user); [] when fprintd says NoEnrolledPrints."""
        try:
            return list(self.call("ListEnrolledFingers", user, signature="s")[0])
        except DBusCallError as exc:
            if exc.name == "net.reactivated.Fprint.Error.NoEnrolledPrints":
                return []
            raise

    def delete(self, user: str, finger: Optional[str] = None) -> None:
        """Delete all of ``user``'s prints, or only ``finger``, through fprintd."""
        conn = self.connection()
        try:
            self.call("Claim", user, signature="s", conn=conn)
            try:
                if finger is None:
                    self.call("DeleteEnrolledFingers2", conn=conn)
                else:
                    self.call("DeleteEnrolledFinger", finger, signature="s", conn=conn)
            finally:
                with contextlib.suppress(DBusCallError):
                    self.call("Release", conn=conn)
        finally:
            conn.close_sync(None)

    def enroll(self, user: str, finger: str = "right-index-finger", print_id: str = "f1",
               timeout: float = 15.0) -> list:
        """Enroll ``finger`` of ``user`` with the virtual print ``print_id``, by running
        ``fprintd-enroll -f FINGER USER`` on the bed and feeding ``SCAN print_id`` for
        every stage. Returns the EnrollStatus results; raises BedError unless the
        enrollment completed and fprintd lists the finger."""
        proc = subprocess.Popen(["fprintd-enroll", "-f", finger, user], env=self.env(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        results = []

        def exited() -> Optional[str]:
            if proc.poll() is not None:
                return f"fprintd-enroll exited with {proc.returncode}"
            return None

        try:
            while True:
                results.append(self.reader.inject(f"SCAN {print_id}", timeout,
                                                  give_up=exited))
                if self.reader.last_injected.args[1]:   # done
                    break
            out, _ = proc.communicate(timeout=timeout)
        except Exception as exc:
            proc.kill()
            out, _ = proc.communicate()
            raise BedError(f"enrollment of {user}/{finger} failed ({exc}): {results} "
                           f"{out.decode(errors='replace')}") from exc
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
        if results[-1] != "enroll-completed" or proc.returncode != 0:
            raise BedError(f"enrollment of {user}/{finger} failed: {results} "
                           f"rc={proc.returncode} {out.decode(errors='replace')}")
        if finger not in self.list(user):
            raise BedError(f"fprintd does not list {finger} for {user} after enrolling")
        return results

    @contextlib.contextmanager
    def hold_claim(self, user: str = "root"):
        """Claim the device from a separate bus connection (another client), so the reader
        is busy (AlreadyInUse for everyone else); released on exit."""
        conn = self.connection()
        try:
            self.call("Claim", user, signature="s", conn=conn)
            try:
                yield conn
            finally:
                with contextlib.suppress(DBusCallError):
                    self.call("Release", conn=conn)
        finally:
            conn.close_sync(None)

    # ---- the reader ----------------------------------------------------------------
    @property
    def reader(self) -> Reader:
        if self._reader is None:
            raise BedError("no reader: fprintd is not running in this bed")
        return self._reader

    def wait_finger_needed(self, timeout: float = 10.0, value: bool = True) -> bool:
        """Poll the device property ``finger-needed`` until it equals ``value``."""
        return self.reader.wait_finger_needed(timeout, value)

    def send(self, command: str, timeout: float = 10.0) -> str:
        """Write a raw command to the reader's socket now (no waiting for the reader)."""
        return self.reader.send(command, timeout)

    def scan(self, print_id: str, timeout: float = 10.0, wait_result: bool = True):
        """Once the reader waits for a finger, present print ``print_id``; returns the
        result signal (``verify-match``, ``verify-no-match``, ``enroll-stage-passed``...)."""
        return self.reader.scan(print_id, timeout, wait_result)

    def retry(self, code: int = 0, timeout: float = 10.0, wait_result: bool = True):
        """Once the reader waits, report retry ``code`` (0 retry-scan, 1 swipe-too-short,
        2 finger-not-centered, 3 remove-and-retry)."""
        return self.reader.retry(code, timeout, wait_result)

    def error(self, code: int = 0, timeout: float = 10.0, wait_result: bool = True):
        """Once the reader waits, fail the action with libfprint device error ``code``."""
        return self.reader.error(code, timeout, wait_result)

    def inject_sequence(self, commands: Iterable[str], timeout: float = 10.0) -> list:
        """Inject each command once the reader has re-armed after the previous one."""
        return self.reader.inject_sequence(commands, timeout)

    def inject_async(self, commands: Iterable[str], timeout: float = 10.0) -> Injection:
        """``inject_sequence`` in a background thread; ``.wait()`` gives the results."""
        return self.reader.inject_async(commands, timeout)

    def scan_when_ready(self, print_id: str, timeout: float = 10.0) -> Injection:
        """Present ``print_id`` from a background thread once the reader waits."""
        return self.inject_async([f"SCAN {print_id}"], timeout)

    def spawn_injector(self, commands: Iterable[str], timeout: float = 10.0,
                       **popen_kwargs) -> subprocess.Popen:
        """``scripts/testbed inject`` in a separate process (for callers that hold the
        GIL, such as pypamtest). It prints one result per line; exit status 0 when all
        commands got a result."""
        argv = [PYTHON, str(CLI), "inject", "--timeout", str(timeout), *commands]
        popen_kwargs.setdefault("stdout", subprocess.PIPE)
        popen_kwargs.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen(argv, env=self.env(), stdin=subprocess.DEVNULL,
                                **popen_kwargs)

    def mark(self) -> int:
        return self.reader.mark()

    def events(self, since: int = 0) -> list:
        """Signals seen on the device path: finger-needed, VerifyStatus, EnrollStatus,
        VerifyFingerSelected, fprintd-owner (restarts)."""
        return self.reader.events(since)

    def wait_event(self, names, since: int = 0, timeout: float = 10.0, where=None) -> Event:
        return self.reader.wait_event(names, since, timeout, where)


class Bed(BedClient):
    """A private system bus with polkit and the real fprintd (see the module docstring).

    ``Bed(reader=True, fprintd=True, polkit="real", polkit_rules=None, polkit_actions=None,
    keep=False, start=True)``; use as a context manager, or call ``stop()``."""

    def __init__(self, reader: bool = True, fprintd: bool = True,
                 polkit: Optional[str] = "real", keep: Optional[bool] = None,
                 start: bool = True, startup_timeout: float = 60.0,
                 polkit_rules: Optional[str] = None, polkit_actions: Optional[list] = None):
        if polkit not in ("real", "deny", "allow", None):
            raise ValueError(f"polkit must be 'real', 'deny', 'allow' or None: {polkit!r}")
        if polkit_rules is not None and polkit != "real":
            raise ValueError("polkit_rules needs polkit='real'")
        if polkit_actions and polkit_rules is None:
            raise ValueError("polkit_actions needs polkit_rules (polkitd's own namespace)")
        self.reader_present, self.fprintd_wanted, self.polkit_mode = reader, fprintd, polkit
        self.polkit_rules = polkit_rules
        self.polkit_actions = [Path(a) for a in polkit_actions or []]
        self.keep = keep if keep is not None else os.environ.get("LOCALAUTH_BED_KEEP") == "1"
        # A bound on a daemon that is alive but slow to come up (an exit fails at once):
        # polkitd, whose JavaScript engine starts first, took over 10 s to own its name
        # beside a Swift build and a guest on 2 cores; idle it takes well under one.
        self.startup_timeout = startup_timeout
        self.dir: Optional[Path] = None
        self._address = self._sock_path = self._state_dir = None
        self.device_path: Optional[str] = None
        self._procs: dict[str, subprocess.Popen] = {}
        self._frozen = False
        self._conn: Optional[Gio.DBusConnection] = None
        self._reader: Optional[Reader] = None
        self._stopped = False
        if start:
            self.start()

    # ---- paths and environment -----------------------------------------------------
    @property
    def run_dir(self) -> Path:
        return self.dir / "run"

    @property
    def pids(self) -> dict:
        """PIDs of the running daemons by role: dbus, polkit, fprintd."""
        return {k: p.pid for k, p in self._procs.items() if p.poll() is None}

    def log_path(self, role: str) -> Path:
        return self.dir / "logs" / f"{role}.log"

    def log(self, role: str = "fprintd") -> str:
        with contextlib.suppress(OSError):
            return self.log_path(role).read_text(errors="replace")
        return ""

    def polkit_mock(self, method: str, args: Optional[GLib.Variant] = None):
        """Call the dbusmock polkit (modes "deny"/"allow"): AllowUnknown(b), SetAllowed(as),
        SetDelay(d), SimulateHang(b), ReleaseHangingCalls()."""
        if self.polkit_mode not in ("deny", "allow"):
            raise BedError("polkit_mock needs polkit='deny' or 'allow'")
        return _call(self._conn, POLKIT_NAME, "/org/freedesktop/PolicyKit1/Authority",
                     "org.freedesktop.DBus.Mock", method, args)

    def _env_vars(self) -> dict:
        env = super()._env_vars()
        env["LOCALAUTH_BED_DIR"] = str(self.dir)
        if "fprintd" in self.pids:
            env["LOCALAUTH_BED_FPRINTD_PID"] = str(self.pids["fprintd"])
        return env

    def _daemon_env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in _SCRUB_ENV}
        env["DBUS_SYSTEM_BUS_ADDRESS"] = self.address
        env.update(extra)
        return env

    # ---- lifecycle -----------------------------------------------------------------
    def __enter__(self) -> "Bed":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "Bed":
        base = None
        # AF_UNIX paths are limited to 107 bytes; fall back to /tmp for a long TMPDIR.
        if len(tempfile.gettempdir()) > 60:
            base = "/tmp"
        self.dir = Path(tempfile.mkdtemp(prefix="localauth-bed-", dir=base))
        self._address = f"unix:path={self.dir / 'system_bus_socket'}"
        self._sock_path = self.dir / "virtdev.sock"
        self._state_dir = self.dir / "state"
        _live_beds.add(self)
        try:
            # polkitd drops to its own user and must reach the bus socket, as must
            # test users (sudo tests); the prints stay root-only like /var/lib/fprint.
            self.dir.chmod(0o755)
            for sub, mode in (("state", 0o700), ("run", 0o755), ("logs", 0o755)):
                (self.dir / sub).mkdir(mode)
            self._start_bus()
            self._conn = _connect(self.address)
            if self.polkit_mode:
                self._spawn_polkit()
            if self.fprintd_wanted:
                self._spawn_fprintd()
            if self.polkit_mode:
                self._wait_name(POLKIT_NAME, "polkit")
                if self.polkit_mode == "allow":
                    self.polkit_mock("AllowUnknown", GLib.Variant("(b)", (True,)))
            if self.fprintd_wanted:
                self._wait_fprintd_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, role: str, argv: list, env: dict, stdout=None) -> subprocess.Popen:
        log = open(self.log_path(role), "ab")
        try:
            proc = _spawner.popen(argv, env=env, stdin=subprocess.DEVNULL,
                                  stdout=stdout if stdout is not None else log,
                                  stderr=log, start_new_session=True, close_fds=True)
        finally:
            log.close()
        self._procs[role] = proc
        return proc

    def _start_bus(self) -> None:
        conf = self.dir / "system.conf"
        conf.write_text(_SYSTEM_CONF.format(socket=self.dir / "system_bus_socket"))
        proc = self._spawn("dbus", [DBUS_DAEMON, "--nofork", f"--config-file={conf}",
                                    "--print-address=1"],
                           self._daemon_env(), stdout=subprocess.PIPE)
        # The address is printed once the daemon listens.
        ready, _, _ = select.select([proc.stdout], [], [], self.startup_timeout)
        line = proc.stdout.readline().decode().strip() if ready else ""
        proc.stdout.close()
        if not line.startswith("unix:"):
            raise BedError(f"dbus-daemon did not start: {self.log('dbus')}")

    def _spawn_polkit(self) -> None:
        if self.polkit_mode == "real" and self.polkit_rules is not None:
            rules = self.dir / "polkit-rules"
            rules.mkdir(mode=0o755, exist_ok=True)      # (again: restart_polkit)
            (rules / "10-localauth-test.rules").write_text(self.polkit_rules)
            (rules / "10-localauth-test.rules").chmod(0o644)
            actions = self.dir / "polkit-actions"
            actions.mkdir(mode=0o755, exist_ok=True)
            for source in [*Path("/usr/share/polkit-1/actions").glob("*.policy"), *self.polkit_actions]:
                shutil.copy(source, actions / source.name)
                (actions / source.name).chmod(0o644)
            # unshare execs the shell, which execs polkitd: the recorded PID is polkitd's.
            argv = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                    'mount --bind "$1" /etc/polkit-1/rules.d && mount --bind "$2" /usr/share/polkit-1/actions'
                    ' && exec "$3" --no-debug',
                    "sh", str(rules), str(actions), POLKITD]
        elif self.polkit_mode == "real":
            argv = [POLKITD, "--no-debug"]
        else:
            argv = [PYTHON, "-m", "dbusmock", "--system", "-t", "polkitd"]
        self._spawn("polkit", argv, self._daemon_env())

    def _spawn_fprintd(self) -> None:
        if self.reader_present:
            fp = {"FP_DRIVERS_ALLOWLIST": "virtual_device",
                  "FP_VIRTUAL_DEVICE": str(self.sock_path)}
        else:
            fp = {"FP_DRIVERS_ALLOWLIST": "localauth_no_such_driver"}
        env = self._daemon_env(STATE_DIRECTORY=str(self.state_dir),
                               RUNTIME_DIRECTORY=str(self.run_dir),
                               G_MESSAGES_DEBUG="all", **fp)
        self._spawn("fprintd", [FPRINTD, "-t"], env)

    def _wait_name(self, name: str, role: str) -> None:
        proc = self._procs[role]

        def owned() -> bool:
            if proc.poll() is not None:
                raise BedError(f"{role} exited with {proc.returncode}: {self.log(role)[-2000:]}")
            return _name_has_owner(self._conn, name)

        _wait(owned, self.startup_timeout, f"{role} to own {name}")

    def _wait_fprintd_ready(self) -> None:
        self._wait_name(FPRINT_NAME, "fprintd")
        if self.reader_present:
            _wait(lambda: bool(self.devices()), self.startup_timeout, "fprintd's reader")
            self.device_path = self.devices()[0]
        if self._reader is None:
            self._reader = Reader(self.address, str(self.sock_path),
                                  self.device_path or DEFAULT_DEVICE,
                                  fprintd_log=self.log_path("fprintd"))

    def stop(self) -> None:
        """Stop exactly the recorded daemons (thaw, SIGTERM, SIGKILL after 2 s), reap
        them and remove the directory. Safe to call more than once."""
        if self._stopped:
            return
        self._stopped = True
        # Daemons first (a frozen bus would make closing our connections hang), then
        # our connections and the watcher thread.
        _terminate(list(self._procs.values()))
        self.close()
        _live_beds.discard(self)
        if self.dir is not None and not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- fprintd process control ---------------------------------------------------
    def _fprintd(self) -> subprocess.Popen:
        proc = self._procs.get("fprintd")
        if proc is None or proc.poll() is not None:
            raise BedError("fprintd is not running")
        return proc

    def freeze_fprintd(self) -> None:
        """SIGSTOP fprintd; returns once the kernel shows it stopped."""
        proc = self._fprintd()
        os.kill(proc.pid, signal.SIGSTOP)
        self._frozen = True
        _wait(lambda: _proc_state(proc.pid) in ("T", "t"), 5, "fprintd to stop")

    def thaw_fprintd(self) -> None:
        """SIGCONT fprintd; returns once it runs again."""
        proc = self._fprintd()
        os.kill(proc.pid, signal.SIGCONT)
        self._frozen = False
        _wait(lambda: _proc_state(proc.pid) not in ("T", "t"), 5, "fprintd to continue")

    def kill_fprintd(self, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` (SIGKILL: a crash) to fprintd, reap it, and wait until its bus name
        is gone. Returns its exit status."""
        proc = self._fprintd()
        if self._frozen and sig not in (signal.SIGKILL, signal.SIGCONT):
            os.kill(proc.pid, signal.SIGCONT)
        os.kill(proc.pid, sig)
        rc = proc.wait(5)
        self._frozen = False
        _wait(lambda: not _name_has_owner(self._conn, FPRINT_NAME), 5,
              "fprintd's name to vanish")
        return rc

    def start_fprintd(self) -> None:
        """Start fprintd (again) and wait until it serves its reader."""
        proc = self._procs.get("fprintd")
        if proc is not None and proc.poll() is None:
            raise BedError("fprintd is already running")
        self.fprintd_wanted = True
        self._spawn_fprintd()
        self._wait_fprintd_ready()

    def restart_polkit(self) -> None:
        """Stop polkitd (SIGTERM), wait until its name is gone, and start a new one as the
        bed started the first (a new unique name for org.freedesktop.PolicyKit1)."""
        proc = self._procs["polkit"]
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(10)
        _wait(lambda: not _name_has_owner(self._conn, POLKIT_NAME), 5, "polkitd's name to vanish")
        self._spawn_polkit()
        self._wait_name(POLKIT_NAME, "polkit")

    def restart_fprintd(self) -> None:
        """Stop fprintd (SIGTERM) and start a new one on the same state directory."""
        if self._procs.get("fprintd") is not None and self._procs["fprintd"].poll() is None:
            self.kill_fprintd(signal.SIGTERM)
        self.start_fprintd()


def _proc_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


def _terminate(procs: list, grace: float = 2.0) -> None:
    """SIGCONT + SIGTERM to each still-running process, SIGKILL after ``grace``; reap."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGCONT)
            os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in live:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
            p.wait()


# --------------------------------------------------------------------------------------

def _measure(runs: int = 20) -> None:
    for mode in ("real", "deny"):
        starts, stops = [], []
        for _ in range(runs):
            t0 = time.monotonic()
            bed = Bed(polkit=mode)
            t1 = time.monotonic()
            bed.stop()
            t2 = time.monotonic()
            starts.append(t1 - t0)
            stops.append(t2 - t1)
        starts.sort()
        stops.sort()
        print(f"polkit={mode}: start median {starts[runs // 2]:.3f}s max {starts[-1]:.3f}s; "
              f"stop median {stops[runs // 2]:.3f}s max {stops[-1]:.3f}s")


if __name__ == "__main__":
    if sys.argv[1:] == ["--measure"]:
        _measure()
    else:
        print(__doc__)
