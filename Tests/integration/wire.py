"""The frames of the socket protocol (docs/PROTOCOL.md), for tests that talk to localauthd
as a hostile or an ordinary caller would: a 4-byte big-endian length, a kind byte, the
payload (key=value lines for a request and a result)."""
import struct


def frame(kind: str, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload) + 1) + kind.encode() + payload


def request(**keys) -> bytes:
    """A request's payload: version 1 and the fields every mode reads, overridden by
    ``keys`` (values as str)."""
    kv = dict(version="1", mode="status", user="root", service="sudo", tty="", rhost="", ruser="",
              silent="1", stdin_tty="0", display="0", locale="", language="", caller_uid="0", pid="1")
    kv.update(keys)
    return "\n".join(f"{k}={v}" for k, v in kv.items()).encode()


def read_frames(sock, bound: float = 30.0) -> list:
    """Every frame until the other end closes the connection: [(kind, payload text)]."""
    sock.settimeout(bound)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    frames = []
    while len(data) >= 5:
        (length,) = struct.unpack(">I", data[:4])
        frames.append((chr(data[4]), data[5:4 + length].decode(errors="replace")))
        data = data[4 + length:]
    return frames


def result_of(frames: list) -> dict:
    """The result frame's keys (the last `R`), or {} when none came."""
    results = [p for k, p in frames if k == "R"]
    return dict(line.split("=", 1) for line in results[-1].split("\n") if "=" in line) if results else {}
