"""What the tests of applications need (the LocalAuthentication library): an application
built against it, run as an ordinary user, talking to the product installed with a
localauthd of the test's own, the real fprintd and the virtual reader.

Run with /usr/bin/python3, as root.

* ``app_binary(product)``: a Swift executable of this package that uses the library,
  ``la-probe`` (Tests/Support/la-probe) or the example, built with the static Swift
  runtime (``swift build -c release --static-swift-stdlib``) into ``build/test/``; with
  ``LOCALAUTH_SKIP_BUILD=1`` the copy already there is used when there is one.
* ``AppWorld(inst, bed, syslog, user, tmp)``: root's configuration pointing the
  installation's helper at this bed and a state directory of its own, the user's finger
  enrolled, the application copied where the user can run it, and
  ``run(args, fingers=..., password=...)`` running it as the user on a pseudo-terminal in
  the syslog namespace (servicebed), with ``LOCALAUTH_SERVICE`` naming the installation's
  service, which ``app_world`` starts (``world.service``) and stops.
  ``RESULT`` lines of la-probe come back parsed (``Run.results``).
* ``app_world(inst, bed, syslog, binary, user_prefix, home=False)``: one test's AppWorld in
  a directory of its own (``dir``, removed afterwards) with a throwaway user; ``home``: a
  home directory of the user's there too, named by the world's ``env``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from servicebed import namespace_prefix  # noqa: E402
from scan_events import ScanEvents  # noqa: E402

REPO = system.REPO
ENROLLED, OTHER = "f1", "f9"          # the user's virtual print, and a stranger's
FINGER = "right-index-finger"
PASSWORD_PROMPT = re.compile(r"Password: ")
RESULT = re.compile(r"^RESULT (.*)$", re.M)


def app_binary(product: str, package: Path = REPO) -> Path:
    """build/test/PRODUCT of the Swift package at ``package`` (this one, or an example's),
    built unless LOCALAUTH_SKIP_BUILD=1 and it is there already."""
    out = REPO / "build" / "test" / product
    if os.environ.get("LOCALAUTH_SKIP_BUILD") == "1" and out.is_file():
        return out
    env = dict(os.environ)
    if Path("/opt/swift/usr/bin").is_dir():
        env["PATH"] = "/opt/swift/usr/bin:" + env.get("PATH", system.SAFE_PATH)
    flags = ["-c", "release", "--static-swift-stdlib", "--package-path", str(package)]
    subprocess.run(["swift", "build", *flags, "--product", product], env=env, check=True,
                   capture_output=True)
    bin_dir = subprocess.run(["swift", "build", *flags, "--show-bin-path"], env=env,
                             check=True, capture_output=True, text=True).stdout.strip()
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(bin_dir) / product, out)
    return out


def parse_result(line: str) -> dict:
    """``op=eval success=0 code=-8 ... desc=Biometry is locked out.`` -> dict (desc last)."""
    head, _, desc = line.partition(" desc=")
    values = dict(pair.split("=", 1) for pair in head.split())
    values["desc"] = desc.rstrip("\r")
    return values


class Run(ScanEvents):
    def __init__(self, status, output, results, events, logs):
        self.status, self.output, self.events, self.logs = status, output, events, logs
        self.results = results

    @property
    def result(self) -> dict:
        assert len(self.results) == 1, self.output
        return self.results[0]

    def messages(self, ident):
        return [m for i, m in self.logs if i == ident]


class AppWorld:
    """See the module docstring."""

    def __init__(self, inst, bed, syslog, user, tmp: Path, binary: Path):
        self.inst, self.bed, self.syslog, self.user = inst, bed, syslog, user
        self.dir, self.env = tmp, {}
        self.state = tmp / "state"
        self.state.mkdir(mode=0o700)
        self.configure()
        bed.enroll(user.name, FINGER, ENROLLED)
        # Where the user can read and run it (the repository's build/ may not be).
        self.app = tmp / binary.name
        shutil.copy2(binary, self.app)
        self.app.chmod(0o755)

    def configure(self, **extra):
        """Root's configuration for this bed and state directory (servicebed), plus ``extra``."""
        self.inst.write_bed_config(self.bed, self.state, **extra)

    @property
    def state_file(self) -> Path:
        return self.state / f"{self.user.name}.state"

    def state_values(self) -> dict:
        return system.state_fields(self.state_file)

    def start(self, *args, env: Optional[dict] = None):
        """The application as the user on a pseudo-terminal (a PtyRun)."""
        environment = self.inst.env()
        environment.update(env or {})
        return system.run_on_pty([str(self.app), *args], env=environment, user=self.user,
                                 prefix=namespace_prefix(self.syslog), timeout=60)

    def run(self, *args, fingers=(), password=None, env=None) -> Run:
        """One run: the prints presented as the reader asks for them, ``password`` typed
        at the password prompt (None: none is expected)."""
        mark, log_mark = self.bed.mark(), self.syslog.mark()
        pt = self.start(*args, env=env)
        injection = self.bed.inject_async([f"SCAN {p}" for p in fingers]) if fingers else None
        if password is not None:
            pt.expect(PASSWORD_PROMPT, timeout=40)
            pt.sendline(password)
        res = pt.finish(timeout=60)
        if injection:
            injection.wait(20)
        results = [parse_result(m) for m in RESULT.findall(res.output.replace("\r", ""))]
        return Run(res.status, res.output, results, self.bed.events(mark),
                   self.syslog.lines[log_mark:])


@contextlib.contextmanager
def app_world(inst, bed, syslog, binary: Path, user_prefix: str, home: bool = False):
    """See the module docstring. The directory is 0755: the user runs the copy of the
    application in it (the repository's build/ may be out of the user's reach)."""
    tmp = Path(tempfile.mkdtemp(prefix="localauth-app-"))
    tmp.chmod(0o755)
    try:
        with contextlib.ExitStack() as stack, system.ThrowawayUser(prefix=user_prefix) as user:
            world = AppWorld(inst, bed, syslog, user, tmp, binary)
            world.service = stack.enter_context(inst.serve(syslog))
            if home:             # UserDefaults needs a home to write to
                (tmp / "home").mkdir()
                os.chown(tmp / "home", user.uid, user.gid)
                world.env = {"HOME": str(tmp / "home")}
            yield world
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
