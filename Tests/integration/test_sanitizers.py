"""The module under memory checkers, and what the real helper inherits from its caller.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_sanitizers.py

* The module built with AddressSanitizer and UndefinedBehaviorSanitizer
  (`scripts/build --sanitize`, gcc's runtime preloaded) passes test_pam_module.py.
* `valgrind --leak-check=full` on a whole `pamtester` run, with the real helper against
  the real fprintd (testbed.py), shows no error and nothing definitely lost: once for a
  match, once for a failed match followed by the password.
* The real helper, while it waits for a finger, has only PATH in its environment although
  the caller set LD_PRELOAD, LD_LIBRARY_PATH, DBUS_SYSTEM_BUS_ADDRESS and SWIFT_* (and
  nothing preloaded is mapped), and no descriptor of the caller's.
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pamenv  # noqa: E402
import system  # noqa: E402
from pamenv import MODULE, PamWorld, outcomes  # noqa: E402
from real_helper import PRESENT, bed_args, needs_helper, parent_of, service_for  # noqa: E402

REPO = pamenv.REPO
USER = "la-san-user"
PASSWORD = "san-pw-5"
ENROLLED, STRANGER = "f1", "f-stranger"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


# --- AddressSanitizer and UndefinedBehaviorSanitizer ------------------------------------

@pytest.fixture
def source_copy():
    """A copy of the sources to build in: scripts/build rewrites build/lib/security, which
    the tests running meanwhile load. Open to all (0755), as the repository is: the module
    tests load the module in drivers that run as other users too."""
    work = Path(tempfile.mkdtemp(prefix="localauth-asan-"))
    try:
        work.chmod(0o755)
        yield system.source_copy(REPO, work / "src")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_module_tests_pass_under_asan_and_ubsan(source_copy):
    if os.environ.get("LOCALAUTH_PAM_MODULE"):
        pytest.skip("already running against another module build")
    build = subprocess.run([str(source_copy / "scripts" / "build"), "--c-only", "--sanitize"],
                           capture_output=True, text=True)
    if build.returncode != 0:
        pytest.skip(f"no sanitizer build here: {build.stderr[-500:]}")
    # scripts/build prints the exact environment the sanitizer build needs.
    hint = re.search(r"test it: (.*?) /usr/bin/python3", build.stdout)
    assert hint, build.stdout
    env = dict(os.environ)
    env.update(dict(kv.split("=", 1) for kv in hint.group(1).split()))
    env["LOCALAUTH_SKIP_BUILD"] = "1"
    # The run inside runs within this test (which holds the parallel run's shared lock):
    # it takes no lock of its own, else an `alone` test waiting at the gate would wait for
    # this one, and this one for it.
    env.pop("LOCALAUTH_TEST_ALONE_LOCK", None)
    assert Path(env["LOCALAUTH_PAM_MODULE"]).is_file()
    run = subprocess.run([pamenv.PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(HERE / "test_pam_module.py")], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=900)
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert "AddressSanitizer" not in run.stdout + run.stderr, tail
    assert "runtime error" not in run.stdout + run.stderr, tail
    assert re.search(r"\d+ passed", run.stdout), tail


# --- valgrind on pamtester with the real helper ------------------------------------------

@pytest.fixture
def world():
    with PamWorld() as w:
        w.add_user(USER, PASSWORD)
        yield w


def helper_args(world, bed, *extra):
    state = world.root / "state"
    state.mkdir(mode=0o700, exist_ok=True)
    return " ".join(bed_args(world, bed, state, *extra))


def valgrind_pamtester(world, service, bed, finger):
    """pamtester under valgrind on a pseudo-terminal, as a user runs it: the finger is
    presented once the prompt shown while the reader waits is on the screen (misc_conv
    discards input that arrives before it starts reading); after a failed match the
    password is typed. Returns (exit status, transcript, valgrind's report)."""
    import pexpect
    log = world.root / "valgrind.log"
    argv = world.command(["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite",
                          "--error-exitcode=99", f"--log-file={log}",
                          "pamtester", service, USER, "authenticate"])
    child = pexpect.spawn(argv[0], argv[1:], env=world._base_env(), timeout=120,
                          encoding="utf-8", codec_errors="replace")
    try:
        child.expect("Enter")     # "... or press Enter to use your password"
        result = bed.scan(finger, timeout=60)
        if result != "verify-match":
            child.expect("Password: ")
            child.sendline(PASSWORD)
        child.expect(pexpect.EOF)
    finally:
        pamenv.end_child(child)
    return result, child.exitstatus, child.before or "", log.read_text()


@needs_helper
@pytest.mark.parametrize("finger", [ENROLLED, STRANGER])
def test_valgrind_pamtester_with_the_real_helper(world, bed, finger):
    if not shutil.which("valgrind"):
        pytest.skip("valgrind missing (scripts/install-deps installs it)")
    bed.enroll(USER, "right-index-finger", ENROLLED)
    args = helper_args(world, bed, "max_tries=1")
    svc = world.service("la-vg", [f"auth sufficient {MODULE} {args}",
                                  f"auth required {world.matrix}"])
    result, status, transcript, report = valgrind_pamtester(world, svc, bed, finger)
    assert result == ("verify-match" if finger == ENROLLED else "verify-no-match")
    assert status == 0, (transcript, report[-3000:])
    assert "ERROR SUMMARY: 0 errors" in report, report[-3000:]
    lost = re.search(r"definitely lost: ([\d,]+) bytes", report)
    assert lost is None or lost.group(1) == "0", report[-3000:]


# --- what the real helper inherits -------------------------------------------------------

@needs_helper
def test_real_helper_gets_a_clean_environment_and_no_descriptor(world, bed):
    """The helper is localauthd's (service=SOCKET), not the caller's child: it has the
    service's fixed environment, the caller's connection as fd 0 and 1, and nothing the
    caller holds -- whatever the caller's environment and descriptors."""
    bed.enroll(USER, "right-index-finger", ENROLLED)
    svc = world.service("la-env", [f"auth sufficient {MODULE} {helper_args(world, bed)}",
                                   f"auth required {world.matrix}"])
    service = service_for(world, bed)
    marker = Path(tempfile.mkstemp(prefix="la-inherited-", dir=world.root)[1])
    caller_env = {**PRESENT, "LD_LIBRARY_PATH": "/nonexistent/lib",
                  "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/caller-bus",
                  "SWIFT_BACKTRACE": "enable=yes,interactive=no",
                  "SWIFT_DETERMINISTIC_HASHING": "1", "LA_CALLER_SECRET": "x"}
    # The caller holds a descriptor without close-on-exec, as careless applications do.
    prefix = ["/bin/sh", "-c", 'exec 7<"$0"; exec "$@"', str(marker)]
    mark = bed.mark()
    said = 0      # the spare that serves this request may have been started before now
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        run = pool.submit(world.drive, svc, USER, answers=[PASSWORD], env=caller_env,
                          prefix=prefix)
        try:
            bed.wait_event("VerifyFingerSelected", since=mark, timeout=20)
            pids = service.helpers()
            assert len(pids) == 1, pids
            pid = pids[0]
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            fds = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}")
                   for fd in os.listdir(f"/proc/{pid}/fd")}
            maps = Path(f"/proc/{pid}/maps").read_text()
            assert parent_of(pid) == service.pid
            # The service's line names the peer it serves with this helper: the caller.
            started = service.syslog.wait_for(
                lambda i, m: i == "localauthd" and re.search(f": helper pid {pid}\\b", m), since=said)
            assert started, service.lines("localauthd", said)
            caller = int(re.search(r"\bpid (\d+)", started[1]).group(1))
            caller_fds = {os.readlink(f"/proc/{caller}/fd/{fd}")
                          for fd in os.listdir(f"/proc/{caller}/fd")}
            assert str(marker) in caller_fds, caller_fds     # the caller really holds it
        finally:
            bed.scan(ENROLLED)
        result = run.result(30)
    # The driver itself had all of it (so the test means something).
    assert f"LD_PRELOAD={pamenv.PAM_WRAPPER}" in " ".join(world.command(["x"], env=caller_env))
    assert [e for e in environ if e] == [b"PATH=/usr/sbin:/usr/bin:/sbin:/bin"]
    assert "pam_wrapper" not in maps and "libswift" not in maps
    assert fds[0].startswith("socket:") and fds[1] == fds[0] and fds[2] == "/dev/null", fds
    assert str(marker) not in fds.values(), fds
    # Beyond 0-2 only what the helper opened itself or the service gave it (bus and log
    # sockets, a wake-up pipe, the caller's pidfd): nothing the calling process holds.
    own = {fd: t for fd, t in fds.items() if fd > 2}
    assert all(t.startswith(("socket:", "anon_inode:", "pipe:")) for t in own.values()), fds
    assert not set(own.values()) & caller_fds, (fds, caller_fds)
    assert outcomes(result.logs)[0]["result"] == "success"
