"""A hostile local caller of localauthd's socket, for the hostile-caller tier
(test_hostile_callers.py): one kind of abuse, repeated until told to stop or until its
bound runs out. Each run is bounded in count and time and touches nothing but the socket.

    python3 hostile_load.py SOCKET KIND SECONDS [SETUID_UID]

KIND:
  flood     connect and close at once, as fast as it can
  idle      hold as many connections open as the service leaves open, writing nothing
  empty     connect, end the writing half at once, read what comes
  garbage   frames that are not requests: a wrong kind, a bad length, not key=value, no mode
  slow      a request written one byte a second
  rhost     sign-ins naming another machine (as sshd's first line would), as fast as it can
With SETUID_UID (run as root): the process first takes the real uid SETUID_UID and keeps the
effective uid 0, the shape of a setuid program (sudo, su, polkit's agent helper) that a user
started and stopped (Ctrl-Z) with its connections open.

It prints one line when it has started ("ready"), and at the end the count of connections it
made ("made N").
"""
import os
import random
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wire import frame, request  # noqa: E402

MAX_CONNECTIONS = 20_000      # a bound on any one run, whatever its time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(True)
    s.settimeout(2)
    s.connect(path)
    return s


def garbage_frames():
    yield struct.pack(">I", 5) + b"Xhello"                      # a kind that is no request
    yield struct.pack(">I", 0xFFFFFF) + b"Q"                    # a length past the limit
    yield frame("Q", b"not key value \xff\xfe")                 # not key=value, not UTF-8
    yield frame("Q", b"version=1\nuser=root")                   # no mode
    yield frame("Q", b"version=1\nmode=status\nmode=app")       # two modes
    yield b"\x00\x00"                                          # half a length


def run(path, kind, seconds):
    made = 0
    held = []
    stop_at = time.monotonic() + seconds
    frames = list(garbage_frames())
    rhost = frame("Q", request(mode="authenticate", user="root", service="sshd", rhost="203.0.113.9"))
    print("ready", flush=True)
    while time.monotonic() < stop_at and made < MAX_CONNECTIONS:
        if select.select([sys.stdin], [], [], 0)[0]:
            break                                              # told to stop
        try:
            if kind == "flood":
                connect(path).close()
            elif kind == "idle":
                held = [s for s in held if alive(s)]
                held.append(connect(path))
                if len(held) >= 256:
                    time.sleep(0.1)
                    made += 1
                    continue
            elif kind == "empty":
                s = connect(path)
                s.shutdown(socket.SHUT_WR)
                drain(s)
            elif kind == "garbage":
                s = connect(path)
                s.sendall(random.choice(frames))
                s.shutdown(socket.SHUT_WR)
                drain(s)
            elif kind == "slow":
                s = connect(path)
                data = frame("Q", request(mode="status"))
                for i in range(len(data)):
                    if time.monotonic() >= stop_at:
                        break
                    s.send(data[i:i + 1])
                    time.sleep(1)
                s.close()
            elif kind == "rhost":
                s = connect(path)
                s.sendall(rhost)
                s.shutdown(socket.SHUT_WR)
                drain(s)
            else:
                raise SystemExit(f"unknown kind {kind}")
            made += 1
        except OSError:
            made += 1
            time.sleep(0.01)
    for s in held:
        s.close()
    print(f"made {made}", flush=True)


def alive(s):
    """Still open from the service's side (a close reads as end of file)."""
    try:
        s.setblocking(False)
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)


def drain(s):
    s.settimeout(5)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
    s.close()


if __name__ == "__main__":
    path, kind, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    if len(sys.argv) > 4:
        os.setresuid(int(sys.argv[4]), 0, 0)
    run(path, kind, seconds)
