"""The module's test bed: pam_localauth.so through the real libpam (pam_wrapper), asking a
localauthd of the test's own that starts the fake helper (fake_helper.py) or the real one.
Shared by test_pam_module.py and test_no_fork.py.

* ``Service(socket, helper, config, syslog, *extra)``: ``localauthd --listen SOCKET --helper
  HELPER --config CONFIG --absent-answer no``, as an administrator starts it where systemd
  does not run (no systemd here; the units are the VM tier's), in a mount namespace whose
  /dev/log is ``syslog`` (servicebed.namespace_prefix), so that its lines and its helpers'
  can be read. Started with its PID recorded and stopped by it; the helpers it started that
  outlive it (a fake that hangs) are stopped by their PIDs too.
* ``Bed(world)``: a PamWorld with the fake helper installed as root's, a record directory,
  a made-up user with a password, and a Service on a socket of the world's. ``line(mode)``
  is the module's line with ``service=SOCKET``; ``stack``, ``solo``, ``events``, ``drive``.
  ``serve(helper)`` starts the service again with another helper (the real one);
  ``service_log()`` is what the service and its helpers logged (printed when a test fails).
* ``SudoBed(bed)``: a throwaway user allowed to sudo through its own /etc/pam.d service;
  all removed after.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pamenv  # noqa: E402
import system  # noqa: E402
from pamenv import MODULE  # noqa: E402
from servicebed import Syslog, namespace_prefix  # noqa: E402

HERE = Path(__file__).resolve().parent
LOCALAUTHD = pamenv.REPO / "build" / "libexec" / "localauth" / "localauthd"
PASSWORD = "s3cret-pw"
USER = "la-alice"
# A Swift process and its socket on a loaded machine: a bound on waiting, never a measure.
STARTED_WITHIN = 30


def children_of(pid) -> list:
    """The PIDs whose parent is ``pid`` (/proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(pid):
            found.append(int(stat.parent.name))
    return found


class Service:
    """One localauthd on ``socket``; see the module docstring."""

    def __init__(self, socket_path, helper, config, syslog, *extra):
        self.socket = Path(socket_path)
        self.socket.parent.mkdir(mode=0o755, exist_ok=True)
        # unshare and sh exec it: the PID is localauthd's.
        argv = namespace_prefix(syslog) + [
            str(LOCALAUTHD), "--listen", str(self.socket), "--helper", str(helper),
            "--config", str(config), "--absent-answer", "no", *extra]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, cwd="/",
                                     env={"PATH": system.SAFE_PATH})
        deadline = time.monotonic() + STARTED_WITHIN
        while not self.answers():
            if self.proc.poll() is not None:
                raise RuntimeError(f"localauthd ended: {self.proc.stdout.read().decode()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"localauthd's socket did not answer within {STARTED_WITHIN} s")
            time.sleep(0.02)

    def answers(self) -> bool:
        if not self.socket.exists():
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(str(self.socket))
                return True
            except OSError:
                return False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self):
        """localauthd by its PID, then what it started and left running (its helpers finish
        their requests after it: a fake that hangs would not), each by its PID."""
        helpers = children_of(self.proc.pid)
        system.stop_popen(self.proc)
        for pid in helpers:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


class Bed:
    """See the module docstring."""

    def __init__(self, world):
        self.world = world
        self.helper = world.root / "fake-helper"
        shutil.copy(HERE / "fake_helper.py", self.helper)
        os.chown(self.helper, 0, 0)
        os.chmod(self.helper, 0o755)
        self.records = world.root / "records"
        self.records.mkdir()
        os.chmod(self.records, 0o777)
        # No file: the service and the helper take the defaults (the fake reads none).
        self.config = world.root / "none.conf"
        self.socket = world.root / "run" / "socket"
        world.add_user(USER, PASSWORD)
        self.syslog = Syslog()
        self.service = None
        self.serve(self.helper)

    def serve(self, helper, *extra):
        """(Re)starts the bed's localauthd with ``helper``."""
        self.stop_service()
        self.service = Service(self.socket, helper, self.config, self.syslog, *extra)
        return self.service

    def stop_service(self):
        if self.service is not None:
            self.service.stop()
            self.service = None

    def service_log(self) -> str:
        return "\n".join(f"{ident}: {message}" for ident, message in self.syslog.lines)

    def close(self, failed=False):
        """Stops the service; its log printed first when the test failed."""
        self.stop_service()
        if failed:
            print(f"--- localauthd and its helpers:\n{self.service_log()[-6000:]}")
        self.syslog.close()

    @property
    def arg(self) -> str:
        """The module argument that points it at the bed's service."""
        return f"service={self.socket}"

    def line(self, mode="match", control="sufficient", *extra, module=None):
        args = [self.arg, f"fake_mode={mode}", f"fake_dir={self.records}", *extra]
        return f"auth {control} {module or MODULE} " + " ".join(args)

    def readable_module(self):
        """The module copied where a caller that is not root can load it (the checkout may
        live in /root or a 0700 directory)."""
        copy = self.world.root / "pam_localauth.so"
        if not copy.exists():
            shutil.copy(MODULE, copy)
            copy.chmod(0o644)
        return copy

    def stack(self, mode="match", *extra, name="la-test"):
        """This module (sufficient) then the password module."""
        return self.world.service(name, [self.line(mode, "sufficient", *extra),
                                         f"auth required {self.world.matrix}"])

    def solo(self, mode="match", *extra, name="la-solo"):
        """This module alone (required): pam_authenticate returns its code."""
        return self.world.service(name, [self.line(mode, "required", *extra)])

    def events(self, kind=None):
        path = self.records / "events.jsonl"
        if not path.exists():
            return []
        found = [json.loads(l) for l in path.read_text().splitlines()]
        return [e for e in found if kind is None or e["event"] == kind]

    def drive(self, service, **kw):
        kw.setdefault("answers", [PASSWORD])
        return self.world.drive(service, kw.pop("user", USER), **kw)


def failed(request) -> bool:
    """Whether the test of this fixture request failed (conftest's rep_call)."""
    rep = getattr(request.node, "rep_call", None)
    return rep is not None and rep.failed


class SudoBed:
    """A throwaway user allowed to sudo through its own PAM service; all removed after."""

    def __init__(self, bed):
        self.bed = bed
        self.user = None

    def setup(self):
        # system.ThrowawayUser: a unique name, and useradd/userdel tried again while another
        # test of a parallel run holds /etc/passwd's lock (a bare userdel left users behind).
        self.user = system.ThrowawayUser(prefix="la-pt-", shell="/bin/sh").__enter__()
        self.tag, self.uid = self.user.name, self.user.uid
        self.pam_file = Path("/etc/pam.d") / self.tag
        self.sudoers = Path("/etc/sudoers.d") / self.tag
        self.bed.world.add_user(self.tag, PASSWORD)
        self.bed.world.service(self.tag, [])  # so the passdb has a line for this service
        draft = self.bed.world.root / "sudoers-draft"
        draft.write_text(f"Defaults:{self.tag} pam_service={self.tag}\n"
                         f"{self.tag} ALL=(ALL:ALL) ALL\n")
        subprocess.run(["visudo", "-cqf", str(draft)], check=True)  # never install a bad one
        shutil.copy(draft, self.sudoers)
        os.chmod(self.sudoers, 0o440)

    def cleanup(self):
        if self.user is None:
            return
        for path in (self.sudoers, self.pam_file):
            path.unlink(missing_ok=True)
        self.user.close()

    def write_stack(self, first_line):
        self.pam_file.write_text(
            f"{first_line}\n"
            f"auth required {self.bed.world.matrix}\n"
            "account required pam_permit.so\nsession required pam_permit.so\n")

    def argv(self):
        """sudo as the user, asking for the password on stdin, running `id -u`."""
        return ["setpriv", f"--reuid={self.tag}", f"--regid={self.tag}", "--init-groups",
                "sudo", "-k", "-S", "id", "-u"]

    def sudo(self, mode, stdin=""):
        self.write_stack(self.bed.line(mode, "sufficient"))
        return subprocess.run(self.argv(), input=stdin, capture_output=True, text=True,
                              timeout=30)


def sudo_tools_missing():
    """Why real sudo cannot run here, or None."""
    if not all(shutil.which(t) for t in ("sudo", "visudo", "useradd", "userdel", "setpriv")):
        return "sudo, visudo, useradd or setpriv missing"
    if pamenv.EXTRA_PRELOAD:
        return "setuid sudo ignores LD_PRELOAD, so a sanitizer build cannot load there"
    return None


# The real setuid sudo through the module (its own /etc/pam.d service, a throwaway user),
# for the test files that use the fake helper's ``bed``; skipped where sudo's tools are missing.
@pytest.fixture
def sudo_bed(bed):
    why = sudo_tools_missing()
    if why:
        pytest.skip(why)
    s = SudoBed(bed)
    try:
        s.setup()
        yield s
    finally:
        s.cleanup()
