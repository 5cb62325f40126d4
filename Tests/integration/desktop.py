"""A desktop as a packaged install makes it, inside a private mount namespace: the
machine's own /etc with the product's files added, the module where PAM finds it by its
plain name, the test bed's bus at the standard path, and a syslog the test reads.

Run with /usr/bin/python3, as root. Nothing on the machine is edited:

* ``Namespace``: an argv prefix (``prefix()``) that runs a command in a private mount
  namespace. ``overlay(DIR)`` puts an overlay over DIR whose upper layer is a directory of
  the test's: what the test writes there, and what programs in the namespace write to DIR,
  lands in it and nowhere else; it outlives one command, so ``pam-auth-update`` run in one
  namespace leaves its /etc/pam.d for the programs run in the next. ``/run`` gets a fresh
  overlay for each command with ``/run/dbus/system_bus_socket`` linking to the bed's bus
  (setuid programs such as pkexec and sudo ignore DBUS_SYSTEM_BUS_ADDRESS, and utmp and
  sudo's time stamps stay private), ``/dev`` one with ``/dev/log`` linking to the test's
  syslog socket (servicebed.Syslog), and ``bind(TARGET, FILE)`` puts a file over another.
* ``Desktop``: a ``ServiceInstallation`` seen through a Namespace: ``/etc`` overlaid with
  ``/etc/security/localauth.conf`` (the root path's configuration; the service's copy in
  the prefix gets the same text), the module copied into the overlaid PAM module directory
  as ``pam_localauth.so``, service files, sudoers and doas rules written into the overlay,
  ``pam_auth_update()`` running Debian's own tool in the namespace over the machine's real
  /etc/pam.d, /var/lib/pam and debconf database, with our profiles added to
  /usr/share/pam-configs. Empty throwaway copies of wtmp, btmp, lastlog and faillog are put
  over the machine's for ``login``.
  ``serve()``: the installation's localauthd at the socket its module names, run in the
  desktop's namespace (started again in the caller's view of logind when a command's
  ``prefix(...)`` asks for another); the module never starts a helper itself, so without
  it every caller gets the password at once.
* ``UserDesktop``: a Desktop for one test's throwaway user, whose right index finger is
  enrolled, with what the test's callers need added to it and localauthd serving
  (test_polkit, test_stock_stacks).
* ``LoginSession``: logind's record of a session (a cgroup named like its scope, its file
  in /run/systemd/sessions) for machines where logind cannot run; ``prefix(session=...)``
  runs a command in it, ``prefix(logind=True)`` makes sd_booted() say logind runs.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

import system
from servicebed import DEV_LOG_FUNCTION, Service, ServiceInstallation, Syslog
from messages import ENROLLED, FINGER

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "pam.d" / "pam-configs"
LOGS = ("/var/log/wtmp", "/var/log/btmp", "/var/log/lastlog", "/var/log/faillog")


def module_dir() -> Path:
    """Where libpam finds modules by plain name (the directory holding pam_unix.so)."""
    found = sorted(glob.glob("/usr/lib/*/security/pam_unix.so") + glob.glob("/lib/*/security/pam_unix.so"))
    if not found:
        raise RuntimeError("no pam_unix.so: cannot tell where PAM modules live")
    return Path(os.path.realpath(found[0])).parent


_SCRIPT = DEV_LOG_FUNCTION + r'''
set -e
t=$1; shift
mount -t tmpfs -o mode=0755 localauth-test "$t"
mkdir "$t/run-up" "$t/run-work"
mount -t overlay localauth-test -o "lowerdir=/run,upperdir=$t/run-up,workdir=$t/run-work" /run
while [ "$1" != "--" ]; do
    case $1 in
    overlay)
        mount -t overlay localauth-test -o "lowerdir=$2,upperdir=$3,workdir=$4" "$2"
        shift 4 ;;
    bind)
        mount --bind "$3" "$2"
        shift 3 ;;
    bus)
        mkdir -p /run/dbus
        rm -f /run/dbus/system_bus_socket
        ln -s "$2" /run/dbus/system_bus_socket
        shift 2 ;;
    logind)
        mkdir -p /run/systemd/system
        shift ;;
    session)
        mkdir -p /run/systemd/sessions
        cp "$3" "/run/systemd/sessions/$2"
        echo $$ > "$4/cgroup.procs"
        shift 4 ;;
    record)
        mkdir -p /run/systemd/sessions
        cp "$3" "/run/systemd/sessions/$2"
        shift 3 ;;
    seat)
        mkdir -p /run/systemd/sessions /run/systemd/seats
        cp "$3" "/run/systemd/sessions/$2"
        printf 'ACTIVE=%s\nACTIVE_UID=0\n' "$2" > /run/systemd/seats/seat0
        shift 3 ;;
    log)
        mkdir "$t/dev"
        dev_log "$t/dev" "$2"
        shift 2 ;;
    *) echo "namespace: unknown action $1" >&2; exit 125 ;;
    esac
done
shift
exec "$@"
'''


class LoginSession:
    """logind's record of a login session, for a machine where logind does not run:
    sd-login (which the helper and polkitd use) finds a process's session from its cgroup
    (``.../session-ID.scope``) and reads the rest from /run/systemd/sessions/ID. This makes
    a cgroup of that name in the unified hierarchy (a unique name, removed on ``close()``)
    and the file's text; ``Namespace.prefix(session=...)`` puts the command in the cgroup
    and the file in the namespace's /run. logind itself is not running: this is its state
    only, what a test can give where no init system runs it."""

    HIERARCHIES = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")

    def __init__(self, user, remote: bool = False, seat: Optional[str] = "seat0",
                 session_type: str = "tty"):
        base = next((Path(h) for h in self.HIERARCHIES
                     if Path(h, "cgroup.procs").exists() and Path(h, "cgroup.subtree_control").exists()),
                    None)
        if base is None:
            raise RuntimeError("no cgroup v2 hierarchy to name a session in")
        self.id = "la" + secrets.token_hex(4)
        self.slice = base / f"localauth-test-{self.id}.slice"
        self.scope = self.slice / f"session-{self.id}.scope"
        self.scope.mkdir(parents=True)
        fields = {"UID": user.uid, "USER": user.name, "ACTIVE": 1, "STATE": "active",
                  "REMOTE": int(remote), "TYPE": session_type, "CLASS": "user",
                  "SCOPE": f"session-{self.id}.scope"}
        if remote:
            fields["REMOTE_HOST"] = "far.example.org"
        if seat:
            fields.update(SEAT=seat, VTNR=1)
        self.text = "".join(f"{k}={v}\n" for k, v in fields.items())

    def close(self) -> None:
        """Removes the cgroups once their processes are gone (moving stragglers to the
        root first, which a test's killed process group may leave for a moment)."""
        root = self.slice.parent
        for _ in range(100):
            try:
                for d in (self.scope, self.slice):
                    if d.exists():
                        d.rmdir()
                return
            except OSError:
                with contextlib.suppress(OSError):
                    for pid in (self.scope / "cgroup.procs").read_text().split():
                        (root / "cgroup.procs").write_text(pid)
                time.sleep(0.05)
        raise RuntimeError(f"could not remove {self.scope}")


class Namespace:
    """See the module docstring. ``close()`` removes every directory it made."""

    def __init__(self, bus: Optional[Path] = None, syslog: Optional[Syslog] = None):
        self.root = Path(tempfile.mkdtemp(prefix="localauth-desktop-"))
        self.root.chmod(0o755)
        self.bus, self.syslog = bus, syslog
        self._overlays: dict[str, Path] = {}
        self._binds: dict[str, Path] = {}
        self._count = 0

    def overlay(self, target: str) -> Path:
        """The upper directory over ``target`` (made on first use)."""
        if target not in self._overlays:
            if not Path(target).is_dir():
                raise RuntimeError(f"{target} is not a directory: nothing to overlay")
            upper = self.root / "upper" / target.strip("/").replace("/", "+")
            upper.mkdir(parents=True, mode=0o755)
            upper.chmod(0o755)
            self._overlays[target] = upper
        return self._overlays[target]

    def bind(self, target: str, source: Path) -> None:
        if not Path(target).exists():
            raise RuntimeError(f"{target} does not exist: nothing to bind over")
        self._binds[target] = Path(source)

    def prefix(self, session: Optional[LoginSession] = None, logind: bool = False,
               seat_session: Optional[LoginSession] = None, join: bool = True) -> list:
        """A fresh namespace for one command (run as root; the command may drop to a user).
        ``session``: the command runs in that login session; ``logind``: the namespace's
        /run says logind runs (sd_booted), as on a machine booted with systemd;
        ``seat_session``: that session is seat0's active one (the command is not in it:
        a login manager's worker, in front of the greeter's session); ``join=False``: the
        session's record is in /run/systemd/sessions but the command stays out of its
        cgroup (localauthd, which serves the session's processes and is none of them)."""
        self._count += 1
        run = self.root / f"ns{self._count}"
        run.mkdir(mode=0o755)
        actions: list[str] = []
        if logind:
            actions += ["logind"]
        if session is not None:
            record = self.root / f"session-{self._count}"
            record.write_text(session.text)
            actions += (["session", session.id, str(record), str(session.scope)] if join
                        else ["record", session.id, str(record)])
        if seat_session is not None:
            record = self.root / f"seat-session-{self._count}"
            record.write_text(seat_session.text)
            actions += ["seat", seat_session.id, str(record)]
        # Overlays in path order, so /etc comes before anything bound below it.
        for target in sorted(self._overlays):
            work = self.root / "work" / f"{self._count}-{target.strip('/').replace('/', '+')}"
            work.mkdir(parents=True)
            actions += ["overlay", target, str(self._overlays[target]), str(work)]
        for target, source in self._binds.items():
            actions += ["bind", target, str(source)]
        if self.bus is not None:
            actions += ["bus", str(self.bus)]
        if self.syslog is not None:
            actions += ["log", str(self.syslog.path)]
        return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                _SCRIPT, "sh", str(run), *actions, "--"]

    def run(self, argv: list, **kw) -> subprocess.CompletedProcess:
        """``argv`` in a fresh namespace, as root, its output captured."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        kw.setdefault("timeout", 120)
        kw.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run([*self.prefix(), *argv], **kw)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chown(path, 0, 0)
    path.chmod(mode)


class Desktop(contextlib.ExitStack):
    """See the module docstring. ``config`` holds the options every test here needs (the
    bed's prints, a state directory of its own); ``configure(**options)`` adds more."""

    def __init__(self, inst: ServiceInstallation, bed, syslog: Optional[Syslog] = None):
        super().__init__()
        self.inst, self.bed, self.syslog = inst, bed, syslog
        self.ns = Namespace(bus=bed.dir / "system_bus_socket", syslog=syslog)
        self.callback(self.ns.close)
        self.service: Optional[Service] = None
        self._serving = False
        self._served_for = None
        self.callback(self.stop_serving)
        try:
            self._setup(inst, bed)
        except BaseException:
            self.close()
            raise

    def _setup(self, inst, bed) -> None:
        self.state = self.ns.root / "state"
        self.state.mkdir(mode=0o700)
        self.etc = self.ns.overlay("/etc")
        modules = self.ns.overlay(str(module_dir()))
        shutil.copy(inst.module, modules / "pam_localauth.so")
        (modules / "pam_localauth.so").chmod(0o644)
        logs = self.ns.root / "logs"
        logs.mkdir(mode=0o755)
        for path in LOGS:
            if Path(path).exists():
                copy = logs / Path(path).name
                copy.touch(mode=0o664)
                self.ns.bind(path, copy)
        self.configure()

    def configure(self, **extra) -> None:
        options = dict(state_dir=str(self.state), fprint_dir=str(self.bed.state_dir),
                       scan_timeout="10")
        options.update({k: str(v) for k, v in extra.items()})
        text = "".join(f"{k} = {v}\n" for k, v in options.items())
        _write(self.etc / "security" / "localauth.conf", text)
        self.inst.write_config(text)

    def pam_file(self, name: str, text: str) -> Path:
        """``/etc/pam.d/NAME`` in the namespace."""
        path = self.etc / "pam.d" / name
        _write(path, text)
        return path

    def sudoers(self, user, service: Optional[str] = None) -> None:
        """Lets ``user`` run anything through sudo: no cached credentials, no lecture."""
        u = str(user)
        text = (f"Defaults:{u} timestamp_timeout=0\nDefaults:{u} !lecture\n"
                + (f"Defaults:{u} pam_service={service}\n" if service else "")
                + f"{u} ALL=(ALL:ALL) ALL\n")
        draft = self.ns.root / "sudoers-draft"
        _write(draft, text, 0o440)
        system._run(["visudo", "-c", "-q", "-f", str(draft)])
        _write(self.etc / "sudoers.d" / "localauth-test", text, 0o440)

    def doas(self, user) -> None:
        _write(self.etc / "doas.conf", f"permit {user} as root\n", 0o644)

    def pam_auth_update(self, *args: str) -> subprocess.CompletedProcess:
        """Debian's pam-auth-update on the machine's /etc/pam.d, in the namespace, with the
        product's profiles added to the machine's own."""
        configs = self.ns.overlay("/usr/share/pam-configs")
        for profile in PROFILES.iterdir():
            _write(configs / profile.name, profile.read_text())
        self.ns.overlay("/var/lib/pam")
        self.ns.overlay("/var/cache/debconf")
        env = {"PATH": system.SAFE_PATH, "DEBIAN_FRONTEND": "noninteractive", "LANG": "C.UTF-8"}
        proc = self.ns.run(["pam-auth-update", *args], env=env)
        if proc.returncode != 0 or "Local modifications" in proc.stderr:
            raise RuntimeError(f"pam-auth-update {' '.join(args)}: {proc.stdout}{proc.stderr}")
        return proc

    def stack(self, name: str) -> str:
        """``/etc/pam.d/NAME`` as programs in the namespace see it."""
        return self.ns.run(["cat", f"/etc/pam.d/{name}"]).stdout

    def serve(self) -> Service:
        """The installation's localauthd from now on, listening at the socket its module
        names (``inst.service_socket``), run in a namespace of this desktop: its /run is the
        one ``prefix(**namespace)`` gives the command it serves (the bed's bus at the standard
        path; logind's records when the command has them), its /dev/log the syslog. Each
        ``prefix()`` with another logind view starts it again in that view (its helpers read
        /run/systemd as the caller's namespace has it, as on a machine where /run is one).
        Stopped by its PID by ``stop_serving()`` and on ``close()``."""
        if self.syslog is None:
            raise RuntimeError("a desktop without a syslog cannot serve: localauthd's lines go nowhere")
        self._serving = True
        self._serve_for({})
        return self.service

    def stop_serving(self) -> None:
        """No localauthd from now on: the module finds no socket."""
        self._serving = False
        self._served_for = None
        if self.service is not None:
            service, self.service = self.service, None
            service.stop()

    def _serve_for(self, namespace: dict) -> None:
        view = (bool(namespace.get("logind")),
                *(s.id if s is not None else None
                  for s in (namespace.get("session"), namespace.get("seat_session"))))
        if self.service is not None and self._served_for == view:
            return
        if self.service is not None:
            service, self.service = self.service, None
            service.stop()
        self._served_for = None
        self.service = Service(self.inst, self.syslog, socket_path=self.inst.service_socket,
                               prefix=self.ns.prefix(join=False, **namespace))
        self._served_for = view

    def prefix(self, **namespace) -> list:
        """``Namespace.prefix`` for a command; when serving, localauthd first runs in the
        same view of logind (see ``serve``)."""
        if self._serving:
            self._serve_for(namespace)
        return self.ns.prefix(**namespace)

    def run_on_pty(self, argv: list, user=None, env: Optional[dict] = None,
                   timeout: float = 60, **namespace) -> system.PtyRun:
        """``namespace``: ``session=``, ``logind=`` as for ``Namespace.prefix``."""
        return system.run_on_pty(argv, env=env, user=user, prefix=self.prefix(**namespace),
                                 timeout=timeout)


class UserDesktop:
    """A Desktop for ``user``: ``prepare(desktop)`` adds what the test's callers need
    (service files, profiles, sudoers), then the user's right index finger is enrolled as
    print ``ENROLLED`` and the desktop serves (``Desktop.serve``: the installation's
    localauthd at the socket its module names, as localauth.socket is on a machine). The
    desktop is closed when that fails, and by ``close()``. ``state()``: the fields of the
    user's state file; ``served(mark)``: localauthd's lines since the syslog mark."""

    def __init__(self, inst, bed, syslog, user, prepare):
        self.bed, self.user, self.syslog = bed, user, syslog
        self.desktop = Desktop(inst, bed, syslog)
        try:
            prepare(self.desktop)
            bed.enroll(user.name, FINGER, ENROLLED)
            self.desktop.serve()
        except BaseException:
            self.desktop.close()
            raise

    def close(self):
        self.desktop.close()

    def state(self) -> dict:
        return system.state_fields(self.desktop.state / f"{self.user.name}.state")

    def served(self, mark: int) -> list:
        """localauthd's lines since the syslog mark ``mark``."""
        return self.syslog.since(mark, "localauthd")
