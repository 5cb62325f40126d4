"""pytest fixtures for localauth's integration tests (run with /usr/bin/python3 -m pytest).

* ``bed``: a fresh Bed per test (private system bus, real polkitd, real fprintd -t with the
  virtual reader, empty state directory). Starting one takes 0.04-0.06 s and stopping one
  0.004-0.015 s (medians) on the 2-core CI machine (see testbed.py for the measurement), so every test
  gets its own.
* ``bed_factory(**kwargs)``: more beds or other modes, e.g. ``bed_factory(reader=False)``,
  ``bed_factory(polkit="deny")``, ``bed_factory(fprintd=False)``; all stopped at teardown.
* ``enrolled_bed``: ``bed`` with testbed.DEFAULT_USER's right-index-finger enrolled as
  print ``f1``.
* ``deb``: the Debian package scripts/package builds (once per session; with
  LOCALAUTH_SKIP_BUILD=1 it packages build/ as it is; LOCALAUTH_TEST_DEB names one that
  scripts/test packaged already).

Files run in parallel (scripts/test: pytest-xdist, ``-n N --dist loadgroup``): each file is
a group of its own, so one worker runs a whole file in order, with its module fixtures once.
What a file shares with no other file is its own; what is machine-wide is marked:

* ``@pytest.mark.alone(reason)``: the test runs while no other test of the run does (an
  exclusive lock that every other test takes shared, around its whole set-up, call and
  tear-down): a test whose verdict is a time bound, or that uses something of which the
  machine has one (the kernel's audit daemon).
* ``@pytest.mark.xdist_group(name)``: tests of several files that must run one after
  another on the same worker.

When a test fails, the tail of its bed's fprintd log is printed with the failure
("Captured stdout teardown"). SIGTERM to pytest raises KeyboardInterrupt, so fixtures and
the atexit hook still stop the daemons; if pytest is killed outright the daemons die with
it (PR_SET_PDEATHSIG), only the temp directory is left.
"""

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from testbed import DEFAULT_USER as USER, Bed  # noqa: E402


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


# Ctrl-C and Ctrl-\ reach the programs under test as on a user's terminal, however the suite
# was started: a command run in the background of a shell without job control (`cmd &`,
# `nohup`) starts with SIGINT and SIGQUIT ignored, which every child inherits through exec
# (pamtester, sudo and the module then rightly leave them ignored, and every Ctrl-C case
# failed). A handler here is reset to the default in each child at exec; an ignored signal
# would not be.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


# The lock of ``alone`` tests: made by the controlling process before the workers start
# (they inherit the variable), removed by it at the end.
ALONE_LOCK = "LOCALAUTH_TEST_ALONE_LOCK"


def pytest_configure(config):
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_interrupt)
    config.addinivalue_line("markers", "alone(reason): runs while no other test of the run does")
    if not hasattr(config, "workerinput") and ALONE_LOCK not in os.environ:
        d = tempfile.mkdtemp(prefix="localauth-test-alone-")
        os.environ[ALONE_LOCK] = d
        config._localauth_alone_dir = d


def pytest_unconfigure(config):
    d = getattr(config, "_localauth_alone_dir", None)
    if d:
        for name in ("gate", "run"):
            Path(d, name).unlink(missing_ok=True)
        os.rmdir(d)
        os.environ.pop(ALONE_LOCK, None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each file is a group of its own (loadgroup then schedules whole files, as loadfile
    does), unless its tests name another group."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.name))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """An ``alone`` test holds ``run`` exclusively, every other test holds it shared. The
    ``gate`` in front of it keeps new tests from starting while an ``alone`` one waits for
    the running ones to end (flock alone lets shared holders starve an exclusive one)."""
    d = os.environ.get(ALONE_LOCK)
    if d is None:
        yield
        return
    alone = item.get_closest_marker("alone") is not None
    with open(Path(d, "gate"), "a") as gate, open(Path(d, "run"), "a") as run:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(run, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(run, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


def _dump_logs(request, beds):
    rep = getattr(request.node, "rep_call", None)
    if rep is None or not rep.failed:
        return
    for b in beds:
        if b.dir is None:
            continue
        print(f"--- {b.dir} pids={b.pids}")
        print(b.log("fprintd")[-6000:])


@pytest.fixture
def bed(request):
    b = Bed()
    try:
        yield b
    finally:
        _dump_logs(request, [b])
        b.stop()


@pytest.fixture
def bed_factory(request):
    beds = []

    def make(**kwargs) -> Bed:
        b = Bed(**kwargs)
        beds.append(b)
        return b

    try:
        yield make
    finally:
        _dump_logs(request, beds)
        for b in beds:
            b.stop()


@pytest.fixture
def enrolled_bed(bed):
    bed.enroll(USER, "right-index-finger", "f1")
    return bed


@pytest.fixture
def syslog():
    """A /dev/log of the test's own (servicebed.Syslog) that records what the helper, the
    service and the module log."""
    from servicebed import Syslog
    s = Syslog()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="session")
def deb(tmp_path_factory) -> Path:
    given = os.environ.get("LOCALAUTH_TEST_DEB")
    if given:
        path = Path(given)
        assert path.is_file() and path.name.startswith("localauth_") and path.suffix == ".deb", path
        return path
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path_factory.mktemp("deb")
    argv = [str(repo / "scripts" / "package"), "--output", str(out)]
    if os.environ.get("LOCALAUTH_SKIP_BUILD") == "1":
        argv.append("--no-build")
    proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.is_file() and path.name.startswith("localauth_") and path.suffix == ".deb", path
    return path
