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
  LOCALAUTH_SKIP_BUILD=1 it packages build/ as it is).

When a test fails, the tail of its bed's fprintd log is printed with the failure
("Captured stdout teardown"). SIGTERM to pytest raises KeyboardInterrupt, so fixtures and
the atexit hook still stop the daemons; if pytest is killed outright the daemons die with
it (PR_SET_PDEATHSIG), only the temp directory is left.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from testbed import DEFAULT_USER as USER, Bed  # noqa: E402


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_interrupt)


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
    """A /dev/log of the test's own (launcherbed.Syslog) that records what the helper, the
    launcher and the module log."""
    from launcherbed import Syslog
    s = Syslog()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="session")
def deb(tmp_path_factory) -> Path:
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
