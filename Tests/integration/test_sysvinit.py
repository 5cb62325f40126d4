"""The init script for a machine without systemd (`etc/init.d/localauth`, shipped as an
example): it starts the built localauthd with `--listen` and `--agent-listen`, which answers
on both sockets as root, reports its status, and stops exactly that process, which removes
its socket files. The script runs as written; only its paths are moved into a directory of
the test's own, so nothing of the machine's (/run/localauth and its ssh-agent socket,
/var/lib/localauth, a pid file) is touched."""
import os
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "etc" / "init.d" / "localauth"
SERVICE = (REPO / "build" / "libexec" / "localauth" / "localauthd").resolve()

pytestmark = pytest.mark.skipif(not SERVICE.is_file(), reason="localauthd not built (scripts/build)")


def moved(script: str, root: Path) -> str:
    """The script with each of its paths under `root`; every one must have been there."""
    out = script
    for old, new in (("DAEMON=/usr/libexec/localauth/localauthd", f"DAEMON={SERVICE}"),
                     ("SOCKET=/run/localauth/socket", f"SOCKET={root}/run/socket"),
                     ("AGENT_SOCKET=/run/localauth/ssh-agent", f"AGENT_SOCKET={root}/run/ssh-agent"),
                     ("PIDFILE=/run/localauth.pid", f"PIDFILE={root}/localauthd.pid"),
                     ("/run/localauth\n", f"{root}/run\n"),
                     ("/var/lib/localauth\n", f"{root}/state\n")):
        assert old in out, old
        out = out.replace(old, new)
    assert "/run/localauth" not in out.replace("/run/localauth.pid", ""), "a path of the machine's left"
    return out


def peer_uid(path: Path) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        s.connect(str(path))
        pid, uid, gid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return uid


def wait_for(predicate, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_the_init_script_starts_reports_and_stops_the_service():
    with tempfile.TemporaryDirectory(prefix="la-sysvinit-") as tmp:
        root = Path(tmp)
        script = root / "localauth"
        script.write_text(moved(SCRIPT.read_text(), root))
        script.chmod(0o755)
        sock, pidfile = root / "run" / "socket", root / "localauthd.pid"
        agent = root / "run" / "ssh-agent"
        pid = None
        try:
            start = subprocess.run(["sh", str(script), "start"], capture_output=True, text=True, timeout=60)
            assert start.returncode == 0, start
            assert wait_for(sock.exists), "no socket after start"
            pid = int(pidfile.read_text())
            assert os.readlink(f"/proc/{pid}/exe") == str(SERVICE)
            assert peer_uid(sock) == 0
            assert wait_for(agent.exists), "no ssh-agent socket after start"
            assert peer_uid(agent) == 0 and agent.stat().st_mode & 0o777 == 0o666
            assert (root / "state").stat().st_mode & 0o777 == 0o700
            # A second start leaves the running one alone.
            again = subprocess.run(["sh", str(script), "start"], capture_output=True, text=True, timeout=60)
            assert again.returncode == 0, again
            assert int(pidfile.read_text()) == pid
            status = subprocess.run(["sh", str(script), "status"], capture_output=True, text=True, timeout=30)
            assert status.returncode == 0, status
            stop = subprocess.run(["sh", str(script), "stop"], capture_output=True, text=True, timeout=60)
            assert stop.returncode == 0, stop
            assert wait_for(lambda: not Path(f"/proc/{pid}").exists()), "localauthd still runs after stop"
            assert not sock.exists(), "the socket file stayed after stop"
            assert not agent.exists(), "the ssh-agent socket file stayed after stop"
            status = subprocess.run(["sh", str(script), "status"], capture_output=True, text=True, timeout=30)
            assert status.returncode != 0, status
            pid = None
        finally:
            if pid is not None and Path(f"/proc/{pid}").exists():
                os.kill(pid, 15)
                wait_for(lambda: not Path(f"/proc/{pid}").exists(), 10)
