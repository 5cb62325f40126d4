"""Where lockout events go, caught for tests without touching the machine's own records.

* ``AuditDaemon()``: the real auditd (package auditd) started with a configuration of its
  own that writes to a temporary log; its PID is recorded and exactly that PID is stopped,
  and the kernel's audit `enabled` flag is put back as it was. Skips (with the reason) when
  another audit daemon already runs, or auditd is not installed: its records are not ours
  to read or stop. ``.search(type)`` runs ``ausearch -if LOG -m TYPE`` once a record the
  test sent after everything before it is in the log.
* ``journal_capture(argv)``: runs ``argv`` in a private mount namespace whose
  /run/systemd/journal/socket is a datagram socket of the test's, and returns the journal
  entries it sent (sd_journal_sendv's native protocol) as dicts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

_AUDITD_CONF = """\
local_events = yes
write_logs = yes
log_file = {log}
log_group = root
log_format = RAW
flush = INCREMENTAL_ASYNC
freq = 1
max_log_file = 8
num_logs = 2
max_log_file_action = ROTATE
space_left = 2
space_left_action = IGNORE
admin_space_left = 1
admin_space_left_action = IGNORE
disk_full_action = IGNORE
disk_error_action = IGNORE
plugin_dir = {plugins}
"""


def _audit_status() -> dict:
    out = subprocess.run(["auditctl", "-s"], capture_output=True, text=True).stdout
    return {k: v for k, v in (l.split(None, 1) for l in out.splitlines() if " " in l)}


class AuditDaemon:
    def __enter__(self) -> "AuditDaemon":
        if not shutil.which("auditd") or not shutil.which("auditctl"):
            pytest.skip("auditd is not installed (scripts/install-deps installs it)")
        status = _audit_status()
        if status.get("pid", "0") != "0":
            pytest.skip(f"an audit daemon already runs (pid {status['pid']}): its log is not the test's")
        self.enabled = status.get("enabled", "0")
        self.marks = 0
        self.dir = Path(tempfile.mkdtemp(prefix="localauth-audit-"))
        (self.dir / "plugins").mkdir()
        self.log = self.dir / "audit.log"
        conf = self.dir / "auditd.conf"
        conf.write_text(_AUDITD_CONF.format(log=self.log, plugins=self.dir / "plugins"))
        conf.chmod(0o640)
        self.proc = subprocess.Popen(["auditd", "-n", "-s", "enable", "-c", str(self.dir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while _audit_status().get("pid") != str(self.proc.pid):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode() if self.proc.poll() is not None else ""
                self.__exit__()
                raise RuntimeError(f"auditd did not start: {err}")
            time.sleep(0.05)
        return self

    def search(self, record_type: str) -> list:
        """The raw records of one type in our log, once every record sent before the call
        is in it: a record of our own is sent last (``auditctl -m``), and the kernel hands
        records to the daemon in order, so when ours is in the log the others are too (a
        fixed wait was a guess at how fast the daemon writes)."""
        self.marks += 1
        mark = f"localauth-test-mark-{os.getpid()}-{self.marks}"
        subprocess.run(["auditctl", "-m", mark], check=True, capture_output=True)
        deadline = time.monotonic() + 30
        while not (self.log.exists() and mark.encode() in self.log.read_bytes()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"auditd did not write the test's record {mark} within 30 s")
            time.sleep(0.02)
        proc = subprocess.run(["ausearch", "-if", str(self.log), "-m", record_type, "--raw"],
                              capture_output=True, text=True)
        return [l for l in proc.stdout.splitlines() if l.startswith("type=")]

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["auditctl", "-e", self.enabled], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


_CAPTURE = r"""
import json, os, socket, subprocess, sys
subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run/systemd"], check=True)
os.makedirs("/run/systemd/journal")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/run/systemd/journal/socket")
proc = subprocess.run(json.loads(sys.argv[1]), capture_output=True, text=True)
s.settimeout(0.5)
entries = []
try:
    while True:
        data = s.recv(1 << 20)
        entry = {}
        for line in data.decode().split("\n"):
            if "=" in line:
                k, v = line.split("=", 1)
                entry[k] = v
        entries.append(entry)
except socket.timeout:
    pass
print(json.dumps({"rc": proc.returncode, "out": proc.stdout, "err": proc.stderr, "entries": entries}))
"""


def journal_capture(argv: list) -> dict:
    """{"rc", "out", "err", "entries"} of ``argv`` run with a journal socket of ours."""
    if not Path("/run/systemd").is_dir():
        pytest.skip("no /run/systemd to mount a private journal socket over")
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c",
                           _CAPTURE, json.dumps(argv)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
