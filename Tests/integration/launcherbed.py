"""What the tests of callers that are not root need: the product installed with its setuid
launcher, a syslog that the test can read, and a private mount namespace to run things in.

Run with /usr/bin/python3, as root. Nothing on the machine is edited:

* ``LauncherInstallation()``: the module, the helper and the setuid-root launcher installed
  by ``scripts/install --prefix`` into a temporary prefix under /var/lib (the
  LocalAuthentication library starts only a launcher in directories only root can change,
  so not under /tmp; and /run is often mounted nosuid), from a private copy of the
  sources built with ``scripts/build --prefix P --config-path P/etc/security/localauth.conf``.
  The launcher has the helper ``P/libexec/localauth/localauth-helper`` and that config
  path compiled in, so only what a test writes there (as root) reaches the helper on the
  unprivileged path -- the same path a packaged build takes from /etc/security. ``write_config``
  replaces that file (root-owned, 0644); ``write_bed_config(bed, state, **extra)`` writes
  one for a test's bed and state directory. The whole prefix goes on ``close()``.
* ``Syslog()``: a datagram socket in a temporary directory, read by a thread; ``lines`` are
  ``(ident, message)`` pairs. Programs reach it as ``/dev/log`` inside ``namespace_prefix``.
* ``namespace_prefix(syslog, files={...})``: an argv prefix that runs a command in a private
  mount namespace where ``/dev`` is an overlay of the real one (devpts, shm and mqueue bound
  back in) with ``/dev/log`` linking to the test's socket, and where each ``{target: source}``
  file is bind-mounted over ``target`` (a throwaway ``/etc/pam.d/login``, empty copies of
  ``/var/log/wtmp`` ...). The machine's ``/dev`` and files are never touched; the mounts die
  with the command. The host has no syslog daemon, so without this the helper's and the
  launcher's log lines would go nowhere.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402

LAUNCHER_REL = Path("libexec/localauth/localauth-launcher")


class LauncherInstallation(system.Installation):
    """See the module docstring: a `system.Installation` whose launcher reads the
    configuration under the prefix. ``launcher``, ``write_config``, ``write_bed_config``
    besides the rest."""

    work_parent = "/var/lib"

    @property
    def launcher(self) -> Path:
        return self.prefix / LAUNCHER_REL

    def build_args(self) -> list:
        return ["--config-path", str(self.config)]

    def _create(self) -> None:
        super()._create()
        st = self.launcher.stat()
        if st.st_uid != 0 or st.st_mode & 0o7777 != 0o4755:
            raise RuntimeError(f"{self.launcher} is not installed setuid root")
        for path, wanted in ((self.module, self.launcher), (self.launcher, self.helper),
                             (self.launcher, self.config)):
            if str(wanted).encode() not in path.read_bytes():
                raise RuntimeError(f"{path} does not name {wanted}")

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
        """Replaces the configuration the launcher's helper reads (root-owned, 0644)."""
        tmp = self.config.with_name("localauth.conf.new")
        tmp.write_text(text)
        os.chown(tmp, 0, 0)
        tmp.chmod(0o644)
        os.replace(tmp, self.config)


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
