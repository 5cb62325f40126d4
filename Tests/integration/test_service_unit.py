"""localauthd as its unit runs it (systemd/localauth.service), where this machine can do so
without systemd: under no_new_privs with the unit's capability bounding set (setpriv), and
under a system call filter shaped like MemoryDenyWriteExecute= (mmap of writable and
executable memory, and mprotect adding execute, fail with EPERM, as systemd's filter
answers). The rest of the unit (its mount namespace, the other filters, CPUWeight=) needs
systemd as PID 1: the VM tier runs the packaged unit.

What is asserted: the service keeps only CAP_SYS_PTRACE in effect once started and says so,
while the helpers it starts get the bounding set (under no_new_privs an exec gains no
capability its parent does not hold as permitted, so a service that dropped them from its
permitted set would leave its helpers without them); the finger still works through it; a
stop asked for exits 0 and a failed loop exits 1 (Restart=always starts it again either
way, but only the failure is recorded as one).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_service_unit.py
"""
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)
from servicebed import Service, namespace_prefix  # noqa: E402
from test_service import e2e, wait_until  # noqa: E402,F401  (the e2e fixture)
from test_e2e_pam import ENROLLED, OK, PASSWORD, PROMPT, SWIPE  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

UNIT = system.REPO / "systemd" / "localauth.service"
CAP_SYS_PTRACE = 19


def unit_value(key: str) -> str:
    """The one `key=` line of the shipped unit."""
    (value,) = [line.split("=", 1)[1] for line in UNIT.read_text().splitlines() if line.startswith(f"{key}=")]
    return value


def capability_mask(names: str) -> int:
    """`CAP_SYS_PTRACE CAP_AUDIT_WRITE` as the kernel's mask (capsh's numbers, via setpriv's
    list, would need another tool: the few the unit names are fixed by the kernel ABI)."""
    numbers = {"CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21,
               "CAP_AUDIT_WRITE": 29}
    return sum(1 << numbers[n] for n in names.split())


BOUNDING = capability_mask(unit_value("CapabilityBoundingSet"))

# MemoryDenyWriteExecute='s filter for x86-64 (systemd's seccomp-util: mmap with PROT_WRITE
# and PROT_EXEC, mprotect and pkey_mprotect with PROT_EXEC), installed by a Python exec
# wrapper, then the service is exec'd under it; its helpers inherit it.
_MDWE = r'''
import ctypes, os, struct, sys
LD, JEQ, AND, RET = 0x20, 0x15, 0x54, 0x06
NR, ARG2 = 0, 16 + 2 * 8
ALLOW, EPERM = 0x7fff0000, 0x00050000 | 1
def op(code, k, jt=0, jf=0): return struct.pack("HBBI", code, jt, jf, k)
prog = b"".join([
    op(LD, NR), op(JEQ, 9, 0, 4),                  # mmap
    op(LD, ARG2), op(AND, 6), op(JEQ, 6, 0, 1), op(RET, EPERM),
    op(LD, NR), op(JEQ, 10, 1, 0), op(JEQ, 329, 0, 4),   # mprotect, pkey_mprotect
    op(LD, ARG2), op(AND, 4), op(JEQ, 4, 0, 1), op(RET, EPERM),
    op(RET, ALLOW)])
buf = ctypes.create_string_buffer(prog)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Fprog(len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
'''


def as_the_unit(syslog) -> list:
    """The prefix that runs the service as the unit does, as far as it can be had here."""
    bounding = ",".join("+" + n.lower().removeprefix("cap_") for n in unit_value("CapabilityBoundingSet").split())
    return namespace_prefix(syslog) + ["setpriv", "--no-new-privs", "--bounding-set", f"-all,{bounding}", "--",
                                       "/usr/bin/python3", "-I", "-c", _MDWE]


def capabilities(pid) -> dict:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cap"):
            key, value = line.split(":\t")
            fields[key] = int(value, 16)
    return fields


@pytest.fixture
def unit_service(inst, syslog):
    if platform.machine() != "x86_64":
        pytest.skip("the MemoryDenyWriteExecute-shaped filter is written for x86-64's system call numbers")
    s = Service(inst, syslog, "--peer-pidfd", "pid", prefix=as_the_unit(syslog))
    try:
        yield s
    finally:
        s.stop()


def test_the_service_keeps_only_ptrace_in_effect_and_its_helpers_get_the_bounding_set(unit_service):
    service = unit_service
    caps = capabilities(service.proc.pid)
    assert (caps["CapEff"], caps["CapPrm"], caps["CapBnd"]) == (1 << CAP_SYS_PTRACE, BOUNDING, BOUNDING), caps
    wait_until("a spare helper", lambda: len(service.spares()) == 1)
    (spare,) = service.spares()
    helper = capabilities(spare)
    assert (helper["CapEff"], helper["CapPrm"]) == (BOUNDING, BOUNDING), helper
    said = [m for m in service.lines("localauthd") if m.startswith("capabilities in effect:")]
    assert said == ["capabilities in effect: cap_sys_ptrace; permitted (for the helpers, which it starts): "
                    "cap_dac_override cap_dac_read_search cap_sys_ptrace cap_sys_admin cap_audit_write"], said


def test_the_finger_through_the_service_run_as_its_unit(e2e, unit_service):
    e2e.args.append(f"service={unit_service.socket}")
    e2e.service = e2e.stack()
    r = e2e.run(password=PASSWORD)      # the password once (after a start), then the finger
    assert r.status == 0 and r.screen[-2:] == [PROMPT, OK], r.screen
    r = e2e.run([ENROLLED])
    assert (r.status, r.screen, r.results) == (0, [SWIPE, "Fingerprint recognized", OK], ["verify-match"])
    unit_service.syslog._sync()
    assert any("result=success" in m for m in unit_service.lines("localauth-helper")), unit_service.syslog.lines


def test_a_stop_exits_0(inst, syslog):
    service = Service(inst, syslog)
    service.stop()
    assert service.proc.returncode == 0


def test_a_failed_loop_exits_1_so_that_it_is_recorded_and_started_again(inst, syslog):
    """The loop's wait made to fail: a descriptor limit below the number it waits on makes
    ppoll fail with EINVAL at its next call (woken by a connection)."""
    service = Service(inst, syslog)
    try:
        subprocess.run(["prlimit", f"--pid={service.proc.pid}", "--nofile=3:3"], check=True)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(service.socket))
            service.proc.wait(timeout=60)
        assert service.proc.returncode == 1
        service.syslog._sync()
        assert any(m.startswith("stopping: poll: ") for m in service.lines("localauthd")), service.syslog.lines
    finally:
        service.stop()
