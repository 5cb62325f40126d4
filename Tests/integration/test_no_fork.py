"""The module never forks: no process is started in the PAM host (docs/ARCHITECTURE.md,
"The one door").

Real setuid `sudo` (a throwaway user, a PAM service and a sudoers drop-in of the test's own)
and `pamtester` run through the module, under `strace -f -e trace=%process` (and /proc while
the module waits): with a localauthd of the test's own running, the host's only children are
its own (sudo's command; pamtester has none) and the helper is localauthd's child; with no
service at all, the module answers PAM_AUTHINFO_UNAVAIL at once with one log line, the
password works, nothing is forked and nothing is waited for.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_no_fork.py
(build first: scripts/build; module_bed.py is the bed).
"""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pamenv  # noqa: E402
from module_bed import (LOCALAUTHD, PASSWORD, USER, Bed, children_of, failed,  # noqa: E402,F401
                        sudo_bed)
from pamenv import MODULE, PamWorld, outcomes  # noqa: E402
from servicebed import Syslog, namespace_prefix  # noqa: E402

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="runs as root (localauthd, sudo, strace)"),
    pytest.mark.skipif(shutil.which("strace") is None or shutil.which("pamtester") is None,
                       reason="strace or pamtester missing"),
]

# What strace -f writes for a system call: `PID name(args) = result`.
_CALL = re.compile(r"^(\d+) +(\w+)\((.*)\) += (-?\w+)")
_UNFINISHED = re.compile(r"^(\d+) +(\w+)\((.*) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^(\d+) +<\.\.\. (\w+) resumed>(.*)\) += (-?\w+)")
FORKS = ("clone", "clone3", "fork", "vfork")


def built():
    if not MODULE.is_file() or not LOCALAUTHD.is_file():
        pytest.skip("build first: scripts/build")


@pytest.fixture
def bed(request):
    built()
    with PamWorld() as world:
        b = Bed(world)
        try:
            yield b
        finally:
            b.close(failed(request))


def calls(trace: Path):
    """(pid, name, args, result) of every call in an strace -f output file, in the order the
    calls began. A call another traced process interrupted is written in two lines, `PID
    name(args <unfinished ...>` and later `PID <... name resumed>args) = result` (more often
    on a loaded machine): the two are joined, at the place of the first."""
    found, open_calls = [], {}
    for line in trace.read_text().splitlines():
        m = _UNFINISHED.match(line)
        if m:
            open_calls[int(m.group(1))] = (len(found), m.group(2), m.group(3))
            found.append(None)
            continue
        m = _RESUMED.match(line)
        if m and int(m.group(1)) in open_calls:
            at, name, head = open_calls.pop(int(m.group(1)))
            found[at] = (int(m.group(1)), name, head + m.group(3), m.group(4))
            continue
        m = _CALL.match(line)
        if m:
            found.append((int(m.group(1)), m.group(2), m.group(3), m.group(4)))
    return [c for c in found if c is not None]


def programs(found):
    """The programs each process ran: {pid: [path of every successful execve]}."""
    ran = {}
    for pid, name, args, result in found:
        if name == "execve" and result == "0":
            ran.setdefault(pid, []).append(args.split('"')[1])
    return ran


def strace(out: Path, *calls_traced):
    return ["strace", "-f", "-o", str(out), "-e", "trace=" + ",".join(("%process",) + calls_traced)]


def absent_socket(bed) -> Path:
    """A service path where nothing is: no localauthd installed or started."""
    return bed.world.root / "no-such-run" / "socket"


# --- pamtester: a host that has no children of its own --------------------------------

@pytest.mark.parametrize("mode", ["match", "nomatch"])
def test_pamtester_through_the_service_forks_nothing(bed, mode):
    """The module asks localauthd: pamtester starts no process at all, and the helper that
    answered is localauthd's child."""
    out = bed.world.root / "strace.out"
    argv = bed.world.command(["pamtester", bed.stack(mode), USER, "authenticate"],
                             prefix=strace(out, "connect"))
    p = subprocess.run(argv, input=PASSWORD + "\n", capture_output=True, text=True,
                       env=bed.world._base_env(), timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    found = calls(out)
    assert {pid for pid, *_ in found} == {found[0][0]}, "a second process in the host"
    assert [c for c in found if c[1] in FORKS] == []
    assert any(name == "connect" and str(bed.socket) in args and result == "0"
               for _, name, args, result in found), "the module did not reach the service"
    start, = bed.events("start")
    assert start["ppid"] == bed.service.pid        # the helper is the service's child
    assert outcomes(pamenv.parse_logs(p.stderr))[0]["result"] == (
        "success" if mode == "match" else "authenticationFailed")


# --- sudo: its only child is its command -----------------------------------------------

def only_the_command_forked(found, host, after):
    """sudo's own children only, all started after the call at index ``after`` (the
    module's last): one of them runs `id`, none runs anything else (a monitor process,
    where sudo runs the command in a pseudo-terminal, runs no program of its own)."""
    forks = [i for i, c in enumerate(found) if c[1] in FORKS]
    assert forks and min(forks) > after, (forks, after)
    ran = programs(found)
    assert ran.pop(host) == ["/usr/bin/setpriv", "/usr/bin/sudo"]
    assert list(ran.values()) == [["/usr/bin/id"]], ran


def test_sudo_through_the_service_forks_only_its_command(sudo_bed):
    """Real setuid sudo, the finger not matching and the password after it: the module asks
    localauthd and sudo forks only for its command, after the module's request ended; the
    helper is localauthd's child."""
    bed = sudo_bed.bed
    sudo_bed.write_stack(bed.line("nomatch"))
    out = bed.world.root / "strace.out"
    p = subprocess.run(strace(out, "connect", "shutdown") + sudo_bed.argv(),
                       input=PASSWORD + "\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["Place", "your", "finger", "on", "the", "reader", "0"], p.stdout
    found = calls(out)
    host = found[0][0]                                  # setpriv, then sudo
    connected = [i for i, (pid, name, args, result) in enumerate(found)
                 if pid == host and name == "connect" and str(bed.socket) in args]
    done = [i for i, (pid, name, *_) in enumerate(found) if pid == host and name == "shutdown"]
    assert len(connected) == 1 and len(done) == 1 and connected[0] < done[0], found
    only_the_command_forked(found, host, after=done[0])
    start, = bed.events("start")
    assert start["ppid"] == bed.service.pid
    assert start["request"]["caller_uid"] == str(sudo_bed.uid)


def test_sudo_has_no_child_while_the_module_waits(sudo_bed):
    """Read in /proc while the helper waits for a Ctrl-C that does not come: sudo (the PAM
    host) has no child at all, the helper's parent is localauthd."""
    bed = sudo_bed.bed
    sudo_bed.write_stack(bed.line("cancel", "sufficient", "fake_wait=3"))
    proc = subprocess.Popen(sudo_bed.argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        while not bed.events("start"):
            assert time.monotonic() < deadline and proc.poll() is None, "the helper never started"
            time.sleep(0.02)
        start, = bed.events("start")
        # setpriv exec'd sudo: the same process, now the PAM host.
        assert Path(f"/proc/{proc.pid}/exe").resolve() == Path("/usr/bin/sudo")
        assert children_of(proc.pid) == []
        assert start["ppid"] == bed.service.pid and start["pid"] in children_of(bed.service.pid)
        out, err = proc.communicate(PASSWORD + "\n", timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.split()[-1] == "0"


# --- no service: the password at once ----------------------------------------------------

def test_no_service_pamtester_gets_the_password_at_once(bed):
    """No socket at the service's path: one lstat, one log line (PAM_AUTHINFO_UNAVAIL) for
    the whole transaction (the authsucc and account lines say nothing more), the password,
    and the module neither forks, connects nor waits for anything."""
    missing = absent_socket(bed)
    args = f"service={missing}"
    svc = bed.world.service("la-absent", [
        bed.line("match").replace(bed.arg, args), f"auth required {bed.world.matrix}",
        f"auth optional {MODULE} authsucc {args}", f"account required {MODULE} {args}",
        "account required pam_permit.so"])
    out = bed.world.root / "strace.out"
    argv = bed.world.command(["pamtester", svc, USER, "authenticate", "acct_mgmt"],
                             prefix=strace(out, "connect", "socket", "poll", "ppoll", "select",
                                           "pselect6", "nanosleep", "clock_nanosleep",
                                           "newfstatat", "lstat", "statx"))
    p = subprocess.run(argv, input=PASSWORD + "\n", capture_output=True, text=True,
                       env=bed.world._base_env(), timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "Password: " in p.stderr and "successfully authenticated" in p.stdout + p.stderr
    ours = [l for l in pamenv.parse_logs(p.stderr) if "pam_localauth" in l.message
            or "result=" in l.message]
    assert len(ours) == 1, ours
    o, = outcomes(ours)
    assert (o["result"], o["pam"]) == ("helperFailure", "PAM_AUTHINFO_UNAVAIL")
    assert o["cause"].startswith(f"localauthd is not running (no socket at {missing})"), o
    found = calls(out)
    assert {pid for pid, *_ in found} == {found[0][0]}
    waits = [c for c in found if c[1] in FORKS + ("connect", "socket", "poll", "ppoll", "select",
                                                   "pselect6", "nanosleep", "clock_nanosleep")]
    assert waits == [], waits
    looked = [c for c in found if str(missing) in c[2]]
    assert looked and all(c[3] == "-1" for c in looked), looked   # ENOENT, once a line
    assert bed.events() == []


def test_no_service_sudo_gets_the_password_with_one_line(sudo_bed):
    """Real sudo with no service: one line in the system log, the password works, and sudo's
    only child is its command."""
    bed = sudo_bed.bed
    missing = absent_socket(bed)
    sudo_bed.write_stack(bed.line("match").replace(bed.arg, f"service={missing}"))
    out = bed.world.root / "strace.out"
    with Syslog() as syslog:
        mark = syslog.mark()
        p = subprocess.run(namespace_prefix(syslog) + strace(out, "newfstatat", "lstat", "statx")
                           + sudo_bed.argv(), input=PASSWORD + "\n", capture_output=True,
                           text=True, timeout=60)
        said = [m for m in syslog.since(mark) if "pam_localauth" in m]
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["0"] and "password for" in p.stderr
    assert len(said) == 1, said
    assert "pam=PAM_AUTHINFO_UNAVAIL" in said[0] and f"no socket at {missing}" in said[0], said
    found = calls(out)
    host = found[0][0]
    looked = [i for i, c in enumerate(found) if str(missing) in c[2]]
    assert len(looked) == 1 and found[looked[0]][3] == "-1", [found[i] for i in looked]
    only_the_command_forked(found, host, after=looked[0])
    assert bed.events() == []


@pytest.mark.alone("a time bound: the password prompt right after the module's start")
def test_no_service_prompt_follows_the_module_at_once(bed):
    """A root caller with no service: the password module's prompt comes right after the
    module started (scripts/bench measures it, well within 1 ms; a loaded test machine gets
    a looser bound here). Stacks that are otherwise the same, with and without the module,
    take the same time to their prompt."""
    missing = absent_socket(bed)
    with_module = bed.world.service("la-absent-timed", [
        bed.line("match").replace(bed.arg, f"service={missing}"), f"auth required {bed.world.matrix}"])
    without = bed.world.service("la-password-only", [f"auth required {bed.world.matrix}"])

    def to_prompt(service):
        r = bed.drive(service)
        assert r.rv == "PAM_SUCCESS" and r.messages[0] == ["PAM_PROMPT_ECHO_OFF", "Password: "]
        return r.times["messages"][0] - r.times["start"]

    took = sorted(to_prompt(with_module) for _ in range(5))[2]
    base = sorted(to_prompt(without) for _ in range(5))[2]
    assert took - base < 0.005, (took, base)
