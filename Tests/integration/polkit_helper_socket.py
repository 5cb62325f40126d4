"""The service manager's part of polkit 127's socket-activated agent helper, for a machine
whose polkit predates it (Debian 12's 122): polkit-agent-helper.socket (Accept=yes) starts
one polkit-agent-helper-1 per connection, with the connection as its stdin and stdout, so
the helper's parent is the service manager and its agent is the peer of its stdin.

    /usr/bin/python3 polkit_helper_socket.py SOCKET   (as root; prints READY once listening)

Each connection's first line is the user to authenticate (polkit 127's agent sends it on
the socket; Debian 12's helper takes it as its argument); the rest of the connection is the
helper's: the cookie, then its line protocol. The helper's real uid is the peer's (Debian
12's helper names its real uid to polkitd as the agent's). Runs until SIGTERM.
"""
import os
import signal
import socket
import struct
import sys

AGENT_HELPER = "/usr/lib/polkit-1/polkit-agent-helper-1"


def first_line(conn) -> str:
    """One line, a byte at a time: what follows belongs to the helper."""
    data = b""
    while not data.endswith(b"\n") and len(data) < 256:
        byte = conn.recv(1)
        if not byte:
            break
        data += byte
    return data.decode().strip()


def main():
    path = sys.argv[1]
    signal.signal(signal.SIGCHLD, lambda *_: reap())
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o666)
    server.listen(8)
    print("READY", flush=True)
    while True:
        try:
            conn, _ = server.accept()
        except InterruptedError:
            continue
        user = first_line(conn)
        # polkit 127's helper tells polkitd the agent's uid from its socket's peer; Debian
        # 12's tells its real uid, so it gets the agent's (as when the agent ran it setuid).
        peer_uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        if os.fork() == 0:
            os.dup2(conn.fileno(), 0)
            os.dup2(conn.fileno(), 1)
            os.setresuid(peer_uid, 0, 0)
            os.execv(AGENT_HELPER, [AGENT_HELPER, user])
        conn.close()


def reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


if __name__ == "__main__":
    main()
