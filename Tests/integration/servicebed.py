"""What the tests of callers that are not root need: the product installed with a
localauthd of the test's own, a syslog that the test can read, and a private mount
namespace to run things in.

Run with /usr/bin/python3, as root. Nothing on the machine is edited:

* ``ServiceInstallation()``: the module, the helper and localauthd installed by
  ``scripts/install --prefix`` into a temporary prefix under /var/lib, from a private copy
  of the sources built with ``scripts/build --prefix P --service-path P/run/socket``: the
  module reaches localauthd at that socket for a caller that is not root, as a packaged
  build reaches /run/localauth/socket. ``serve(syslog)`` starts that service (``Service``,
  below) for a test; programs of the library are pointed at it with ``env()``
  (``LOCALAUTH_SERVICE``). The service's helper reads ``P/etc/security/localauth.conf``,
  so only what a test writes there (as root) reaches it -- the same path a packaged build
  takes from /etc/security. ``write_config`` replaces that file (root-owned, 0644);
  ``write_bed_config(bed, state, **extra)`` writes one for a test's bed and state
  directory. The whole prefix goes on ``close()``.
* ``Service(inst, syslog, ...)``: one localauthd (no systemd here: the units are the VM
  tier's) with ``--listen`` on a socket, its helper and configuration the installation's,
  in ``namespace_prefix(syslog)`` so that its helpers' lines reach the test's syslog;
  started with its PID recorded and stopped by it.
* ``Syslog()``: a datagram socket in a temporary directory, read by a thread; ``lines`` are
  ``(ident, message)`` pairs. Programs reach it as ``/dev/log`` inside ``namespace_prefix``.
* ``namespace_prefix(syslog, files={...})``: an argv prefix that runs a command in a private
  mount namespace where ``/dev`` is an overlay of the real one (devpts, shm and mqueue bound
  back in) with ``/dev/log`` linking to the test's socket, and where each ``{target: source}``
  file is bind-mounted over ``target`` (a throwaway ``/etc/pam.d/login``, empty copies of
  ``/var/log/wtmp`` ...). The machine's ``/dev`` and files are never touched; the mounts die
  with the command. The host has no syslog daemon, so without this the helper's and the
  service's log lines would go nowhere.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402

SERVICE_REL = Path("libexec/localauth/localauthd")
# localauthd's start (a Swift process and its socket) on a loaded machine: a bound on
# waiting, never a measure; the wait ends as soon as the socket answers.
STARTED_WITHIN = 30


class ServiceInstallation(system.Installation):
    """See the module docstring: a `system.Installation` whose module names a socket under
    the prefix, and a localauthd to answer there. ``service_socket``, ``serve``,
    ``write_config``, ``write_bed_config`` besides the rest."""

    work_parent = "/var/lib"

    @property
    def service_socket(self) -> Path:
        return self.prefix / "run" / "socket"

    @property
    def localauthd(self) -> Path:
        return self.prefix / SERVICE_REL

    def build_args(self) -> list:
        return ["--service-path", str(self.service_socket)]

    def _create(self) -> None:
        super()._create()
        if str(self.service_socket).encode() not in self.module.read_bytes():
            raise RuntimeError(f"{self.module} does not name {self.service_socket}")
        run = self.service_socket.parent
        run.mkdir(mode=0o755, exist_ok=True)
        run.chmod(0o755)

    def serve(self, syslog: "Syslog", *extra) -> "Service":
        """The installation's service at ``service_socket`` (one at a time)."""
        return Service(self, syslog, *extra, socket_path=self.service_socket)

    def env(self, **more) -> dict:
        """A program's environment with the library pointed at this installation's service."""
        return system.default_env(LOCALAUTH_SERVICE=str(self.service_socket), **more)

    def write_bed_config(self, bed, state: Path, **extra) -> None:
        """The configuration of one test: ``bed``'s bus and prints, ``state`` as the state
        directory, no password-age rules (each test starts from a user the product has
        never seen), a 10 s scan timeout; ``extra`` options added or replacing these."""
        options = dict(dbus_address=bed.address, state_dir=str(state),
                       fprint_dir=str(bed.state_dir), password_after_reboot="no",
                       password_after_idle="0", password_stale="0", scan_timeout="10")
        options.update(extra)
        self.write_config("".join(f"{k} = {v}\n" for k, v in options.items()))

    def write_config(self, text: str) -> None:
        """Replaces the configuration the service's helper reads (root-owned, 0644)."""
        tmp = self.config.with_name("localauth.conf.new")
        tmp.write_text(text)
        os.chown(tmp, 0, 0)
        tmp.chmod(0o644)
        os.replace(tmp, self.config)


class Service:
    """One localauthd on a socket; stopped by its PID on every exit path (``stop``)."""

    def __init__(self, inst, syslog, *extra, prefix=None, parent="/run", socket_path=None, config=None,
                 binary=None):
        """``prefix``: the namespace to run in (default: one whose /dev/log is ``syslog``);
        ``binary``: another build's localauthd (default: build/'s);
        ``parent``: where the socket's directory is made (visible to the callers);
        ``socket_path``: listen there instead (its directory exists and stays);
        ``config``: the service's configuration (default: the installation's)."""
        if socket_path is None:
            self.dir = Path(tempfile.mkdtemp(prefix="localauth-service-", dir=parent))
            self.dir.chmod(0o755)
            self.socket = self.dir / "socket"
        else:
            self.dir, self.socket = None, Path(socket_path)
        self.syslog = syslog
        self.pinning = extra[extra.index("--peer-pidfd") + 1] if "--peer-pidfd" in extra else "kernel"
        binary = binary or system.REPO / "build" / SERVICE_REL
        mark = syslog.mark()
        argv = (prefix or namespace_prefix(syslog)) + [str(binary), "--listen", str(self.socket),
                                                       "--helper", str(inst.helper),
                                                       "--config", str(config or inst.config), *extra]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env={"PATH": system.SAFE_PATH})
        deadline = time.monotonic() + STARTED_WITHIN
        while not self.answers():
            if self.proc.poll() is not None:
                raise RuntimeError(f"localauthd ended: {self.proc.stdout.read().decode()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"localauthd's socket did not answer within {STARTED_WITHIN} s")
            time.sleep(0.05)
        # The probe's connection, closed before a request, is closed by localauthd without a
        # helper, with a line: once it is in, no test that marks the syslog after this sees
        # it as its own. Pinned by pid (--peer-pidfd pid), the probe may be gone before the
        # service proves it held the connection: then the service's refusal is its line.
        probe = (lambda i, m: i == "localauthd" and (
            (m.startswith("a connection of uid 0 (pid ") and m.endswith("closed, no helper: closed before a request"))
            or m.startswith("a connection refused: pid ")))
        if syslog.wait_for(probe, timeout=STARTED_WITHIN, since=mark) is None:
            self.stop()
            raise RuntimeError(f"localauthd's line for the start-up probe did not come within {STARTED_WITHIN} s")

    def answers(self) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(str(self.socket))
                return True
            except OSError:
                return False

    def lines(self, ident):
        return [m for i, m in self.syslog.lines if i == ident]

    def helpers(self) -> list:
        """The service's running children that serve a request (its helpers): not the one
        started ahead and still waiting for a request (`--service-spare`, its fd 3 still
        /dev/null; a spare that took a request has the peer's pidfd there)."""
        return [pid for pid, spare in self._children() if not spare]

    def spares(self) -> list:
        """The service's child started ahead and waiting for the next request."""
        return [pid for pid, spare in self._children() if spare]

    def _children(self) -> list:
        out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(self.proc.pid)],
                             capture_output=True, text=True).stdout
        found = []
        for line in out.splitlines():
            if not line.strip():
                continue
            pid = line.split()[0]
            if "--service-spare" not in line:
                continue          # forked, not yet the helper (a spare being started): neither yet
            try:
                waiting = "--service-spare" in line and os.readlink(f"/proc/{pid}/fd/3") == "/dev/null"
            except OSError:
                continue          # gone meanwhile
            found.append((pid, waiting))
        return found

    def stop(self):
        system.stop_popen(self.proc)      # localauthd removes the socket it bound
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


SYNC_MARK = b"localauth-test-syslog-sync "


class Syslog:
    """A syslog socket for programs in ``namespace_prefix``; see the module docstring."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="localauth-syslog-"))
        self.dir.chmod(0o755)
        self.path = self.dir / "log"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(str(self.path))
        self.path.chmod(0o666)   # a program running as the user logs here too
        self._sock.settimeout(0.2)
        self._lines: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._synced = threading.Condition(self._lock)
        self._marks_seen = 0
        self._marks_sent = 0
        self._thread = threading.Thread(target=self._read, name="syslog", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            with self._lock:
                if data.startswith(SYNC_MARK):
                    self._marks_seen = int(data[len(SYNC_MARK):])
                    self._synced.notify_all()
                else:
                    self._lines.append(parse_syslog(data.decode(errors="replace")))

    def _sync(self) -> None:
        """Waits until the reader has taken every datagram queued before now. A datagram
        socket keeps its order, and a sender's send() returns once its message is queued
        here, so after a marker of our own comes through, every message of a program that
        already ended has been read: what a test sees does not depend on how soon this
        thread ran."""
        with self._lock:
            self._marks_sent += 1
            n = self._marks_sent
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(SYNC_MARK + str(n).encode(), str(self.path))
        with self._lock:
            if not self._synced.wait_for(lambda: self._marks_seen >= n, timeout=30):
                raise TimeoutError("the syslog capture's reader did not take its own marker in 30 s")

    @property
    def lines(self) -> list:
        self._sync()
        with self._lock:
            return list(self._lines)

    def mark(self) -> int:
        self._sync()
        with self._lock:
            return len(self._lines)

    def since(self, mark: int, ident: Optional[str] = None) -> list:
        """Messages (text only) after ``mark``, of programs named ``ident`` if given."""
        return [m for i, m in self.lines[mark:] if ident is None or i == ident]

    def wait_for(self, pred: Callable[[str, str], bool], timeout: float = 5.0,
                 since: int = 0) -> Optional[tuple]:
        """The first (ident, message) after ``since`` that satisfies ``pred``, waiting up to
        ``timeout`` seconds; None when none came."""
        deadline = time.monotonic() + timeout
        while True:
            for ident, msg in self.lines[since:]:
                if pred(ident, msg):
                    return ident, msg
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self._sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def parse_syslog(datagram: str) -> tuple:
    """``<86>Nov 30 10:20:18 ident[pid]: message`` -> (ident, message)."""
    text = datagram.rstrip("\n\0")
    if text.startswith("<") and ">" in text:
        text = text.split(">", 1)[1]
    head, sep, msg = text.partition(": ")
    if not sep:
        return "", text
    ident = head.rsplit(" ", 1)[-1].split("[", 1)[0]
    return ident, msg


# A shell function of the namespace scripts (this one, desktop.py's): ``dev_log DIR SOCKET``
# overlays /dev (the real one below, with pts, shm and mqueue bound through, so terminals
# and shared memory are the machine's) and links /dev/log to SOCKET; DIR is an empty
# directory of the namespace's tmpfs.
DEV_LOG_FUNCTION = r'''
dev_log() {
    mkdir "$1/orig" "$1/up" "$1/work"
    mount --rbind /dev "$1/orig"
    mount -t overlay localauth-test -o "lowerdir=$1/orig,upperdir=$1/up,workdir=$1/work" /dev
    for sub in pts shm mqueue; do
        if [ -d "$1/orig/$sub" ]; then mount --rbind "$1/orig/$sub" "/dev/$sub"; fi
    done
    rm -f /dev/log
    ln -s "$2" /dev/log
}
'''

_NAMESPACE_SCRIPT = DEV_LOG_FUNCTION + r'''
set -e
t=$1; log=$2; shift 2
mount -t tmpfs -o mode=0755 localauth-test "$t"
dev_log "$t" "$log"
while [ "$1" != "--" ]; do
    mount --bind "$2" "$1"
    shift 2
done
shift
exec "$@"
'''


def namespace_prefix(syslog: Syslog, files: Optional[dict] = None) -> list:
    """See the module docstring. ``files``: {target path: source path}; every target must
    exist (a bind mount needs one)."""
    mnt = Path(tempfile.mkdtemp(prefix="localauth-ns-", dir=syslog.dir))
    pairs: list[str] = []
    for target, source in (files or {}).items():
        if not Path(target).exists():
            raise RuntimeError(f"{target} does not exist: nothing to bind over")
        pairs += [str(target), str(source)]
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
            _NAMESPACE_SCRIPT, "sh", str(mnt), str(syslog.path), *pairs, "--"]
