"""The ssh-agent protocol (draft-miller-ssh-agent) as the tests speak it to localauthd's
agent socket, and the SSH encodings its messages carry: one place for the wire, for the
door's tests (test_ssh_agent_door.py) and any other that talks to the socket without ssh.

* ``frame(body)`` / ``Client(path)``: a connection; ``client.ask(body)`` sends one message
  and returns the reply's body (``None`` when the agent closed instead);
* ``request_identities()``, ``sign_request(blob, data, flags)``, ``session_bind(...)``,
  ``extension(name, payload)``: request bodies; ``identities(reply)``, ``signature(reply)``:
  replies read (``FAILURE``, ``SUCCESS`` are the one-byte replies);
* ``userauth_data(session_id, user, key_blob, host_key=None)``: what ssh asks the agent to
  sign to log in (RFC 4252 §7; the hostbound method with a host key);
  ``sshsig_data(namespace, message)``: what ``ssh-keygen -Y sign`` asks (PROTOCOL.sshsig);
* ``HostKey()``: an Ed25519 host key of the test's own, its blob and its signature over a
  session identifier (what a session-bind carries);
* ``P256Key()``: a P-256 key pair, its ``ecdsa-sha2-nistp256`` blob, ``verify(sig_blob,
  data)`` for what the agent signed, and ``record(name, uid, ...)``: the text of root's
  key record (SSHKeyRecord) for a test to place in a state directory.

Only Python's standard library and ``cryptography`` (python3-cryptography).
"""

from __future__ import annotations

import hashlib
import socket
import struct
from typing import Optional

FAILURE, SUCCESS = 5, 6
REQUEST_IDENTITIES, IDENTITIES_ANSWER = 11, 12
SIGN_REQUEST, SIGN_RESPONSE = 13, 14
ADD_IDENTITY, REMOVE_IDENTITY, REMOVE_ALL = 17, 18, 19
LOCK, UNLOCK = 22, 23
EXTENSION = 27
MAX_FRAME = 256 * 1024


# MARK: - SSH encodings

def u32(n: int) -> bytes:
    return struct.pack(">I", n)


def string(b) -> bytes:
    if isinstance(b, str):
        b = b.encode()
    return u32(len(b)) + b


def mpint(n: int) -> bytes:
    if n == 0:
        return u32(0)
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    if raw[0] & 0x80:
        raw = b"\0" + raw
    return string(raw)


class Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise ValueError("short")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def byte(self) -> int:
        return self.take(1)[0]

    def u32(self) -> int:
        return struct.unpack(">I", self.take(4))[0]

    def string(self) -> bytes:
        return self.take(self.u32())

    @property
    def done(self) -> bool:
        return self.at == len(self.data)


# MARK: - Frames and messages

def frame(body: bytes) -> bytes:
    return u32(len(body)) + body


def request_identities() -> bytes:
    return bytes([REQUEST_IDENTITIES])


def sign_request(key_blob: bytes, data: bytes, flags: int = 0) -> bytes:
    return bytes([SIGN_REQUEST]) + string(key_blob) + string(data) + u32(flags)


def extension(name: str, payload: bytes = b"") -> bytes:
    return bytes([EXTENSION]) + string(name) + payload


def session_bind(host_key_blob: bytes, session_id: bytes, signature_blob: bytes, forwarding: bool) -> bytes:
    return extension("session-bind@openssh.com",
                     string(host_key_blob) + string(session_id) + string(signature_blob) + bytes([int(forwarding)]))


def identities(reply: bytes) -> list:
    """[(key blob, comment)] of an IDENTITIES_ANSWER."""
    r = Reader(reply)
    assert r.byte() == IDENTITIES_ANSWER, reply[:1]
    out = [(r.string(), r.string().decode()) for _ in range(r.u32())]
    assert r.done
    return out


def signature(reply: bytes) -> bytes:
    """The signature blob of a SIGN_RESPONSE."""
    r = Reader(reply)
    assert r.byte() == SIGN_RESPONSE, reply[:1]
    blob = r.string()
    assert r.done
    return blob


def userauth_data(session_id: bytes, user: str, key_blob: bytes, host_key: Optional[bytes] = None) -> bytes:
    method = "publickey-hostbound-v00@openssh.com" if host_key is not None else "publickey"
    out = (string(session_id) + bytes([50]) + string(user) + string("ssh-connection") + string(method)
           + bytes([1]) + string("ecdsa-sha2-nistp256") + string(key_blob))
    return out + (string(host_key) if host_key is not None else b"")


def sshsig_data(namespace: str, message: bytes) -> bytes:
    return (b"SSHSIG" + string(namespace) + string(b"") + string("sha512")
            + string(hashlib.sha512(message).digest()))


# MARK: - Keys

class HostKey:
    """An Ed25519 host key: its blob, and its signature blob over a session identifier."""

    def __init__(self):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives import serialization
        self.key = Ed25519PrivateKey.generate()
        raw = self.key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.blob = string("ssh-ed25519") + string(raw)

    def sign(self, data: bytes) -> bytes:
        return string("ssh-ed25519") + string(self.key.sign(data))

    def fingerprint(self) -> str:
        import base64
        return "SHA256:" + base64.b64encode(hashlib.sha256(self.blob).digest()).decode().rstrip("=")

    def known_hosts_line(self, name: str) -> str:
        import base64
        return f"{name} ssh-ed25519 {base64.b64encode(self.blob).decode()}\n"


class P256Key:
    """A P-256 key pair as root's store keeps one (SSHKeyRecord)."""

    def __init__(self):
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives import serialization
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.point = self.key.public_key().public_bytes(serialization.Encoding.X962,
                                                        serialization.PublicFormat.UncompressedPoint)
        self.scalar = self.key.private_numbers().private_value.to_bytes(32, "big")
        self.blob = string("ecdsa-sha2-nistp256") + string("nistp256") + string(self.point)

    def verify(self, signature_blob: bytes, data: bytes) -> bool:
        from cryptography.hazmat.primitives.asymmetric import ec, utils
        from cryptography.hazmat.primitives import hashes
        from cryptography.exceptions import InvalidSignature
        r = Reader(signature_blob)
        if r.string() != b"ecdsa-sha2-nistp256":
            return False
        body = Reader(r.string())
        rr, ss = int.from_bytes(body.string(), "big"), int.from_bytes(body.string(), "big")
        try:
            self.key.public_key().verify(utils.encode_dss_signature(rr, ss), data, ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            return False

    def record(self, name: str, uid: int, requirement: str = "biometry", reuse: int = 0,
               forwarding: bool = False, created: int = 1765000000) -> str:
        return "".join(f"{k}={v}\n" for k, v in [
            ("version", 1), ("name", name), ("uid", uid), ("requirement", requirement), ("reuse", reuse),
            ("forwarding", int(forwarding)), ("comment", ""), ("domain_state", ""), ("created", created),
            ("private_key", self.scalar.hex()), ("public_key", self.point.hex())])


# MARK: - A connection

class Client:
    """One connection to an agent socket; closed on exit."""

    def __init__(self, path, timeout: float = 30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_reply(self) -> Optional[bytes]:
        """The next reply's body; None when the agent closed first."""
        head = self._exactly(4)
        if head is None:
            return None
        n = struct.unpack(">I", head)[0]
        assert n <= MAX_FRAME, n
        return self._exactly(n)

    def ask(self, body: bytes) -> Optional[bytes]:
        """The reply's body; None when the agent closed first (before or after the message)."""
        try:
            self.send_raw(frame(body))
        except (BrokenPipeError, ConnectionResetError):
            return None
        return self.read_reply()

    def _exactly(self, n: int) -> Optional[bytes]:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
