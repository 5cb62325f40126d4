"""localauthd as its unit runs it (systemd/localauth.service), where this machine can do so
without systemd: under no_new_privs with the unit's capability bounding set (setpriv), and
under system call filters shaped like RestrictAddressFamilies= (socket() of another family
fails with EAFNOSUPPORT) and MemoryDenyWriteExecute= (mmap of writable and executable
memory, and mprotect adding execute, fail with EPERM), answering as systemd's do. The rest of the unit (its mount namespace, the other filters, CPUWeight=) needs
systemd as PID 1: the VM tier runs the packaged unit.

What is asserted: the service keeps only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH in effect
once started (a peer's /proc entries, the proof of a peer by pid) and says so,
while the helpers it starts get the bounding set (under no_new_privs an exec gains no
capability its parent does not hold as permitted, so a service that dropped them from its
permitted set would leave its helpers without them); the finger still works through it; a
stop asked for exits 0 and a failed loop exits 1 (Restart=always starts it again either
way, but only the failure is recorded as one); the lockout's RESP_ACCT_LOCK reaches the
audit log (and with AF_UNIX alone, as the unit had it, it does not, and one line says so).

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
from test_e2e_pam import ENROLLED, OK, OTHER, PASSWORD, PROMPT, SWIPE, USER  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

UNIT = system.REPO / "systemd" / "localauth.service"
CAP_SYS_PTRACE = 19
CAP_DAC_READ_SEARCH = 2


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


# RestrictAddressFamilies='s filter: socket() with a family outside argv[1] (a comma list of
# numbers) fails with EAFNOSUPPORT, as systemd's filter answers; then argv[2:] is exec'd.
_FAMILIES = r'''
import ctypes, os, struct, sys
allowed = [int(x) for x in sys.argv[1].split(",")]
LD, JEQ, RET = 0x20, 0x15, 0x06
def op(code, k, jt=0, jf=0): return struct.pack("HBBI", code, jt, jf, k)
n = len(allowed)
prog = [op(LD, 0), op(JEQ, 41, 0, n + 2), op(LD, 16)]           # socket(2), its family
prog += [op(JEQ, family, n - i, 0) for i, family in enumerate(allowed)]
prog = b"".join(prog + [op(RET, 0x00050000 | 97), op(RET, 0x7fff0000)])
buf = ctypes.create_string_buffer(prog)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Fprog(len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[2], sys.argv[2:])
'''


def as_the_unit(syslog, families: str = unit_value("RestrictAddressFamilies")) -> list:
    """The prefix that runs the service as the unit does, as far as it can be had here: no
    new privileges, the bounding set, the address families, no writable executable memory."""
    bounding = ",".join("+" + n.lower().removeprefix("cap_") for n in unit_value("CapabilityBoundingSet").split())
    numbers = ",".join(str(int(getattr(socket, name))) for name in families.split())
    return namespace_prefix(syslog) + ["setpriv", "--no-new-privs", "--bounding-set", f"-all,{bounding}", "--",
                                       "/usr/bin/python3", "-I", "-c", _FAMILIES, numbers,
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


def test_the_service_keeps_only_what_it_uses_in_effect_and_its_helpers_get_the_bounding_set(unit_service):
    service = unit_service
    caps = capabilities(service.proc.pid)
    assert (caps["CapEff"], caps["CapPrm"], caps["CapBnd"]) == ((1 << CAP_SYS_PTRACE) | (1 << CAP_DAC_READ_SEARCH), BOUNDING, BOUNDING), caps
    wait_until("a spare helper", lambda: len(service.spares()) == 1)
    (spare,) = service.spares()
    helper = capabilities(spare)
    assert (helper["CapEff"], helper["CapPrm"]) == (BOUNDING, BOUNDING), helper
    said = [m for m in service.lines("localauthd") if m.startswith("capabilities in effect:")]
    assert said == ["capabilities in effect: cap_dac_read_search cap_sys_ptrace; permitted (for the helpers, which it starts): "
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


@pytest.mark.alone("the machine has one audit daemon")
@pytest.mark.parametrize("families", [unit_value("RestrictAddressFamilies"), "AF_UNIX"],
                         ids=["the-unit-s-families", "AF_UNIX-alone"])
def test_the_lockout_is_audited_under_the_unit_s_address_families(e2e, inst, syslog, families):
    """The lockout's RESP_ACCT_LOCK reaches the audit log from a helper of the service run as
    its unit. With AF_UNIX alone (the unit before AF_NETLINK) the record is lost, and now
    one line says so instead of nothing."""
    from recorders import AuditDaemon
    if platform.machine() != "x86_64":
        pytest.skip("the MemoryDenyWriteExecute-shaped filter is written for x86-64's system call numbers")
    service = Service(inst, syslog, prefix=as_the_unit(syslog, families))
    try:
        e2e.args.append(f"service={service.socket}")
        e2e.service = e2e.stack()
        assert e2e.run(password=PASSWORD).status == 0     # the first password, recorded
        with AuditDaemon() as audit:
            assert e2e.run([OTHER] * 3, password="wrong-1").status != 0
            assert e2e.run([OTHER] * 2, password="wrong-2").status != 0
            locks = [line for line in audit.search("RESP_ACCT_LOCK") if f'acct="{USER}"' in line]
        service.syslog._sync()
        helper = service.lines("localauth-helper")
        assert any(m.startswith(f"fingerprints locked out for {USER}") for m in helper), helper
        lost = [m for m in helper if m.startswith("audit records cannot be written")]
        if families == "AF_UNIX":
            assert (len(locks), len(lost)) == (0, 1), (locks, lost)
            assert "Address family not supported" in lost[0], lost
        else:
            assert (len(locks), lost) == (1, []), (locks, lost)
    finally:
        service.stop()
