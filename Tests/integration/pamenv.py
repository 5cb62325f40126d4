"""A private PAM world for integration tests, through pam_wrapper.

pam_wrapper (Debian `libpam-wrapper`) is preloaded into the program under test and makes
libpam read service files from a directory of ours; `pam_matrix.so` checks passwords of
made-up users from a file. Nothing on the machine is changed: everything lives in one
temporary directory that `close()` removes.

    with PamWorld() as world:
        world.add_user("alice", "secret")
        world.service("la-demo", [f"auth sufficient {MODULE} debug",
                                  f"auth required {world.matrix}"])
        run = world.pamtester("la-demo", "alice")    # pamtester on a pseudo-terminal
        run.expect("Password: ")
        run.sendline("secret")
        result = run.finish()                        # .status, .output, .logs
        result = world.drive("la-demo", "alice", answers=["secret"])  # exact PAM code

Log lines: pam_wrapper turns every pam_syslog/pam_vsyslog call into a line
`PWRAP_DEBUG[...] - SYSLOG(<priority>): <message>` on the program's stderr when
PAM_WRAPPER_DEBUGLEVEL is at least 2 (no syslog daemon or /dev/log needed). `drive()`
collects the driver's stderr; `pamtester()` keeps the terminal transcript (where stderr
goes too). Both return the lines as `LogLine`s (`parse_logs`).

Run as a script (`python3 pamenv.py --drive`), this file is the driver that `drive()`
starts: it calls libpam through ctypes with a scripted conversation.
"""
import ctypes
import dataclasses
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# LOCALAUTH_PAM_MODULE picks another build (e.g. build-asan/...); LOCALAUTH_PAM_PRELOAD is
# put in front of pam_wrapper in LD_PRELOAD (e.g. the sanitizer runtime that build needs).
MODULE = Path(os.environ.get("LOCALAUTH_PAM_MODULE")
              or REPO / "build" / "lib" / "security" / "pam_localauth.so")
EXTRA_PRELOAD = os.environ.get("LOCALAUTH_PAM_PRELOAD", "")
PYTHON = "/usr/bin/python3"  # the one with pypamtest, dbus, gi (Debian's packages)
PAM_HEADER = "/usr/include/security/_pam_types.h"


def _find_one(pattern):
    found = sorted(glob.glob(pattern))
    return found[0] if found else None


PAM_WRAPPER = _find_one("/usr/lib/*/libpam_wrapper.so") or "libpam_wrapper.so"
PAM_MATRIX = _find_one("/usr/lib/*/pam_wrapper/pam_matrix.so")

_SYSLOG = re.compile(r"SYSLOG\((\d+)\): (.*)")
_OUTCOME = re.compile(r'user="(?P<user>[^"]*)" service="(?P<service>[^"]*)" '
                      r'tty="(?P<tty>[^"]*)" rhost="(?P<rhost>[^"]*)" ruser="(?P<ruser>[^"]*)" '
                      r'result=(?P<result>\S+)(?: reason=(?P<reason>\S+))? pam=(?P<pam>\S+) '
                      r'cause="(?P<cause>[^"]*)"')


@dataclasses.dataclass(frozen=True)
class LogLine:
    """One pam_syslog call: syslog priority (LOG_ERR = 3 ... LOG_DEBUG = 7) and text."""
    priority: int
    message: str


def parse_logs(stderr_text):
    """The pam_syslog lines in a program's stderr under pam_wrapper."""
    return [LogLine(int(m.group(1)), m.group(2))
            for m in map(_SYSLOG.search, stderr_text.splitlines()) if m]


def outcomes(logs):
    """pam_localauth's summary lines as dicts: user, service, tty, rhost, ruser, result,
    reason (None when the line has none), pam, cause."""
    return [m.groupdict() for m in (_OUTCOME.search(l.message) for l in logs) if m]


def pam_constants(header=PAM_HEADER):
    """PAM_* names to values, read from Linux-PAM's own header."""
    consts = {}
    for m in re.finditer(r"^#define\s+(PAM_[A-Z_]+)\s+(0x[0-9A-Fa-f]+|\d+)U?\b",
                         Path(header).read_text(), re.M):
        consts.setdefault(m.group(1), int(m.group(2), 0))
    return consts


# Return codes, by name; values come from the header.
RETURN_CODES = ["PAM_SUCCESS", "PAM_OPEN_ERR", "PAM_SYMBOL_ERR", "PAM_SERVICE_ERR",
                "PAM_SYSTEM_ERR", "PAM_BUF_ERR", "PAM_PERM_DENIED", "PAM_AUTH_ERR",
                "PAM_CRED_INSUFFICIENT", "PAM_AUTHINFO_UNAVAIL", "PAM_USER_UNKNOWN",
                "PAM_MAXTRIES", "PAM_NEW_AUTHTOK_REQD", "PAM_ACCT_EXPIRED", "PAM_SESSION_ERR",
                "PAM_CRED_UNAVAIL", "PAM_CRED_EXPIRED", "PAM_CRED_ERR", "PAM_NO_MODULE_DATA",
                "PAM_CONV_ERR", "PAM_AUTHTOK_ERR", "PAM_ABORT", "PAM_IGNORE", "PAM_MODULE_UNKNOWN",
                "PAM_INCOMPLETE"]


@dataclasses.dataclass
class PamtesterResult:
    status: int        # pamtester's exit status (0: the operation succeeded)
    output: str        # the whole terminal transcript: prompts, messages, verdict, log lines
    logs: list         # LogLine


@dataclasses.dataclass
class DriveResult:
    rv: str            # the PAM return code's name, e.g. "PAM_AUTHINFO_UNAVAIL"
    acct_rv: str       # pam_acct_mgmt's code after a successful pam_authenticate (account=True)
    messages: list     # [style name, text] for every conversation message, in order
    times: dict        # monotonic seconds: "start" (pam_authenticate called), "messages"
                       # (one per message), "interrupt" (SIGINT sent, if it was)
    dispositions: dict # {"before"|"after": {signal name: [handler, flags]}}
    children: list     # child processes (pid, state) still there after pam_end
    logs: list         # LogLine
    stderr: str


class Pamtester:
    """pamtester on a pseudo-terminal (pexpect). Its stdout and stderr are both the
    terminal, as for a user: Linux-PAM's text conversation writes prompts to stderr, and
    pam_wrapper's log lines land there too; the transcript keeps all of it."""

    def __init__(self, argv, env, timeout):
        import io
        import pexpect
        self.transcript = io.StringIO()
        self.child = pexpect.spawn(argv[0], argv[1:], env=env, timeout=timeout,
                                   encoding="utf-8", codec_errors="replace")
        self.child.logfile_read = self.transcript

    def expect(self, pattern, timeout=-1):
        return self.child.expect(pattern, timeout=timeout)

    def sendline(self, text):
        self.child.sendline(text)

    def send_secret(self, text, timeout=15):
        """Types a password once the program reading it has turned the terminal's echo off.
        pam_misc's conversation and sudo turn it off with TCSAFLUSH, which throws away what
        was typed between the prompt and that call: typed at once, the password was lost
        now and then under load, and the program waited for it until the test's bound. A
        prompt that keeps echo on gets the text after ``timeout``, as before."""
        self.child.waitnoecho(timeout=timeout)
        self.child.sendline(text)

    def interrupt(self):
        """Ctrl-C on the terminal: SIGINT to its foreground process group."""
        self.child.sendintr()

    def wait_module_takes_ctrl_c(self, timeout=15):
        """Until pamtester catches SIGINT: the module catches it only while it waits on its
        helper (session.c), and a Ctrl-C before then is pamtester's own, which ends it. A
        wait on that state, where a fixed sleep would guess how long getting there takes."""
        deadline = time.monotonic() + timeout
        while not catches_sigint(self.child.pid):
            assert time.monotonic() < deadline, "the module never waited on its helper"
            time.sleep(0.01)

    def sendeof(self):
        self.child.sendeof()

    def finish(self, timeout=30):
        """Waits for pamtester to end; returns a PamtesterResult."""
        import pexpect
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.child.close()
        status = self.child.exitstatus
        if status is None:
            status = 128 + (self.child.signalstatus or 0)
        text = self.transcript.getvalue()
        return PamtesterResult(status, text, parse_logs(text))

    def kill(self):
        # A hang-up first (pexpect's terminate: SIGHUP, SIGCONT, SIGINT, then SIGKILL): a
        # shell passes it on to its jobs, which a SIGKILL to the shell alone would orphan.
        if self.child.isalive():
            self.child.terminate(force=True)
        end_child(self.child)


def end_child(child, timeout=20.0):
    """Closes a pexpect child for good: kills it and waits for it to be gone. pexpect gives
    a killed child 0.1 s and then raises "Could not terminate the child"; on a busy machine
    a killed child can take longer than that to exit (login, su, sudo and vlock still in a
    write behind a busy disk, seen under load)."""
    deadline = time.monotonic() + timeout
    while child.isalive() and time.monotonic() < deadline:
        child.kill(signal.SIGKILL)
        time.sleep(0.05)
    child.close(force=True)


class PamWorld:
    """Service files, password file and runners in one temporary directory."""

    def __init__(self, root=None, debuglevel=2):
        self.root = Path(root or tempfile.mkdtemp(prefix="localauth-pam-"))
        os.chmod(self.root, 0o755)  # readable by a run as another user
        self.services = self.root / "services"
        self.services.mkdir(exist_ok=True)
        self.passdb = self.root / "passdb"
        self.debuglevel = debuglevel
        self._users = {}
        self._service_names = set()
        self._pamtesters = []
        self.service("other", ["auth required pam_deny.so"])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for run in self._pamtesters:
            run.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def matrix(self):
        """The pam_matrix module with its arguments, for a service line."""
        return f"{PAM_MATRIX} passdb={self.passdb}"

    def add_user(self, user, password):
        """A made-up user pam_matrix accepts with password in every service of this world."""
        self._users[user] = password
        self._write_passdb()

    def service(self, name, lines):
        """Writes the service file `name` (lines like "auth required /abs/module.so args")."""
        (self.services / name).write_text("".join(line + "\n" for line in lines))
        self._service_names.add(name)
        self._write_passdb()
        return name

    def _write_passdb(self):
        rows = [f"{u}:{p}:{s}" for u, p in self._users.items() for s in sorted(self._service_names)]
        self.passdb.write_text("".join(r + "\n" for r in rows))
        os.chmod(self.passdb, 0o644)

    def preload_env(self):
        """The variables that put a program under pam_wrapper with this world's services."""
        env = {"LD_PRELOAD": PAM_WRAPPER, "PAM_WRAPPER": "1",
               "PAM_WRAPPER_SERVICE_DIR": str(self.services),
               "PAM_WRAPPER_DEBUGLEVEL": str(self.debuglevel)}
        if EXTRA_PRELOAD:
            # Sanitizer runtimes refuse libraries opened with RTLD_DEEPBIND, which
            # pam_wrapper uses unless told not to.
            env.update(LD_PRELOAD=f"{EXTRA_PRELOAD}:{PAM_WRAPPER}",
                       PAM_WRAPPER_DISABLE_DEEPBIND="1")
        return env

    def command(self, argv, prefix=(), env=None):
        """argv under pam_wrapper, behind `prefix` (e.g. setpriv ...) which runs without it."""
        pairs = {**self.preload_env(), **(env or {})}
        return [*prefix, "/usr/bin/env", *(f"{k}={v}" for k, v in pairs.items()), *argv]

    def _base_env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("LD_PRELOAD", "PAM_WRAPPER"))}
        env.setdefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        return env

    def pamtester(self, service, user, operation="authenticate", *, items=None, pam_env=None,
                  flags=None, env=None, prefix=(), timeout=20):
        """Starts pamtester; items: {"rhost": ..., "tty": ...}; flags: e.g. "PAM_SILENT".
        operation: one pamtester operation, or several in turn in the same handle
        (("authenticate", "acct_mgmt"), as sudo and login call them)."""
        ops = [operation] if isinstance(operation, str) else list(operation)
        ops = [f"{op}({flags})" if flags else op for op in ops]
        args = ["pamtester"]
        for k, v in (items or {}).items():
            args += ["-I", f"{k}={v}"]
        for k, v in (pam_env or {}).items():
            args += ["-E", f"{k}={v}"]
        args += [service, user, *ops]
        run = Pamtester(self.command(args, prefix, env), self._base_env(), timeout)
        self._pamtesters.append(run)
        return run

    def _copy_lost(self, proc, service) -> bool:
        """Whether pam_wrapper lost its copy of this world's service files before pam_start.
        It copies them at start to /tmp/pam.<one character>; two processes starting together
        can end up in the same directory, and the first to end removes it under the other,
        whose pam_start then finds no service file, not even `other` (seen in a fresh-clone
        run, with eight transactions started at once beside other workers). Nothing of ours has run then,
        so the driver is started again."""
        return (proc.returncode != 0 and "pam_start failed" in proc.stderr
                and "error reading PAM configuration file" in proc.stderr
                and (self.services / service).is_file())

    def _driver_script(self) -> Path:
        """This file, copied into the world's 0755 directory: a driver run as another user
        (a `prefix` with setpriv) must be able to read it wherever the checkout lives
        (/root or a 0700 temporary directory)."""
        script = self.root / "pamenv_driver.py"
        if not script.exists():
            shutil.copy(Path(__file__).resolve(), script)
            script.chmod(0o644)
        return script

    def drive(self, service, user, *, answers=(), items=None, pam_env=None, flags=(),
              interrupt_on=None, interrupt_delay=0.3, answer_delay=0.0, ignore_signals=(),
              inheritable_fd=False, real_uid=None, env=None, prefix=(), timeout=60,
              account=False, cgroup=None):
        """Runs pam_authenticate in a fresh process and returns a DriveResult.

        user None starts PAM without a user. answers are given to prompts in order (then
        the conversation fails). flags are names ("PAM_SILENT"). interrupt_on: send SIGINT
        to the process interrupt_delay seconds after a message containing this text, and
        once the module has its handler for it (it waits on its helper then).
        answer_delay: seconds to wait before each answer. ignore_signals: names of signals
        ("SIGCHLD", "SIGINT", ...) set to SIG_IGN before PAM starts. inheritable_fd: open
        /dev/null without close-on-exec first, as a careless application would, so a test
        can see whether it leaks.
        real_uid: set only the real uid before PAM starts, as setuid sudo runs (ruid the
        user, euid root). It has to happen inside the process: a program exec'd with
        ruid != euid runs in secure mode, where the loader ignores LD_PRELOAD, and then
        libpam would read /etc/pam.d instead of this world.
        prefix: a command to run the driver under, e.g. setpriv with the same uid for
        real and effective.
        account: after a successful pam_authenticate, call pam_acct_mgmt in the same handle,
        as sudo, su and login do (its code is `acct_rv`; "" when not called); "always": call
        it whatever pam_authenticate answered, as sshd does once a public key let the user in
        after a wrong password.
        cgroup: a cgroup directory the driver moves itself into first (where logind would
        put a login session's processes).
        """
        spec = drive_spec(service, user, answers=answers, items=items, pam_env=pam_env,
                          flags=flags, interrupt_on=interrupt_on,
                          interrupt_delay=interrupt_delay, answer_delay=answer_delay,
                          ignore_signals=ignore_signals, inheritable_fd=inheritable_fd,
                          real_uid=real_uid, account=account, cgroup=cgroup)
        argv = self.command([PYTHON, str(self._driver_script()), "--drive"], prefix, env)
        for _ in range(3):
            proc = subprocess.run(argv, input=json.dumps(spec), capture_output=True, text=True,
                                  env=self._base_env(), timeout=timeout)
            if not self._copy_lost(proc, service):
                break
        if proc.returncode != 0:
            raise RuntimeError(f"driver failed ({proc.returncode}): {proc.stderr[-2000:]}")
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        return DriveResult(out["rv"], out["acct_rv"], out["messages"], out["times"],
                           out["dispositions"], out["children"],
                           parse_logs(proc.stderr), proc.stderr)


def drive_spec(service, user, *, answers=(), items=None, pam_env=None, flags=(),
               interrupt_on=None, interrupt_delay=0.3, answer_delay=0.0, ignore_signals=(),
               inheritable_fd=False, real_uid=None, account=False, cgroup=None) -> dict:
    """What the driver (``pamenv.py --drive``, JSON on its stdin) is to do: the options of
    ``PamWorld.drive``, for a driver that a test runs itself (in a namespace of its own)."""
    return dict(service=service, user=user, answers=list(answers), items=items or {},
                pam_env=pam_env or {}, flags=list(flags), interrupt_on=interrupt_on,
                interrupt_delay=interrupt_delay, answer_delay=answer_delay,
                ignore_signals=list(ignore_signals), inheritable_fd=inheritable_fd,
                real_uid=real_uid, account=account, cgroup=cgroup)


# ---------------------------------------------------------------------------------------
# The driver: runs inside the process under pam_wrapper.

class _PamMessage(ctypes.Structure):
    _fields_ = [("msg_style", ctypes.c_int), ("msg", ctypes.c_char_p)]


class _PamResponse(ctypes.Structure):
    _fields_ = [("resp", ctypes.c_void_p), ("resp_retcode", ctypes.c_int)]


_CONV_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int,
                            ctypes.POINTER(ctypes.POINTER(_PamMessage)),
                            ctypes.POINTER(ctypes.POINTER(_PamResponse)), ctypes.c_void_p)


class _PamConv(ctypes.Structure):
    _fields_ = [("conv", _CONV_FN), ("appdata_ptr", ctypes.c_void_p)]


class _Sigaction(ctypes.Structure):
    # glibc's struct sigaction on Linux: handler, 1024-bit mask, flags, restorer.
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ubyte * 128),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


def catches_sigint(pid) -> bool:
    """Whether process ``pid`` has a handler for SIGINT (/proc/PID/status, SigCgt)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)
    raise RuntimeError(f"no SigCgt line for pid {pid}")


def _sigint_handler(libc):
    sa = _Sigaction()
    libc.sigaction(int(signal.SIGINT), None, ctypes.byref(sa))
    return sa.handler or 0


def _dispositions(libc):
    out = {}
    for sig in (signal.SIGINT, signal.SIGCHLD, signal.SIGPIPE):
        sa = _Sigaction()
        libc.sigaction(int(sig), None, ctypes.byref(sa))
        out[sig.name] = [sa.handler or 0, sa.flags]
    return out


def _children():
    me = str(os.getpid())
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            found.append([int(stat.split("/")[2]), fields[0]])
    return found


def _drive_main():
    spec = json.load(sys.stdin)
    consts = pam_constants()
    names = {consts[n]: n for n in RETURN_CODES if n in consts}
    styles = {consts[n]: n for n in ("PAM_PROMPT_ECHO_OFF", "PAM_PROMPT_ECHO_ON",
                                     "PAM_ERROR_MSG", "PAM_TEXT_INFO")}
    libc = ctypes.CDLL(None, use_errno=True)
    ctypes.CDLL("libpam.so.0", mode=ctypes.RTLD_GLOBAL)
    pam = ctypes.CDLL(None)  # the global scope: pam_wrapper's preloaded symbols come first
    libc.calloc.restype = ctypes.c_void_p
    libc.strdup.restype = ctypes.c_void_p
    libc.strdup.argtypes = [ctypes.c_char_p]

    if spec["cgroup"]:
        Path(spec["cgroup"], "cgroup.procs").write_text(f"{os.getpid()}\n")
    if spec["inheritable_fd"]:
        os.set_inheritable(os.open("/dev/null", os.O_RDONLY), True)
    if spec["real_uid"] is not None:
        os.setresuid(spec["real_uid"], -1, -1)
    for name in spec["ignore_signals"]:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    before = _dispositions(libc)
    messages, answers = [], list(spec["answers"])
    times = {"messages": []}

    def interrupt():
        # The module catches SIGINT only while it waits on its helper (session.c); sent
        # before then, it would be this process's own (a KeyboardInterrupt in the next
        # conversation). So the signal waits for the module's handler, however long
        # getting there takes; an ignored SIGINT stays ignored (the module installs none).
        if before["SIGINT"][0] != int(signal.SIG_IGN):
            deadline = time.monotonic() + 30
            while _sigint_handler(libc) == before["SIGINT"][0] and time.monotonic() < deadline:
                time.sleep(0.005)
        times["interrupt"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    def conv(n, msgs, resp, _appdata):
        replies = libc.calloc(n, ctypes.sizeof(_PamResponse))
        array = ctypes.cast(replies, ctypes.POINTER(_PamResponse))
        for i in range(n):
            style = msgs[i].contents.msg_style
            text = msgs[i].contents.msg.decode(errors="replace")
            messages.append([styles.get(style, str(style)), text])
            times["messages"].append(time.monotonic())
            if spec["interrupt_on"] and spec["interrupt_on"] in text:
                threading.Timer(spec["interrupt_delay"], interrupt).start()
            if style in (consts["PAM_PROMPT_ECHO_OFF"], consts["PAM_PROMPT_ECHO_ON"]):
                if not answers:
                    libc.free(ctypes.c_void_p(replies))
                    return consts["PAM_CONV_ERR"]
                time.sleep(spec["answer_delay"])
                array[i].resp = libc.strdup(answers.pop(0).encode())
        resp[0] = array
        return consts["PAM_SUCCESS"]

    conv_struct = _PamConv(_CONV_FN(conv), None)
    handle = ctypes.c_void_p()
    user = spec["user"].encode() if spec["user"] is not None else None
    rc = pam.pam_start(spec["service"].encode(), user, ctypes.byref(conv_struct),
                       ctypes.byref(handle))
    if rc != consts["PAM_SUCCESS"]:
        raise SystemExit(f"pam_start failed: {rc}")
    for item, value in spec["items"].items():
        pam.pam_set_item(handle, consts["PAM_" + item.upper()], value.encode())
    for key, value in spec["pam_env"].items():
        pam.pam_putenv(handle, f"{key}={value}".encode())
    flags = 0
    for f in spec["flags"]:
        flags |= consts[f]
    times["start"] = time.monotonic()
    rv = pam.pam_authenticate(handle, flags)
    acct_rv = None
    if spec["account"] == "always" or (spec["account"] and rv == consts["PAM_SUCCESS"]):
        acct_rv = pam.pam_acct_mgmt(handle, flags)
    pam.pam_end(handle, rv if acct_rv is None else acct_rv)
    after = _dispositions(libc)
    print(json.dumps(dict(rv=names.get(rv, str(rv)),
                          acct_rv="" if acct_rv is None else names.get(acct_rv, str(acct_rv)),
                          messages=messages, times=times,
                          dispositions={"before": before, "after": after},
                          children=_children())))


if __name__ == "__main__" and sys.argv[1:] == ["--drive"]:
    _drive_main()
