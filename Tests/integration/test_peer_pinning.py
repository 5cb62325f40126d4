"""Who connected, on a kernel without SO_PEERPIDFD (Debian 12's 6.1): localauthd pins the
pid SO_PEERCRED names, forced here with ``--peer-pidfd pid``.

The pid's process is taken as the peer only when it runs with the uid the kernel recorded
at connect(2) (the effective one: sudo, su and polkit's agent helper are setuid, and their
real uid is the user's), started before the accept, and holds the other end of the
connection. Two callers show each half: a setuid-shaped root peer (real uid a user's,
effective uid 0) is served; a process that handed its connection to another and dropped
its own copy is refused, though it is alive, started earlier and has the right uid.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_peer_pinning.py
"""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)
from servicebed import Service  # noqa: E402
from wire import frame, read_frames, request  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

NOBODY = 65534


@pytest.fixture
def pid_pinning_service(inst, syslog):
    s = Service(inst, syslog, "--peer-pidfd", "pid")
    try:
        yield s
    finally:
        s.stop()


# A process shaped like sudo after its setuid exec: real uid the user's, effective uid 0.
# It asks for its own status and prints the kinds of the frames it got back.
SETUID_SHAPED = r"""
import os, socket, sys
sys.path.insert(0, sys.argv[2])
from wire import frame, read_frames, request
os.setresuid(int(sys.argv[3]), 0, 0)
assert os.getresuid() == (int(sys.argv[3]), 0, 0)
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
    s.connect(sys.argv[1])
    s.sendall(frame("Q", request(mode="status", user="root", pid=str(os.getpid()))))
    s.shutdown(socket.SHUT_WR)
    print("".join(kind for kind, _ in read_frames(s)), flush=True)
"""


def test_a_setuid_peer_is_pinned_by_its_effective_uid(pid_pinning_service):
    """Debian 12's sudo: the peer's real uid is the user's, SO_PEERCRED's is 0. Before, the
    service compared the real uid and refused every setuid caller."""
    mark = pid_pinning_service.syslog.mark()
    r = subprocess.run([sys.executable, "-c", SETUID_SHAPED, str(pid_pinning_service.socket),
                        str(Path(__file__).resolve().parent), str(NOBODY)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "R" in r.stdout, (r.stdout, pid_pinning_service.syslog.since(mark, "localauthd"))
    lines = pid_pinning_service.syslog.since(mark, "localauthd")
    assert not any("not provably the peer" in m for m in lines), lines
    assert any(m.startswith("uid 0 pid ") and "(pidfd_open)" in m for m in lines), lines


# Connects, hands the connection to a child over a socket pair, closes its own copy and
# stays alive until told: the pid SO_PEERCRED names is alive and of the right uid, but the
# connection is the child's.
HAND_OVER = r"""
import array, os, socket, sys, time
path = sys.argv[1]
parent_end, child_end = socket.socketpair()
child = os.fork()
if child == 0:
    parent_end.close()
    msg, anc, _, _ = child_end.recvmsg(1, socket.CMSG_SPACE(4))
    fds = array.array("i"); fds.frombytes(anc[0][2][:4])
    conn = socket.socket(fileno=fds[0])
    conn.settimeout(60)
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    print("child-got", len(data), flush=True)
    os._exit(0)
child_end.close()
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(path)
parent_end.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [conn.fileno()]))])
conn.close()
print("handed", os.getpid(), flush=True)
sys.stdin.readline()          # alive until the test has seen the service's verdict
os.waitpid(child, 0)
"""


def test_a_pid_that_no_longer_holds_its_connection_is_not_the_peer(pid_pinning_service):
    """The proof a pid is the peer's without SO_PEERPIDFD: the process holds the socket's
    other end. A pid that gave its connection away (as one reused after the peer ended
    would never have had it) is refused, and no helper starts for it."""
    service = pid_pinning_service
    # The service held still while the caller connects and hands the connection over, so
    # it accepts only after the caller dropped its copy: the order is fixed, not raced.
    os.kill(service.proc.pid, signal.SIGSTOP)
    caller = subprocess.Popen([sys.executable, "-c", HAND_OVER, str(service.socket)], user=NOBODY,
                              group=NOBODY, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        handed = caller.stdout.readline().split()
        mark = service.syslog.mark()
    finally:
        os.kill(service.proc.pid, signal.SIGCONT)
    try:
        assert handed[0] == "handed", handed
        line = service.syslog.wait_for(lambda i, m: i == "localauthd" and "a connection refused" in m,
                                       timeout=30, since=mark)
        assert line is not None and f"pid {handed[1]} is not provably the peer" in line[1], \
            service.syslog.since(mark, "localauthd")
        caller.stdin.write("\n")
        caller.stdin.flush()
        out, _ = caller.communicate(timeout=60)
        assert "child-got 0" in out, out          # closed with no answer: no helper took it
        assert not any("helper pid" in m for m in service.syslog.since(mark, "localauthd"))
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait()
