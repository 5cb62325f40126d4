"""The frames of the socket protocol (docs/PROTOCOL.md), the tests' one encoder and decoder of
them, for tests that talk to localauthd or the helper as a hostile or an ordinary caller
would: a 4-byte big-endian length, a kind byte, the payload (key=value lines for a request
and a result). The product's own table is LocalAuthProtocol's Request and Answer."""
import struct

def frame(kind: str, payload: bytes = b"") -> bytes:
    """One frame: length (type byte and payload), type, payload."""
    return struct.pack(">I", len(payload) + 1) + kind.encode() + payload


def lines(keys: dict, args=()) -> bytes:
    """Key/value lines exactly as given (no defaults), then one `arg=` line per argument."""
    return "\n".join([f"{k}={v}" for k, v in keys.items()] + [f"arg={a}" for a in args]).encode()


def request(args=(), **keys) -> bytes:
    """A request's payload: version 1 and the fields every mode reads, overridden by
    ``keys`` (values as str), then ``args`` as `arg=` lines."""
    kv = dict(version="1", mode="status", user="root", service="sudo", tty="", rhost="", ruser="",
              silent="1", stdin_tty="0", display="0", locale="", language="", caller_uid="0", pid="1")
    kv.update(keys)
    return lines(kv, args)


def request_frame(args=(), **keys) -> bytes:
    """``request`` as a whole `Q` frame."""
    return frame("Q", request(args, **keys))


def split_frames(data: bytes) -> list:
    """Every whole frame in ``data``: [(kind, payload text)]."""
    frames = []
    while len(data) >= 5:
        (length,) = struct.unpack(">I", data[:4])
        frames.append((chr(data[4]), data[5:4 + length].decode(errors="replace")))
        data = data[4 + length:]
    return frames


def read_frames(sock, bound: float = 30.0) -> list:
    """Every frame until the other end closes the connection: [(kind, payload text)]."""
    sock.settimeout(bound)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return split_frames(data)


def keys_of(payload: str) -> dict:
    """A key/value payload's keys (the first of a repeated one is not kept: the last wins)."""
    return dict(line.split("=", 1) for line in payload.split("\n") if "=" in line)


def results(data) -> list:
    """The result frames' keys, in order: of ``data`` (bytes read until the connection
    closed) or of frames already split."""
    frames = split_frames(data) if isinstance(data, (bytes, bytearray)) else data
    return [keys_of(p) for k, p in frames if k == "R"]


def result_of(frames: list) -> dict:
    """The result frame's keys (the last `R`), or {} when none came."""
    found = results(frames)
    return found[-1] if found else {}
