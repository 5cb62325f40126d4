"""The real OpenSSH of Debian and git around an ssh-agent socket, for the SSH agent's tests
(test_ssh_agent.py, test_git_signing.py) and scripts/bench.

Everything is the test's own and goes on every exit path; nothing of the machine's SSH set-up
(/etc/ssh, its host keys, its service) is used or touched:

* ``Sshd(user)``: ``/usr/sbin/sshd -D -e -f CONFIG`` on 127.0.0.1 on a free port, with an
  ed25519 host key made for it, ``AuthorizedKeysFile`` in its directory (root-owned, one
  file per user), public keys only, no PAM, ``AllowUsers`` the test's user; started with
  its PID recorded and stopped by that PID (and the connections it forked, found below it
  before the stop); its directory removed. ``authorize(line)``, ``host_key`` (the public
  line), ``host_fingerprint`` (``SHA256:...``), ``host_private`` (the key file), ``port``,
  ``log()``.
* ``SshHome(user, sshd, agent_socket)``: the user's home (``/home/USER``, which
  ``system.ThrowawayUser``'s removal takes away) with ``~/.ssh/config`` of one host,
  ``la-sshbed`` (127.0.0.1, the port, ``HostKeyAlias la-sshbed``), and the one line a user
  writes to opt in: ``IdentityAgent SOCKET``; ``~/.ssh/known_hosts`` with the host key
  under that name. ``on_pty(argv)`` runs a program as the user on a pseudo-terminal that
  is the user's own (``own_terminal``: the agent asks there, and only on a terminal the
  user owns); ``ssh_argv``, ``keygen_sign_argv``, ``git_signing_argv`` make the argvs;
  ``ssh_add_list()``, ``git(...)`` run without one.
* ``OpenSshAgent(user)``: OpenSSH's own ``ssh-agent -D -a SOCKET`` as the user (its PID
  recorded, stopped by it), with an ecdsa-sha2-nistp256 key added: the control the bed is
  proved with, and the bench's counterpart.
* ``AgentClient``: the ssh-agent protocol spoken by a program of the test's own as the
  user (``python3 sshbed.py client SOCKET``, commands on stdin, one JSON line per answer):
  list, sign (SSHSIG data of a namespace, N times on one connection), session-bind with a
  signature of the test's choosing, raw messages.
* ``sshsig_data(namespace, message)``, ``session_bind(...)``, ``ed25519_sign(...)``.
* ``AgentMachine(inst, bed)``: a ``sudo_machine.Machine`` (a throwaway user with a finger
  enrolled, a localauthd of its own, sudo through it) whose localauthd also serves the
  ssh-agent protocol (``agent_socket``), the user's password entered once, an ``Sshd`` and
  an ``SshHome`` whose ``IdentityAgent`` is that socket; ``ctl_ssh(...)`` runs
  ``localauthctl ssh`` as the user against that localauthd, ``create_key(...)`` makes a key
  (and authorizes it at the sshd), ``present(pt, print)`` a finger once the terminal asks.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

SSHD = "/usr/sbin/sshd"
HOST = "la-sshbed"                 # the one host of the client's configuration
SAFE_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
STARTED_WITHIN = 15

# ssh-agent protocol (draft-miller-ssh-agent)
FAILURE, SUCCESS = 5, 6
REQUEST_IDENTITIES, IDENTITIES_ANSWER = 11, 12
SIGN_REQUEST, SIGN_RESPONSE = 13, 14
EXTENSION = 27


# ---- the wire ---------------------------------------------------------------------------

def string(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def read_string(buf: bytes, at: int) -> tuple[bytes, int]:
    (n,) = struct.unpack_from(">I", buf, at)
    return buf[at + 4:at + 4 + n], at + 4 + n


def blob_of(line: str) -> bytes:
    """The key blob of an OpenSSH public key line (``TYPE BASE64 [COMMENT]``)."""
    import base64
    return base64.b64decode(line.split()[1])


def sshsig_data(namespace: str, message: bytes) -> bytes:
    """What ssh-keygen -Y sign asks an agent to sign (PROTOCOL.sshsig): the magic, the
    namespace, a reserved string, the hash algorithm and the message's hash."""
    return (b"SSHSIG" + string(namespace.encode()) + string(b"") + string(b"sha512")
            + string(hashlib.sha512(message).digest()))


def session_bind(host_blob: bytes, session_id: bytes, signature: bytes, forwarding: bool) -> bytes:
    """SSH_AGENTC_EXTENSION session-bind@openssh.com (PROTOCOL.agent)."""
    return (bytes([EXTENSION]) + string(b"session-bind@openssh.com") + string(host_blob)
            + string(session_id) + string(signature) + bytes([1 if forwarding else 0]))


def userauth_data(session_id: bytes, user: str, key_blob: bytes, host_blob: bytes) -> bytes:
    """What ssh asks an agent to sign to log in (RFC 4252 7, OpenSSH's host-bound method)."""
    return (string(session_id) + bytes([50]) + string(user.encode()) + string(b"ssh-connection")
            + string(b"publickey-hostbound-v00@openssh.com") + bytes([1])
            + string(b"ecdsa-sha2-nistp256") + string(key_blob) + string(host_blob))


def ed25519_sign(private_key_path: Path, data: bytes) -> bytes:
    """An ssh-ed25519 signature blob over ``data`` by an OpenSSH private key file."""
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key
    key = load_ssh_private_key(Path(private_key_path).read_bytes(), password=None)
    return string(b"ssh-ed25519") + string(key.sign(data))


# ---- sshd of the test's own ---------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


class Sshd:
    """See the module docstring."""

    def __init__(self, user):
        self.user = user
        self.proc = None
        self.dir = Path(tempfile.mkdtemp(prefix="localauth-sshd-", dir="/run"))
        try:
            self._make()
            self._start()
        except BaseException:
            self.close()
            raise

    def _make(self):
        self.dir.chmod(0o755)               # StrictModes: root's, writable by root only
        key = self.dir / "host_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "localauth-test-host",
                        "-f", str(key)], check=True, capture_output=True)
        self.host_private = key
        self.host_key = (self.dir / "host_ed25519.pub").read_text().strip()
        # "SHA256:..." as ssh-keygen -l prints it (the prompt names the destination by it).
        self.host_fingerprint = subprocess.run(["ssh-keygen", "-l", "-f", f"{key}.pub"], check=True,
                                               capture_output=True, text=True).stdout.split()[1]
        self.keys = self.dir / "authorized_keys"
        self.keys.mkdir(mode=0o755)
        self.authorized = self.keys / self.user.name
        self.authorized.write_text("")
        self.authorized.chmod(0o644)
        self.config = self.dir / "sshd_config"
        self.logfile = self.dir / "sshd.log"
        # sshd's privilege separation directory, compiled in; the package's unit makes it
        # (RuntimeDirectory), where no systemd runs nothing does. Made if missing, left
        # (empty, as the unit leaves it): another test's sshd may be using it.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)

    def _write_config(self):
        self.config.write_text("\n".join([
            "ListenAddress 127.0.0.1", f"Port {self.port}",
            f"HostKey {self.host_private}", f"PidFile {self.dir / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.keys}/%u", "AuthorizedPrincipalsFile none",
            "AuthenticationMethods publickey", "PubkeyAuthentication yes",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
            "HostbasedAuthentication no", "PermitRootLogin no", f"AllowUsers {self.user.name}",
            "AllowAgentForwarding yes", "AllowTcpForwarding no", "X11Forwarding no",
            "PermitUserEnvironment no", "StrictModes yes", "PrintMotd no", "PrintLastLog no",
            "Banner none", "LogLevel VERBOSE", "MaxAuthTries 6", "LoginGraceTime 60",
            "Subsystem sftp internal-sftp", ""]))
        self.config.chmod(0o600)

    def _start(self):
        for _ in range(5):          # a free port taken between the probe and sshd's bind
            self.port = free_port()
            self._write_config()
            subprocess.run([SSHD, "-t", "-f", str(self.config)], check=True, capture_output=True)
            self.log_handle = open(self.logfile, "ab")
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stdin=subprocess.DEVNULL,
                                         stdout=self.log_handle, stderr=subprocess.STDOUT,
                                         env={"PATH": SAFE_PATH})
            deadline = time.monotonic() + STARTED_WITHIN
            while self.proc.poll() is None and time.monotonic() < deadline:
                if "Server listening on 127.0.0.1" in self.log():
                    return
                time.sleep(0.05)
            self.stop()
            if "Address already in use" not in self.log():
                raise RuntimeError(f"sshd did not start: {self.log()[-2000:]}")
        raise RuntimeError("sshd found no free port")

    def log(self) -> str:
        try:
            return self.logfile.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def authorize(self, line: str) -> None:
        """``line`` (an OpenSSH public key) may log in as the user."""
        with open(self.authorized, "a") as f:
            f.write(line.strip() + "\n")

    def stop(self):
        """sshd by its PID, then what it forked for connections (found before the stop)."""
        if self.proc is None:
            return
        below = descendants(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in below:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc = None
        self.log_handle.close()

    def close(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- the user's side --------------------------------------------------------------------

def user_env(user, **more) -> dict:
    home = pwd.getpwnam(user.name).pw_dir
    env = {"PATH": SAFE_PATH, "TERM": "dumb", "LANG": "C.UTF-8", "HOME": home, "USER": user.name,
           "LOGNAME": user.name}
    env.update({k: v for k, v in more.items() if v is not None})
    return env


def own_terminal(user) -> list:
    """An argv prefix (run as root, on the new pseudo-terminal) that gives the terminal to
    ``user`` before the program starts, as sshd, login and a terminal emulator running as the
    user leave it: the agent's prompt goes only to a terminal the requester's user owns."""
    return ["sh", "-c", 'chown "$0" "$(tty)" && exec "$@"', str(user.uid)]


def as_user(user, argv) -> list:
    return ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--", *argv]


def run_as(user, argv, env=None, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 60)
    return subprocess.run(as_user(user, argv), env=env or user_env(user), stdin=subprocess.DEVNULL, **kw)


class SshHome:
    """See the module docstring. ``agent_socket``: what ``IdentityAgent`` names (and
    ``SSH_AUTH_SOCK`` for ssh-keygen and git, which read no ssh configuration)."""

    def __init__(self, user, sshd: Sshd, agent_socket):
        self.user, self.sshd = user, sshd
        self.home = Path(pwd.getpwnam(user.name).pw_dir)
        if self.home.exists():
            raise RuntimeError(f"{self.home} exists: not a throwaway user's")
        # Removed with the user (system._remove_user takes /home/USER when it is theirs).
        self.home.mkdir(mode=0o700)
        os.chown(self.home, user.uid, user.gid)
        self.ssh_dir = self.mkdir(".ssh")
        self.known_hosts = self.ssh_dir / "known_hosts"
        self.write(self.known_hosts, f"{HOST} {sshd.host_key}\n")
        self.use_agent(agent_socket)

    def mkdir(self, rel: str) -> Path:
        d = self.home / rel
        d.mkdir(mode=0o700)
        os.chown(d, self.user.uid, self.user.gid)
        return d

    def write(self, path: Path, text: str, mode=0o600) -> Path:
        path.write_text(text)
        path.chmod(mode)
        os.chown(path, self.user.uid, self.user.gid)
        return path

    def use_agent(self, agent_socket) -> None:
        """~/.ssh/config for the one host, with the opt-in line naming ``agent_socket``."""
        self.agent_socket = str(agent_socket)
        self.write(self.ssh_dir / "config", "\n".join([
            f"IdentityAgent {self.agent_socket}",
            f"Host {HOST}", "  HostName 127.0.0.1", f"  Port {self.sshd.port}",
            f"  User {self.user.name}", f"  HostKeyAlias {HOST}", "  IdentityFile none",
            "  StrictHostKeyChecking yes", "  GlobalKnownHostsFile /dev/null",
            "  PreferredAuthentications publickey", "  PasswordAuthentication no",
            "  KbdInteractiveAuthentication no", "  ControlMaster no", "  ControlPath none",
            "  UpdateHostKeys no", "  LogLevel ERROR", ""]))

    def env(self, **more) -> dict:
        return user_env(self.user, SSH_AUTH_SOCK=self.agent_socket, **more)

    # -- programs -------------------------------------------------------------------------

    def ssh_argv(self, command="true", *options) -> list:
        return ["ssh", *options, HOST, command]

    def on_pty(self, argv, timeout=30):
        """``argv`` as the user on a pseudo-terminal of its own (the agent's prompt comes there)."""
        import system
        return system.run_on_pty(list(argv), env=self.env(), user=self.user, timeout=timeout,
                                 prefix=own_terminal(self.user))

    def ssh_add_list(self) -> subprocess.CompletedProcess:
        return run_as(self.user, ["ssh-add", "-L"], env=self.env())

    def data_file(self, name="message.txt", text="a file the test signs\n") -> Path:
        return self.write(self.home / name, text, 0o644)

    def pubkey_file(self, line: str, name="signing.pub") -> Path:
        return self.write(self.home / name, line.strip() + "\n", 0o644)

    def keygen_sign_argv(self, pubkey_file: Path, data: Path, namespace="file") -> list:
        """ssh-keygen -Y sign with the key in the agent named by its public key file."""
        return ["ssh-keygen", "-Y", "sign", "-n", namespace, "-f", str(pubkey_file), str(data)]

    def verify_sshsig(self, line: str, data: Path, namespace="file", principal="tester") -> subprocess.CompletedProcess:
        signers = self.write(self.home / "verify_signers", f"{principal} {' '.join(line.split()[:2])}\n", 0o644)
        with open(data, "rb") as f:
            return subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", principal,
                                   "-n", namespace, "-s", f"{data}.sig"], stdin=f, capture_output=True,
                                  text=True, timeout=30)

    # -- git ------------------------------------------------------------------------------

    def git_repo(self, name="repo") -> Path:
        repo = self.mkdir(name)
        out = run_as(self.user, ["git", "init", "-q", "-b", "main", str(repo)], env=self.env())
        if out.returncode != 0:
            raise RuntimeError(f"git init: {out.stderr}")
        return repo

    def git_signing_argv(self, repo: Path, signing_key: str, *args) -> list:
        """git in ``repo`` with SSH signing by ``signing_key`` (``key::LINE`` or a file)."""
        return ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=tester@example.org",
                "-c", "gpg.format=ssh", "-c", f"user.signingkey={signing_key}", *args]

    def git(self, repo: Path, *args, allowed_signers: Path = None) -> subprocess.CompletedProcess:
        extra = ["-c", f"gpg.ssh.allowedSignersFile={allowed_signers}"] if allowed_signers else []
        return run_as(self.user, ["git", "-C", str(repo), *extra, *args], env=self.env())


# ---- OpenSSH's own agent: the control ---------------------------------------------------------

class OpenSshAgent:
    """``ssh-agent -D -a SOCKET`` as the user, with an ecdsa-sha2-nistp256 key made for it and
    added (``public``: its line); stopped by its PID."""

    def __init__(self, user, where: Path):
        self.user = user
        self.dir = Path(tempfile.mkdtemp(prefix="agent-", dir=where))
        os.chown(self.dir, user.uid, user.gid)
        self.socket = self.dir / "agent.sock"
        self.proc = subprocess.Popen(as_user(user, ["ssh-agent", "-D", "-a", str(self.socket)]),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=user_env(user))
        try:
            deadline = time.monotonic() + STARTED_WITHIN
            while not self.socket.exists():
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("ssh-agent did not start")
                time.sleep(0.02)
            key = self.dir / "id_ecdsa"
            run_as(user, ["ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "openssh-agent-key",
                          "-f", str(key)], check=True)
            run_as(user, ["ssh-add", "-q", str(key)], env=user_env(user, SSH_AUTH_SOCK=str(self.socket)),
                   check=True)
            self.public = Path(f"{key}.pub").read_text().strip()
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- a client of the test's own ------------------------------------------------------------

class AgentClient:
    """``python3 sshbed.py client SOCKET`` as the user on a pseudo-terminal (a prompt the
    agent shows comes there), one connection held for its life. Each method sends one
    command line and returns the JSON answer line."""

    def __init__(self, home: SshHome, socket_path=None):
        import system
        self.pt = system.run_on_pty(["/usr/bin/python3", "-u", str(Path(__file__).resolve()), "client",
                                     str(socket_path or home.agent_socket)],
                                    env=home.env(), user=home.user, timeout=60, prefix=own_terminal(home.user))
        self.pt.expect("CLIENT-READY")

    def ask(self, *words, timeout=60) -> dict:
        self.pt.sendline(" ".join(str(w) for w in words))
        self.pt.expect(r"ANSWER (\{[^\r\n]*\})\r?\n", timeout=timeout)
        return json.loads(self.pt.child.match.group(1))

    def send(self, *words) -> None:
        """A command whose answer the test does not wait for (it acts meanwhile)."""
        self.pt.sendline(" ".join(str(w) for w in words))

    @property
    def pid(self) -> int:
        return self.pt.child.pid

    def close(self):
        self.pt.kill()


def _client(sock_path: str) -> None:
    """The client's side: commands on stdin, ``ANSWER {json}`` lines on stdout.

    list                           -> {"keys": [[blob hex, comment], ...]} or {"reply": code}
    sign BLOBHEX NAMESPACE N [FLAGS] -> N sign requests of SSHSIG data on this connection:
                                      {"ok": n, "replies": [codes...], "signature": last hex}
    bind HOSTHEX SESSIONHEX SIGHEX 0|1 -> {"reply": code}
    signdata BLOBHEX DATAHEX       -> {"reply": code}: one sign request of that data
    raw HEX                        -> {"reply": code, "body": hex}
    """
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)

    def call(body: bytes) -> bytes:
        s.sendall(frame(body))
        head = _read_exactly(s, 4)
        (n,) = struct.unpack(">I", head)
        return _read_exactly(s, n)

    def answer(obj):
        print("ANSWER " + json.dumps(obj), flush=True)

    print("CLIENT-READY", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "list":
                reply = call(bytes([REQUEST_IDENTITIES]))
                if reply[0] != IDENTITIES_ANSWER:
                    answer({"reply": reply[0]})
                    continue
                (count,) = struct.unpack_from(">I", reply, 1)
                at, keys = 5, []
                for _ in range(count):
                    blob, at = read_string(reply, at)
                    comment, at = read_string(reply, at)
                    keys.append([blob.hex(), comment.decode(errors="replace")])
                answer({"keys": keys})
            elif words[0] == "sign":
                blob, namespace, n = bytes.fromhex(words[1]), words[2], int(words[3])
                flags = int(words[4]) if len(words) > 4 else 0
                replies, last = [], b""
                for i in range(n):
                    data = sshsig_data(namespace, f"message {i}\n".encode())
                    reply = call(bytes([SIGN_REQUEST]) + string(blob) + string(data) + struct.pack(">I", flags))
                    replies.append(reply[0])
                    if reply[0] == SIGN_RESPONSE:
                        last, _ = read_string(reply, 1)
                answer({"ok": replies.count(SIGN_RESPONSE), "replies": sorted(set(replies)),
                        "signature": last.hex()})
            elif words[0] == "bind":
                host, session, sig = (bytes.fromhex(w) for w in words[1:4])
                reply = call(session_bind(host, session, sig, words[4] == "1"))
                answer({"reply": reply[0]})
            elif words[0] == "signdata":
                blob, data = bytes.fromhex(words[1]), bytes.fromhex(words[2])
                reply = call(bytes([SIGN_REQUEST]) + string(blob) + string(data) + struct.pack(">I", 0))
                answer({"reply": reply[0]})
            elif words[0] == "raw":
                reply = call(bytes.fromhex(words[1]))
                answer({"reply": reply[0], "body": reply.hex()})
            else:
                answer({"error": f"unknown command {words[0]}"})
        except (OSError, ValueError, IndexError, struct.error) as exc:
            answer({"error": f"{type(exc).__name__}: {exc}"})


def _read_exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the agent closed the connection")
        out += chunk
    return out


# ---- the product around it -------------------------------------------------------------------

def create_args(name, requirement="biometry", reuse=0, forwarding=False) -> list:
    """``localauthctl ssh`` arguments that create a key with this policy (one place)."""
    return ["create", name, "--requirement", requirement, "--reuse", str(reuse),
            *(["--allow-forwarding"] if forwarding else [])]


def _machine_class():
    # Imported when a test asks for it: sudo_machine brings the bed (GLib, D-Bus), which the
    # client below, run as the throwaway user by this same file, neither needs nor may load.
    from sudo_machine import Machine   # noqa: E402

    class AgentMachine(Machine):
        """See the module docstring."""

        localauthd_options = {"agent": True}

        def _setup(self):
            super()._setup()
            self.agent_socket = self.localauthd.agent_socket
            self.first_password()
            self.sshd = self.enter_context(Sshd(self.user))
            self.home = SshHome(self.user, self.sshd, self.agent_socket)

        def ctl_ssh(self, *args, check=True, user=None) -> subprocess.CompletedProcess:
            """``localauthctl ssh ARGS`` as the user (or ``user``), against this localauthd."""
            user = user or self.user
            out = run_as(user, [str(self.inst.ctl), "ssh", *args],
                         env=user_env(user, LOCALAUTH_SERVICE=str(self.localauthd.socket)))
            if check and out.returncode != 0:
                raise AssertionError(f"localauthctl ssh {' '.join(args)}: {out.returncode}\n{out.stdout}{out.stderr}")
            return out

        def create_key(self, name, requirement="biometry", reuse=0, forwarding=False, authorize=True) -> str:
            """A key of the user's (the policy's words in one place); its public line."""
            self.ctl_ssh(*create_args(name, requirement, reuse, forwarding))
            line = self.ctl_ssh("public-key", name).stdout.strip()
            if authorize:
                self.sshd.authorize(line)
            return line

        def uses(self) -> list:
            """``localauthctl ssh log --json``: the last uses and refusals, oldest first, as
            (outcome, what) pairs (the key's creation is the first)."""
            import json as _json
            return [(u["outcome"], u["what"]) for u in reversed(_json.loads(self.ctl_ssh("log", "--json").stdout)["uses"])]

        def allowed_signers(self, name, principal="tester@example.org") -> str:
            return self.ctl_ssh("allowed-signers", name, "--principal", principal).stdout.strip()

        def present(self, pt, print_id, timeout=20) -> str:
            """A finger once the terminal asks for one (the agent's prompt on the
            requester's terminal); the reader's result."""
            import pexpect
            from terminal_finger import ASK_FINGER
            try:
                pt.expect(ASK_FINGER, timeout=timeout)
            except (pexpect.EOF, pexpect.TIMEOUT):
                raise AssertionError(f"no finger asked for; the terminal:\n{pt.output}\n{self.service_lines()}") from None
            return self.bed.reader.inject(f"SCAN {print_id}", timeout=timeout)

        def service_lines(self) -> str:
            """localauthd's and its helpers' lines so far (for a failure's message)."""
            return "localauthd and helpers:\n" + "\n".join(f"{i}: {m}" for i, m in self.localauthd.syslog.lines)

        def serving_helpers(self) -> list:
            return self.localauthd.helpers()

    return AgentMachine


def AgentMachine(*args, **kw):
    return _machine_class()(*args, **kw)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "client":
        _client(sys.argv[2])
    else:
        raise SystemExit("usage: sshbed.py client SOCKET")
