"""A program of the user's own that talks to localauthd by hand: connects to the socket
named by argv[1] and relays bytes both ways, standard input to the socket (a half-close at
its end of file) and the socket to standard output, until the service closes the
connection. Tests run it as the user with pipes of their own, as a user could: the peer the
service sees is this process.

Usage: python3 socket_client.py SOCKET
"""
import os
import socket
import sys
import threading


def main() -> int:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(sys.argv[1])
    except OSError as e:
        print(f"socket_client: {sys.argv[1]}: {e}", file=sys.stderr)
        return 1

    def upstream():
        while data := os.read(0, 65536):
            try:
                sock.sendall(data)
            except OSError:
                return
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threading.Thread(target=upstream, daemon=True).start()
    while data := sock.recv(65536):
        os.write(1, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
