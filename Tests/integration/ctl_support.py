"""Support for the localauthctl, packaging and pam-auth-update tests.

* ``localauthctl_binary()``: the tool under test: ``$LOCALAUTHCTL``, or ``build/bin/localauthctl``
  when ``LOCALAUTH_SKIP_BUILD=1`` (what scripts/test builds), else ``swift build`` (debug).
* ``ThrowawayAccount``: system.ThrowawayUser without a login shell (``la-ctl-`` names).
* ``encode_state`` / ``read_state`` / ``write_state``: the state file format of
  Sources/LocalAuth/Store/StateFileFormat.swift, to prepare a user's state and to check what
  the tool wrote.
* ``Ctl``: runs localauthctl against a test bed with a private state directory and config.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BOOT_ID = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
PLACE = "Swipe your right index finger across the fingerprint reader"  # the virtual reader swipes
WAITING = "Waiting for your finger..."


def localauthctl_binary() -> str:
    if os.environ.get("LOCALAUTHCTL"):
        return os.environ["LOCALAUTHCTL"]
    if os.environ.get("LOCALAUTH_SKIP_BUILD") == "1":
        built = REPO / "build" / "bin" / "localauthctl"
        if not built.exists():
            raise RuntimeError(f"LOCALAUTH_SKIP_BUILD=1 but {built} is missing: run scripts/build")
        return str(built)
    subprocess.run(["swift", "build", "--product", "localauthctl"], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)
    bin_dir = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, check=True,
                             capture_output=True, text=True).stdout.strip()
    return str(Path(bin_dir) / "localauthctl")


class ThrowawayAccount(system.ThrowawayUser):
    """A real account with a random password and no login shell; removed on exit
    (system.ThrowawayUser)."""

    def __init__(self, prefix: str = "la-ctl-"):
        super().__init__(prefix, shell="/usr/sbin/nologin")


# ---- the state file ----------------------------------------------------------------------

_FIELDS = ("last_password", "last_fingerprint", "last_fingerprint_terminal", "boot_id")


def encode_state(failures: int = 0, last_password: Optional[int] = None,
                 last_fingerprint: Optional[int] = None, terminal: Optional[str] = None,
                 boot_id: Optional[str] = None, opted_in: bool = False,
                 trusted: Optional[str] = None) -> bytes:
    lines = ["localauth-state 1", f"failures={failures}"]
    for key, value in zip(_FIELDS, (last_password, last_fingerprint, terminal, boot_id)):
        if value is not None:
            lines.append(f"{key}={value}")
    lines.append(f"opted_in={1 if opted_in else 0}")
    if trusted is not None:
        lines.append(f"trusted_domain_state={trusted}")
    body = ("\n".join(lines) + "\n").encode()
    return body + f"sha256={hashlib.sha256(body).hexdigest()}\n".encode()


def write_state(state_dir: Path, user: str, **fields) -> Path:
    path = Path(state_dir) / f"{user}.state"
    path.write_bytes(encode_state(**fields))
    path.chmod(0o600)
    return path


def password_entered(state_dir: Path, user: str, **fields) -> Path:
    """A state where the password was entered a minute ago in this boot: no rule stands
    before a finger."""
    fields.setdefault("last_password", int(time.time()) - 60)
    fields.setdefault("boot_id", BOOT_ID)
    return write_state(state_dir, user, **fields)


def read_state(state_dir: Path, user: str) -> Optional[dict]:
    """The state file as a dict (numbers as int), checksum verified; None when absent."""
    path = Path(state_dir) / f"{user}.state"
    if not path.exists():
        return None
    data = path.read_bytes()
    body, _, last = data.rstrip(b"\n").rpartition(b"\n")
    body += b"\n"
    assert last == f"sha256={hashlib.sha256(body).hexdigest()}".encode(), data
    lines = body.decode().splitlines()
    assert lines[0] == "localauth-state 1", data
    out = {}
    for line in lines[1:]:
        key, _, value = line.partition("=")
        out[key] = int(value) if key in ("failures", "last_password", "last_fingerprint",
                                         "opted_in") else value
    return out


# ---- running the tool --------------------------------------------------------------------

class Result:
    def __init__(self, rc: int, out: str, err: str, elapsed: float):
        self.rc, self.out, self.err, self.elapsed = rc, out, err, elapsed
        self.lines = out.splitlines()
        self.err_lines = err.splitlines()
        self.last = self.lines[-1] if self.lines else ""

    def __repr__(self) -> str:
        return (f"Result(rc={self.rc}, {self.elapsed:.2f}s, lines={self.lines!r}, "
                f"err={self.err!r})")


class Ctl:
    """localauthctl with the bed's bus, print storage, a private state directory and a
    private config file (empty unless written)."""

    def __init__(self, binary: str, bed, state_dir: Path, config: Path):
        self.binary, self.bed = binary, bed
        self.state_dir, self.config = Path(state_dir), Path(config)

    def bed_args(self, state: bool = True) -> list:
        args = ["--dbus-address", self.bed.address, "--fprint-dir", str(self.bed.state_dir),
                "--config", str(self.config)]
        if state:
            args += ["--state-dir", str(self.state_dir)]
        return args

    def argv(self, *args: str) -> list:
        return [self.binary, *args, *self.bed_args()]

    def run(self, *args: str, feed=None, timeout: float = 30, env=None, prefix=()) -> Result:
        """Runs the tool on pipes; ``feed``: commands for the virtual reader, each sent once
        the reader waits for a finger."""
        started = time.monotonic()
        proc = subprocess.Popen([*prefix, *self.argv(*args)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        injection = self.bed.inject_async(feed) if feed else None
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        elapsed = time.monotonic() - started
        if injection is not None:
            injection.wait(10)
        return Result(proc.returncode, out, err, elapsed)

    def write_config(self, text: str) -> None:
        self.config.write_text(text)
        self.config.chmod(0o644)


def plain_run(argv, timeout: float = 30, **kwargs) -> Result:
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kwargs)
    return Result(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


@contextlib.contextmanager
def private_dir(base: Path, name: str, mode: int = 0o700):
    d = Path(base) / name
    d.mkdir(mode=mode)
    d.chmod(mode)
    yield d
