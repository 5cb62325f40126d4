"""FprintdSensor against the real fprintd, through the hidden `localauthctl sensor-verify`
(the sensor alone, nothing counted; `verify` runs the whole engine) and `enrolled-set`,
on the test bed (testbed.py: a private bus, polkitd, fprintd with libfprint's virtual
reader).

Run as root with /usr/bin/python3 -m pytest Tests/integration/test_fprintd_sensor.py.
The tool is built with `swift build` first (incremental) unless LOCALAUTHCTL names one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ctl_support import localauthctl_binary  # noqa: E402
from testbed import Bed  # noqa: E402

USER = "alice"
PLACE = "Swipe your right index finger across the fingerprint reader"  # the virtual reader swipes
RETRY_RESULTS = ["verify-retry-scan", "verify-swipe-too-short",
                 "verify-finger-not-centered", "verify-remove-and-retry"]


# ---- fixtures and helpers -------------------------------------------------------------

@pytest.fixture(scope="session")
def ctl() -> str:
    """The tool as the other localauthctl tests find it: LOCALAUTHCTL, else build/ (with
    LOCALAUTH_SKIP_BUILD=1: scripts/build made it), else a debug build."""
    return localauthctl_binary()


@pytest.fixture
def bed():
    with Bed() as b:
        yield b


@pytest.fixture
def enrolled(bed):
    bed.enroll(USER, "right-index-finger", "f1")
    return bed


class Run:
    """A finished `localauthctl` process."""

    def __init__(self, proc: subprocess.Popen, started: float, timeout: float):
        out, err = proc.communicate(timeout=timeout)
        self.elapsed = time.monotonic() - started
        self.rc = proc.returncode
        self.lines = out.splitlines()
        self.err = err
        self.outcome = self.lines[-1] if self.lines else ""

    def __repr__(self) -> str:
        return f"Run(rc={self.rc}, {self.elapsed:.3f}s, lines={self.lines}, err={self.err!r})"


def start_verify(ctl: str, bed: Bed, *extra: str, user: str = USER) -> tuple:
    argv = [ctl, "sensor-verify", user, "--dbus-address", bed.address, *extra]
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc, started


def verify(ctl: str, bed: Bed, *extra: str, feed=None, timeout: float = 30) -> Run:
    """Runs `localauthctl verify`; `feed` (commands for the virtual reader) is injected
    from a thread, each once the reader waits for a finger."""
    proc, started = start_verify(ctl, bed, *extra)
    injection = bed.inject_async(feed) if feed else None
    run = Run(proc, started, timeout)
    if injection is not None:
        injection.wait(10)
    return run


def enrolled_set(ctl: str, bed: Bed, user: str = USER, fprint_dir=None) -> dict:
    out = subprocess.run([ctl, "enrolled-set", user, "--dbus-address", bed.address,
                          "--fprint-dir", str(fprint_dir or bed.state_dir)],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out
    return dict(line.split("=", 1) for line in out.stdout.splitlines())


# ---- verification ---------------------------------------------------------------------

def test_match(ctl, enrolled):
    run = verify(ctl, enrolled, feed=["SCAN f1"])
    assert run.rc == 0, run
    assert run.lines == [PLACE, "verify-match", "match"], run


def test_three_no_matches_fail_the_prompt(ctl, enrolled):
    run = verify(ctl, enrolled, feed=["SCAN other"] * 3)
    assert run.rc == 1, run
    assert run.outcome == "authenticationFailed", run
    assert run.lines.count("verify-no-match") == 3, run
    assert run.lines.count(PLACE) == 3, run  # one verification per try


def test_retry_results_are_not_counted(ctl, enrolled):
    feed = ["RETRY 0", "SCAN other", "RETRY 1", "RETRY 2", "SCAN other", "RETRY 3", "SCAN f1"]
    run = verify(ctl, enrolled, feed=feed)
    assert run.rc == 0, run
    assert run.lines.count("verify-no-match") == 2, run
    assert [l for l in run.lines if l in RETRY_RESULTS] == [
        "verify-retry-scan", "verify-swipe-too-short", "verify-finger-not-centered",
        "verify-remove-and-retry"], run
    assert "Scan incomplete - try again" in run.lines, run
    # A retry continues the same verification: only three VerifyStarts for 2 failures + match.
    assert run.lines.count(PLACE) == 3, run


def test_reader_disconnected_during_scan(ctl, enrolled):
    run = verify(ctl, enrolled, feed=["ERROR 5"])
    assert run.outcome == "biometryDisconnected", run
    assert "verify-disconnected" in run.lines, run


def test_unknown_error_is_not_available(ctl, enrolled):
    run = verify(ctl, enrolled, feed=["ERROR 0"])
    assert run.outcome == "biometryNotAvailable", run
    assert "verify-unknown-error" in run.err, run


@pytest.mark.alone("a time bound: the outcome within 1 s of the scan timeout")
def test_scan_timeout_then_reader_is_free(ctl, enrolled):
    run = verify(ctl, enrolled, "--scan-timeout", "1")
    assert run.outcome == "systemCancel", run
    assert "No finger detected" in "\n".join(run.lines), run
    assert 1.0 <= run.elapsed < 2.0, run
    # VerifyStop and Release ran: the next client can claim and match at once.
    again = verify(ctl, enrolled, feed=["SCAN f1"])
    assert again.outcome == "match", again


def test_interrupt_cancels_and_releases(ctl, enrolled):
    proc, started = start_verify(ctl, enrolled)
    assert enrolled.wait_finger_needed(10)
    proc.send_signal(signal.SIGINT)
    run = Run(proc, started, 10)
    assert run.outcome == "userCancel", run
    again = verify(ctl, enrolled, feed=["SCAN f1"])
    assert again.outcome == "match", again


# ---- no reader, no prints, no daemon ---------------------------------------------------

def test_no_reader(ctl):
    with Bed(reader=False) as bed:
        run = verify(ctl, bed)
    assert run.outcome == "biometryNotAvailable", run
    assert "no fingerprint reader" in run.err, run


def test_no_prints_enrolled(ctl, bed):
    run = verify(ctl, bed)
    assert run.outcome == "biometryNotEnrolled", run


# "Fails fast": the answer is the bus's own (no such name, no such socket), not the end of
# a wait. The bus timeout is set to FAST_BOUND, so a run that waited for it is told apart
# from one that did not by a margin no machine's speed closes (half of it).
FAST_BOUND = 20


def test_fprintd_not_running_fails_fast(ctl):
    with Bed(fprintd=False) as bed:
        run = verify(ctl, bed, "--bus-timeout", str(FAST_BOUND))
    assert run.outcome == "biometryNotAvailable", run
    assert "ServiceUnknown" in run.err or "NameHasNoOwner" in run.err, run
    assert run.elapsed < FAST_BOUND / 2, run


def test_no_bus_at_the_address(ctl, tmp_path):
    run = Run(*_popen([ctl, "sensor-verify", USER, "--bus-timeout", str(FAST_BOUND),
                       "--dbus-address", f"unix:path={tmp_path}/none"]), FAST_BOUND * 2)
    assert run.outcome == "biometryNotAvailable", run
    assert run.elapsed < FAST_BOUND / 2, run


def test_polkit_refusal_is_not_available(ctl):
    with Bed(polkit="deny") as bed:
        run = verify(ctl, bed)
    assert run.outcome == "biometryNotAvailable", run
    assert "PermissionDenied" in run.err, run


@pytest.mark.skipif(os.path.exists("/run/dbus/system_bus_socket"),
                    reason="a system bus runs at the default address")
def test_environment_bus_address_is_ignored(ctl, enrolled):
    run = Run(*_popen([ctl, "sensor-verify", USER], env=enrolled.env()), 10)
    assert run.outcome == "biometryNotAvailable", run


def _popen(argv, env=None):
    started = time.monotonic()
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env), started


# ---- fprintd misbehaving ---------------------------------------------------------------

@pytest.mark.alone("a time bound: the outcome within 1 s of the bus timeout")
@pytest.mark.parametrize("bus_timeout", [0.5, 2.0])
def test_frozen_fprintd_is_bounded_by_the_bus_timeout(ctl, enrolled, bus_timeout):
    enrolled.freeze_fprintd()
    try:
        run = verify(ctl, enrolled, "--bus-timeout", str(bus_timeout))
    finally:
        enrolled.thaw_fprintd()
    print(f"frozen fprintd, bus timeout {bus_timeout}s: outcome after {run.elapsed:.3f}s")
    assert run.outcome == "biometryNotAvailable", run
    assert bus_timeout <= run.elapsed < bus_timeout + 1.0, run


@pytest.mark.alone("a time bound: the outcome within 1 s of the bus timeout")
def test_frozen_bus_daemon_is_bounded_too(ctl, enrolled):
    """sd-bus bounds its own handshake at 90 s; the sensor bounds it with the bus timeout."""
    bus_pid = enrolled.pids["dbus"]
    os.kill(bus_pid, signal.SIGSTOP)
    try:
        run = verify(ctl, enrolled, "--bus-timeout", "0.5")
    finally:
        os.kill(bus_pid, signal.SIGCONT)
    assert run.outcome == "biometryNotAvailable", run
    assert run.elapsed < 0.5 + 1.0, run


@pytest.mark.alone("a time bound: the outcome within 1 s of both timeouts")
def test_fprintd_frozen_mid_scan(ctl, enrolled):
    proc, started = start_verify(ctl, enrolled, "--scan-timeout", "1", "--bus-timeout", "0.5")
    assert enrolled.wait_finger_needed(10)
    enrolled.freeze_fprintd()
    try:
        run = Run(proc, started, 10)
    finally:
        enrolled.thaw_fprintd()
    # The scan times out; VerifyStop then times out once and Release is not attempted.
    assert run.outcome == "systemCancel", run
    assert run.elapsed < 1.0 + 0.5 + 1.0, run


@pytest.mark.alone("a time bound: the outcome within 1 s of the kill")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_fprintd_killed_mid_scan(ctl, enrolled, sig):
    proc, started = start_verify(ctl, enrolled, "--scan-timeout", "20")
    assert enrolled.wait_finger_needed(10)
    killed = time.monotonic()
    enrolled.kill_fprintd(sig)
    run = Run(proc, started, 10)
    after_kill = time.monotonic() - killed
    print(f"fprintd killed ({sig.name}) mid-scan: outcome {after_kill:.3f}s after the kill")
    assert run.outcome == "biometryNotAvailable", run
    assert "fprintd left the bus" in run.err, run
    assert after_kill < 1.0, run


def test_fprintd_restarted_mid_scan(ctl, enrolled):
    proc, started = start_verify(ctl, enrolled, "--scan-timeout", "20")
    assert enrolled.wait_finger_needed(10)
    enrolled.restart_fprintd()
    run = Run(proc, started, 10)
    assert run.outcome == "biometryNotAvailable", run
    assert "fprintd left the bus" in run.err, run


@pytest.mark.alone("a time bound: the outcome within 1 s")
def test_reader_claimed_by_another_client(ctl, enrolled):
    with enrolled.hold_claim("root"):
        run = verify(ctl, enrolled)
    assert run.outcome == "systemCancel", run
    assert "in use by another session" in "\n".join(run.lines), run
    assert run.elapsed < 1.0, run


# ---- the enrolled set ------------------------------------------------------------------

def test_enrolled_set_shape(ctl, enrolled):
    s = enrolled_set(ctl, enrolled)
    assert s["device"] == "virtual_device/0", s
    assert s["name"] == "Virtual device for debugging", s
    assert s["fingers"] == "right-index-finger", s
    assert s["scan-type"] == "swipe", s
    assert len(s["material"]) == 64, s  # one SHA-256 per finger
    assert len(s["digest"]) == 64, s


def test_enrolled_set_is_stable(ctl, enrolled):
    first = enrolled_set(ctl, enrolled)
    assert verify(ctl, enrolled, feed=["SCAN f1"]).outcome == "match"
    assert verify(ctl, enrolled, feed=["SCAN other"] * 3).outcome == "authenticationFailed"
    assert enrolled_set(ctl, enrolled) == first
    # A restarted fprintd renumbers nothing here, but the identity must not depend on it.
    enrolled.restart_fprintd()
    assert enrolled_set(ctl, enrolled) == first


def test_enrolled_set_changes_when_a_finger_is_added(ctl, enrolled):
    before = enrolled_set(ctl, enrolled)
    enrolled.enroll(USER, "left-thumb", "f2")
    after = enrolled_set(ctl, enrolled)
    assert after["fingers"] == "left-thumb,right-index-finger", after
    assert len(after["material"]) == 128, after
    assert after["digest"] != before["digest"]


def test_enrolled_set_changes_when_a_finger_is_deleted(ctl, enrolled):
    enrolled.enroll(USER, "left-thumb", "f2")
    before = enrolled_set(ctl, enrolled)
    enrolled.delete(USER, "left-thumb")
    after = enrolled_set(ctl, enrolled)
    assert after["fingers"] == "right-index-finger", after
    assert after["digest"] != before["digest"]


def test_enrolled_set_changes_when_a_finger_is_re_enrolled(ctl, enrolled):
    before = enrolled_set(ctl, enrolled)
    enrolled.delete(USER, "right-index-finger")
    enrolled.enroll(USER, "right-index-finger", "f9")
    after = enrolled_set(ctl, enrolled)
    assert after["fingers"] == before["fingers"]  # same finger names ...
    assert after["material"] != before["material"]  # ... different print
    assert after["digest"] != before["digest"]


def test_enrolled_set_after_all_prints_deleted(ctl, enrolled, tmp_path):
    enrolled.delete(USER)
    out = subprocess.run([ctl, "enrolled-set", USER, "--dbus-address", enrolled.address,
                          "--fprint-dir", str(enrolled.state_dir)],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 1 and out.stdout.strip() == "biometryNotEnrolled", out


def test_enrolled_set_without_readable_storage(ctl, enrolled, tmp_path):
    s = enrolled_set(ctl, enrolled, fprint_dir=tmp_path / "elsewhere")
    assert s["device"] == "name=Virtual device for debugging", s
    assert s["material"] == "", s
    assert s["fingers"] == "right-index-finger", s


def test_enrolled_set_ignores_symlinked_prints(ctl, enrolled, tmp_path):
    """A print file replaced by a symbolic link is not followed: the material is empty."""
    device_dir = enrolled.state_dir / USER / "virtual_device" / "0"
    original = device_dir / "7"
    moved = tmp_path / "7"
    moved.write_bytes(original.read_bytes())
    original.unlink()
    original.symlink_to(moved)
    try:
        s = enrolled_set(ctl, enrolled)
    finally:
        original.unlink()
        original.write_bytes(moved.read_bytes())
    assert s["material"] == "", s


# ---- figures ---------------------------------------------------------------------------

@pytest.mark.alone("a time bound: the median verify within 1 s")
def test_timings(ctl, enrolled, capsys):
    """Whole-process times of a matching `localauthctl verify` and of `fprintd-verify`
    (fprintd's own client) on the same bed, in the same run; printed, loosely bounded."""
    ours, theirs = [], []
    for _ in range(10):
        ours.append(verify(ctl, enrolled, feed=["SCAN f1"]).elapsed)
        started = time.monotonic()
        proc = subprocess.Popen(["fprintd-verify", USER], env=enrolled.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        injection = enrolled.inject_async(["SCAN f1"])
        out, _ = proc.communicate(timeout=30)
        theirs.append(time.monotonic() - started)
        injection.wait(10)
        assert "verify-match" in out, out
    ours.sort()
    theirs.sort()
    with capsys.disabled():
        print(f"\nverify-match, whole process, median of 10: localauthctl "
              f"{ours[5] * 1000:.0f} ms, fprintd-verify {theirs[5] * 1000:.0f} ms "
              f"(ratio {ours[5] / theirs[5]:.2f})")
    assert ours[5] < 1.0
