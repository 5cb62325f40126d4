"""Things an end-to-end test creates on the machine itself, each one undone on every exit path.

Run with /usr/bin/python3, as root. Everything here gets a unique name, is recorded when it
is created and removed by its context manager's exit, or at interpreter exit (atexit) when
that exit never ran; nothing existing on the machine is edited.

    with ThrowawayUser() as alice, Installation() as inst:       # user; build in a prefix
        with PamService("la-sudo-", lines) as svc, SudoersDropIn(alice, svc.name):
            run = run_on_pty(["sudo", "-k", "id", "-un"], user=alice)
            run.expect("password for")
            run.sendline(alice.password)
            result = run.finish()            # .status, .output (the whole terminal)
    assert leftovers() == []                 # no user, pam.d or sudoers file left behind

* ``ThrowawayUser(prefix="la-")``: ``useradd -M -s /bin/bash``, a random password set with
  chpasswd; removed with ``userdel`` (home, mail spool and sudo's time stamp too, if
  anything made them).
* ``PamService(prefix, lines)``: ``/etc/pam.d/<prefix><random>``, written exclusively.
* ``SudoersDropIn(user, service, defaults=())``: ``/etc/sudoers.d/<random>`` giving the
  user sudo through ``service`` with no cached credentials and no lecture (and more
  ``Defaults:USER`` settings if given); checked with
  ``visudo -c -f`` before it is put in place and ``visudo -c`` after.
* ``PamServiceOverlay(service, lines)``: a program that uses a fixed service name (``su``)
  sees these lines at ``/etc/pam.d/<service>`` inside a private mount namespace
  (``.prefix`` is the argv prefix); the machine's file is never touched.
* ``Installation(prefix=None)``: ``scripts/install --prefix`` into a temporary prefix (its
  localauthd runs ``PREFIX/libexec/localauth/localauth-helper``),
  root-owned. ``shared_installation()`` makes one per process. The scripts run on a private
  copy, so the repository's ``build/`` is never rewritten under other tests' feet; the
  helper comes from ``swift build`` (``LOCALAUTH_SKIP_BUILD=1``: ``build/`` as it is).
* ``run_on_pty(argv, env=None, user=None)``: a program on a pseudo-terminal (pexpect), as
  ``user`` through ``setpriv --reuid --regid --init-groups``; killed at cleanup if it is
  still running.
"""

from __future__ import annotations

import atexit
import grp
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pamenv  # noqa: E402

REPO = pamenv.REPO
PAM_DIR = Path("/etc/pam.d")
SUDOERS_DIR = Path("/etc/sudoers.d")
SAFE_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
HELPER_REL = Path("libexec/localauth/localauth-helper")
MODULE_REL = Path("lib/security/pam_localauth.so")
SERVICE_REL = Path("libexec/localauth/localauthd")
CTL_REL = Path("bin/localauthctl")


# --------------------------------------------------------------------------------------
# The undo list: every creation pushes its undo; context managers pop theirs, atexit runs
# whatever is left (newest first).

class _UndoList:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[int, tuple[str, Callable[[], None]]] = {}
        self._next = 0

    def push(self, what: str, undo: Callable[[], None]) -> int:
        with self._lock:
            self._next += 1
            self._items[self._next] = (what, undo)
            return self._next

    def run(self, token: Optional[int]) -> None:
        with self._lock:
            item = self._items.pop(token, None) if token is not None else None
        if item is None:
            return
        what, undo = item
        try:
            undo()
        except BaseException as exc:  # even Ctrl-C here: the other undos must still run
            print(f"system.py: could not undo {what}: {exc!r}", file=sys.stderr)

    def drop(self, token: Optional[int]) -> None:
        """Forgets an undo without running it (what it would undo was never made)."""
        with self._lock:
            self._items.pop(token, None)

    def run_all(self) -> None:
        while True:
            with self._lock:
                if not self._items:
                    return
                token = max(self._items)
            self.run(token)

    def pending(self) -> list[str]:
        with self._lock:
            return [what for what, _ in self._items.values()]


_undo = _UndoList()
atexit.register(_undo.run_all)

# What this process created: ("user", name) or ("file", path); leftovers() checks them.
_created: list[tuple[str, str]] = []


def cleanup_all() -> None:
    """Undo everything still recorded (also what atexit does)."""
    _undo.run_all()


def pending_cleanups() -> list[str]:
    return _undo.pending()


def leftovers() -> list[str]:
    """What this process created that still exists: users, groups and files."""
    left = []
    for kind, name in _created:
        if kind == "user":
            if _user_exists(name):
                left.append(f"user {name}")
            if _group_exists(name):
                left.append(f"group {name}")
        elif os.path.lexists(name):
            left.append(name)
    return left


def _raise_interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP raise KeyboardInterrupt (as Ctrl-C does), so context managers
    and atexit still clean up; only default dispositions are replaced."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, _raise_interrupt)


class _Created:
    """Base of the context managers: ``__enter__`` calls ``_create``; when that raises, what
    it had already made is undone before the exception goes on."""

    _token: Optional[int] = None

    def __enter__(self):
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _create(self) -> None:
        raise NotImplementedError

    def _record(self, what: str, undo: Callable[[], None]) -> None:
        self._token = _undo.push(what, undo)

    def _record_file(self, path: Path, text: str, mode: int) -> None:
        """Creates our own file ``path``; recorded before it exists, so an interruption
        at any point still removes it, and only a file we created is ever removed."""
        made: list = []
        _created.append(("file", str(path)))
        self._record(f"file {path}", lambda: made and path.unlink(missing_ok=True))
        _write_exclusive(path, text, mode, made)

    def close(self) -> None:
        token, self._token = self._token, None
        _undo.run(token)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def unique_name(prefix: str, taken: Callable[[str], bool]) -> str:
    """``prefix`` plus 8 random hex digits, not ``taken``."""
    for _ in range(100):
        name = prefix + secrets.token_hex(4)
        if not taken(name):
            return name
    raise RuntimeError(f"no free name with prefix {prefix!r}")


def _run(argv: list, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    p = subprocess.run(argv, **kw)
    if p.returncode != 0:
        said = ((p.stdout or "") + (p.stderr or "")).strip()[-3000:]
        raise RuntimeError(f"{' '.join(map(str, argv))} failed ({p.returncode}): {said}")
    return p


def _locked_retry(argv: list, **kw) -> subprocess.CompletedProcess:
    """useradd, userdel and chpasswd fail at once when another process holds /etc/passwd's
    lock (test files running in parallel make and remove users): tried again a while."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    for _ in range(100):
        p = subprocess.run(argv, **kw)
        if p.returncode == 0 or not SHADOW_LOCKED.search(p.stderr or ""):
            return p
        time.sleep(0.1)
    return p


# What shadow's tools say when another holds the lock of /etc/passwd, /etc/shadow or
# /etc/group: "cannot lock /etc/passwd; try again later.", "lock /etc/passwd.lock already
# used by PID 123", "existing lock file /etc/passwd.lock without a PID". Only these: a user
# name may itself contain "lock" (la-lock-…), and "user la-lock-… is currently used by
# process 42" is not worth a retry.
SHADOW_LOCKED = re.compile(r"cannot lock /etc/|\.lock already used by PID|existing lock file ")


def _write_exclusive(path: Path, text: str, mode: int, made: Optional[list] = None) -> None:
    """Creates ``path`` (never replaces an existing file) with ``text`` and ``mode``;
    appends True to ``made`` as soon as the file exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 mode)
    if made is not None:
        made.append(True)
    try:
        os.fchmod(fd, mode)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------

class ThrowawayUser(_Created):
    """A local user with a random password, removed again. ``name``, ``uid``, ``gid``,
    ``password``."""

    def __init__(self, prefix: str = "la-", password: Optional[str] = None,
                 shell: str = "/bin/bash"):
        self.prefix, self.shell = prefix, shell
        self.password = password or "pw-" + secrets.token_urlsafe(12)
        self.name: Optional[str] = None
        self.uid = self.gid = -1

    def _create(self) -> None:
        while True:
            name = unique_name(self.prefix, lambda n: _user_exists(n) or _group_exists(n)
                               or os.path.lexists(f"/home/{n}"))
            # Recorded first, so an interruption during useradd still removes the user.
            self._record(f"user {name}", lambda n=name: _remove_user(n))
            p = _locked_retry(["useradd", "-M", "-s", self.shell, name])
            if p.returncode == 9:      # taken meanwhile by someone else: not ours
                _undo.drop(self._token)
                continue
            _created.append(("user", name))
            if p.returncode != 0:
                raise RuntimeError(f"useradd {name} failed ({p.returncode}): {p.stderr}")
            break
        self.name = name
        p = _locked_retry(["chpasswd"], input=f"{name}:{self.password}\n")
        if p.returncode != 0:
            raise RuntimeError(f"chpasswd failed ({p.returncode}): {p.stderr}")
        pw = pwd.getpwnam(name)
        self.uid, self.gid = pw.pw_uid, pw.pw_gid

    def __str__(self) -> str:
        return self.name or "<no user>"


def _processes_of(uid: int) -> list[int]:
    """The processes whose real or effective user is ``uid`` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        real, effective = line.split()[1:3]
                        if uid in (int(real), int(effective)):
                            found.append(int(entry))
                        break
        except OSError:
            continue
    return found


def stop_popen(proc: subprocess.Popen, timeout: float = 10) -> None:
    """A daemon this test started, by its PID: SIGTERM, then SIGKILL if it has not ended
    within ``timeout``; reaped either way."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _stop_processes_of(name: str, uid: int) -> None:
    """A throwaway user's processes still running when the user goes (a test that left a
    shell or a job behind). They are this run's by construction (the user was made for it
    and has a name no one else has), and left running they would outlive the user and pass
    its uid on to the next user made: that user's removal would then fail in turn. Said
    on stderr, so the test that leaked them can be found."""
    pids = _processes_of(uid)
    if not pids:
        return
    print(f"system.py: {name} (uid {uid}) still has processes {pids} at its removal: "
          "stopping them", file=sys.stderr)
    for sig in (signal.SIGHUP, signal.SIGCONT, signal.SIGKILL):
        for pid in _processes_of(uid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def _remove_user(name: str) -> None:
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        pw = None
    if pw is not None:
        # A process of the user that is still exiting (sudo, su) makes userdel refuse.
        for attempt in range(50):
            p = _locked_retry(["userdel", name])
            if p.returncode == 0 or not _user_exists(name):
                break
            if attempt == 25:
                _stop_processes_of(name, pw.pw_uid)
            if attempt == 49:
                _run(["userdel", "-f", name])
            time.sleep(0.05)
    if _group_exists(name):  # a group of the same name left behind (USERGROUPS_ENAB no)
        subprocess.run(["groupdel", name], capture_output=True)
    # What useradd -M did not make but something else may have: only if it is that user's.
    for path in (f"/home/{name}", f"/var/mail/{name}", f"/var/spool/mail/{name}",
                 f"/run/sudo/ts/{name}", f"/var/lib/sudo/lectured/{name}"):
        p = Path(path)
        try:
            st = p.lstat()
        except FileNotFoundError:
            continue
        if pw is not None and st.st_uid not in (pw.pw_uid, 0):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


class PamService(_Created):
    """``/etc/pam.d/<prefix><random>`` with ``lines``; ``name`` is the service name."""

    def __init__(self, prefix: str, lines: Iterable[str]):
        self.prefix, self.lines = prefix, list(lines)
        self.name: Optional[str] = None
        self.path: Optional[Path] = None

    @staticmethod
    def _text(lines: list) -> str:
        return "#%PAM-1.0\n# a test service of localauth, removed after the test\n" + \
            "".join(line + "\n" for line in lines)

    def _create(self) -> None:
        name = unique_name(self.prefix, lambda n: os.path.lexists(PAM_DIR / n))
        self._record_file(PAM_DIR / name, self._text(self.lines), 0o644)
        self.name, self.path = name, PAM_DIR / name


class SudoersDropIn(_Created):
    """Lets ``user`` run anything through sudo with PAM service ``service``, no cached
    credentials (``timestamp_timeout=0``) and no lecture."""

    def __init__(self, user, service: str, prefix: str = "la-", defaults: Iterable[str] = ()):
        self.user, self.service, self.prefix = str(user), service, prefix
        self.defaults = list(defaults)   # more `Defaults:USER` settings, e.g. "pam_rhost"
        self.path: Optional[Path] = None

    def text(self) -> str:
        u = self.user
        return (f"# a test drop-in of localauth, removed after the test\n"
                f"Defaults:{u} pam_service={self.service}\n"
                f"Defaults:{u} timestamp_timeout=0\n"
                f"Defaults:{u} !lecture\n"
                + "".join(f"Defaults:{u} {d}\n" for d in self.defaults)
                + f"{u} ALL=(ALL:ALL) ALL\n")

    def _create(self) -> None:
        with tempfile.TemporaryDirectory(prefix="localauth-sudoers-") as d:
            draft = Path(d) / "draft"
            draft.write_text(self.text())
            draft.chmod(0o440)
            _run(["visudo", "-c", "-q", "-f", str(draft)])  # never install a bad one
        # sudo skips drop-ins whose name contains a dot or ends with ~; ours has neither.
        name = unique_name(self.prefix, lambda n: os.path.lexists(SUDOERS_DIR / n))
        self._record_file(SUDOERS_DIR / name, self.text(), 0o440)
        self.path = SUDOERS_DIR / name
        _run(["visudo", "-c", "-q"])  # the whole policy still parses with it


class PamServiceOverlay(_Created):
    """For programs whose PAM service name is fixed (``su``): the lines are written to a
    temporary file, and ``prefix`` is an argv prefix that runs a command in a private mount
    namespace where that file is bind-mounted over ``/etc/pam.d/<service>``. The machine's
    file is never changed; the mount dies with the command."""

    def __init__(self, service: str, lines: Iterable[str]):
        self.service, self.lines = service, list(lines)
        self.dir: Optional[Path] = None

    def _create(self) -> None:
        target = PAM_DIR / self.service
        if not target.is_file():
            raise RuntimeError(f"{target} does not exist: nothing to overlay")
        d = Path(tempfile.mkdtemp(prefix="localauth-pamoverlay-"))
        self._record(f"overlay dir {d}", lambda: shutil.rmtree(d, ignore_errors=True))
        d.chmod(0o755)
        self.dir = d
        (d / self.service).write_text(PamService._text(self.lines))
        (d / self.service).chmod(0o644)

    @property
    def prefix(self) -> list:
        script = 'mount --bind "$1" "$2" || exit 125; shift 2; exec "$@"'
        return ["unshare", "--mount", "--propagation", "private", "--",
                "/bin/sh", "-c", script, "sh", str(self.dir / self.service),
                str(PAM_DIR / self.service)]


# --------------------------------------------------------------------------------------
# The product installed into a temporary prefix.

def swift_executables(source: Path = REPO, build: bool = True) -> dict:
    """{path under build/: built file} for the helper, localauthctl and localauthd, built by
    `scripts/build --swift-only` (they do not depend on the install prefix), or taken from
    build/ as it is when `build` is False."""
    if build:
        env = dict(os.environ)
        if Path("/opt/swift/usr/bin").is_dir():
            env["PATH"] = "/opt/swift/usr/bin:" + env.get("PATH", SAFE_PATH)
        _run([str(source / "scripts" / "build"), "--swift-only"], env=env)
    return {rel: source / "build" / rel for rel in (HELPER_REL, CTL_REL, SERVICE_REL)}


def source_copy(source: Path, dest: Path) -> Path:
    """The whole source tree (it is small) at ``dest``, without history and build products,
    so its scripts find whatever else they use (man pages, config, packaging) and what they
    build lands there, never in the build/ other tests run from."""
    # SwiftPM's scratch directories are skipped at every level: the examples' own
    # (Examples/*/.build) change under a copy while scripts/test builds them beside it.
    anywhere = {"__pycache__", ".build", ".swiftpm"}
    top = {".git", "build", "build-asan"}
    shutil.copytree(source, dest, symlinks=True,
                    ignore=lambda d, names: [n for n in names if n in anywhere
                                             or (Path(d) == source and n in top)])
    return dest


class Installation(_Created):
    """The product installed under a temporary prefix with ``scripts/install --prefix``:
    ``prefix``, ``module``, ``helper``, ``ctl``, ``config`` (the shipped configuration
    file). localauthd runs ``helper``; the module names only the service's socket.

    ``scripts/build --prefix`` would rewrite the repository's ``build/`` (whose module other
    tests expect to name ``/usr``), so both scripts run on a private copy of the source
    tree, with the Swift executables put in its ``build/``; the C parts are compiled there
    (``scripts/build --c-only``)."""

    def __init__(self, prefix: Optional[Path] = None, source: Optional[Path] = None,
                 prebuilt: Optional[bool] = None):
        self.requested = Path(prefix) if prefix else None
        self.source = Path(source or REPO)
        # True: take the Swift executables from the source's build/ (scripts/build made them).
        self.prebuilt = (os.environ.get("LOCALAUTH_SKIP_BUILD") == "1"
                         if prebuilt is None else prebuilt)
        self.prefix: Optional[Path] = None

    @property
    def module(self) -> Path:
        return self.prefix / MODULE_REL

    @property
    def helper(self) -> Path:
        return self.prefix / HELPER_REL

    @property
    def ctl(self) -> Path:
        return self.prefix / CTL_REL

    @property
    def config(self) -> Path:
        return self.prefix / "etc" / "security" / "localauth.conf"

    # Where the temporary installation is made (None: the system's temporary directory).
    work_parent: Optional[str] = None

    def build_args(self) -> list:
        """Extra `scripts/build` arguments for the C parts (subclasses add theirs)."""
        return []

    def _create(self) -> None:
        work = Path(tempfile.mkdtemp(prefix="localauth-install-", dir=self.work_parent))
        self._record(f"installation {work}", lambda: shutil.rmtree(work, ignore_errors=True))
        work.chmod(0o755)
        self.prefix = self.requested or work / "prefix"
        src = source_copy(self.source, work / "src")
        for rel, built in swift_executables(self.source, build=not self.prebuilt).items():
            if not built.is_file():
                raise RuntimeError(f"{built} is missing (run scripts/build)")
            (src / "build" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, src / "build" / rel)
        # Their debug information, which scripts/install puts beside them.
        if (self.source / "build" / "debug").is_dir():
            shutil.copytree(self.source / "build" / "debug", src / "build" / "debug",
                            dirs_exist_ok=True)
        _run([str(src / "scripts" / "build"), "--prefix", str(self.prefix), *self.build_args(),
              "--c-only"])
        if (src / "scripts" / "install").is_file():
            _run([str(src / "scripts" / "install"), "--prefix", str(self.prefix),
                  "--no-build"])
        else:
            for rel in (MODULE_REL, HELPER_REL, CTL_REL):
                _install_file(src / "build" / rel, self.prefix, rel)
        # What localauthd runs as root for each request (the module starts nothing).
        st = self.helper.stat()
        if st.st_uid != 0 or st.st_mode & 0o022:
            raise RuntimeError(f"{self.helper} is not root-owned and closed to others")


def _install_file(src: Path, prefix: Path, rel: Path) -> None:
    """``install -D -o root -g root -m 0755``, with root-owned 0755 directories."""
    dest = prefix / rel
    for depth in range(len(rel.parts)):
        d = prefix.joinpath(*rel.parts[:depth])
        d.mkdir(mode=0o755, parents=True, exist_ok=True)
        os.chown(d, 0, 0)
        d.chmod(0o755)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.copyfile(src, tmp)
    os.chown(tmp, 0, 0)
    tmp.chmod(0o755)
    os.replace(tmp, dest)


_shared: Optional[Installation] = None
_shared_error: Optional[BaseException] = None
_shared_lock = threading.Lock()


def shared_installation() -> Installation:
    """One Installation for the whole process (built on first use, removed at exit). When
    it could not be made, every later call raises the same error at once."""
    global _shared, _shared_error
    with _shared_lock:
        if _shared_error is not None:
            raise RuntimeError(f"the installation failed earlier: {_shared_error}")
        if _shared is None:
            try:
                _shared = Installation().__enter__()
            except Exception as exc:
                _shared_error = exc
                raise
        return _shared


# --------------------------------------------------------------------------------------
# Programs on a pseudo-terminal.

def screen_lines(output: str) -> list:
    """A terminal transcript as the lines a person reads: no carriage returns, no blank
    lines, no pam_wrapper log lines."""
    lines = []
    for line in output.replace("\r", "").split("\n"):
        if line.strip() and not line.startswith("PWRAP_"):
            lines.append(line.rstrip())
    return lines


def state_fields(path) -> dict:
    """A user's state file (StateFileFormat: a header line, then key=value lines) as a dict."""
    return dict(line.split("=", 1) for line in Path(path).read_text().splitlines()[1:] if "=" in line)


class PtyRun(pamenv.Pamtester):
    """A program on a pseudo-terminal: ``expect``, ``sendline``, ``interrupt`` (Ctrl-C),
    ``finish()`` (status and the whole terminal transcript), ``note(text)`` puts text of
    ours into the transcript. Killed at cleanup if still running."""

    def __init__(self, argv, env, timeout):
        super().__init__(argv, env, timeout)
        self._token = _undo.push(f"pty process {argv[0]}", self.kill)

    def note(self, text: str) -> None:
        self.transcript.write(text)

    def answer_passwords(self, prompt, answers, interrupt=False, timeout=15, end_timeout=15) -> int:
        """Types ``answers`` at ``prompt`` in turn, then waits for the end; one more prompt
        gets Ctrl-C, and is noted in the transcript as unexpected unless ``interrupt``.
        Returns how many prompts came."""
        import pexpect
        prompts = 0
        for answer in answers:
            self.expect(prompt, timeout=timeout)
            prompts += 1
            self.send_secret(answer, timeout=timeout)
        if self.expect([prompt, pexpect.EOF], timeout=end_timeout) == 0:
            prompts += 1
            self.give_up(end_timeout)
            if not interrupt:
                self.note("\n<unexpected password prompt: interrupted>\n")
        return prompts

    def give_up(self, timeout=15, again_after=2) -> None:
        """Ctrl-C at a password prompt, again every ``again_after`` seconds until the
        program ends (or ``timeout``; finish() then reports it). Once is not always enough,
        for a person either: sudo's password reader installs its signal handlers, writes
        the prompt and only then reads, and a SIGINT between the write and the read only
        sets a flag (its read waits for a key). A second one interrupts that read."""
        import pexpect
        deadline = time.monotonic() + timeout
        while True:
            if self.child.isalive():    # it may have ended just after the last wait
                self.interrupt()
            left = deadline - time.monotonic()
            if left <= 0 or self.expect([pexpect.EOF, pexpect.TIMEOUT],
                                        timeout=min(again_after, left)) == 0:
                return

    @property
    def output(self) -> str:
        return self.transcript.getvalue()

    def finish(self, timeout=30):
        try:
            return super().finish(timeout)
        finally:
            token, self._token = self._token, None
            _undo.run(token)


def default_env(**extra) -> dict:
    env = {"PATH": SAFE_PATH, "TERM": "dumb", "LANG": "C.UTF-8"}
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def as_user(user, argv: list) -> list:
    """argv run as ``user`` (a ThrowawayUser or a name): real and effective ids and groups."""
    if isinstance(user, ThrowawayUser):
        uid, gid = user.uid, user.gid
    else:
        pw = pwd.getpwnam(str(user))
        uid, gid = pw.pw_uid, pw.pw_gid
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups", "--", *argv]


def run_on_pty(argv: list, env: Optional[dict] = None, user=None, prefix: list = (),
               timeout: float = 20) -> PtyRun:
    """Starts ``argv`` on a new pseudo-terminal, as ``user`` if given (after ``prefix``,
    e.g. a PamServiceOverlay's, which runs as root)."""
    if user is not None:
        argv = as_user(user, argv)
    argv = [*prefix, *argv]
    return PtyRun(argv, env if env is not None else default_env(), timeout)
