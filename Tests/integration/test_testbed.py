"""Tests of the localauth test bed itself, against the real fprintd and polkitd.

Run: cd /work/main && /usr/bin/python3 -m pytest -q Tests/integration/test_testbed.py
"""

import os
import signal
import subprocess
import time
from pathlib import Path

import dbus
import dbus.bus
import pytest
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

from testbed import CLI, DEFAULT_USER as USER, PYTHON, BedError, DBusCallError, _wait

FPRINT = "net.reactivated.Fprint"
DEVICE_IFACE = "net.reactivated.Fprint.Device"
MANAGER_IFACE = "net.reactivated.Fprint.Manager"
ERR = "net.reactivated.Fprint.Error."


def alive(pid: int) -> bool:
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Client:
    """An fprintd client written with dbus-python, as a PAM-side program would use it.
    Proxies are made with introspect=False: otherwise dbus-python introspects each object
    asynchronously when the proxy is made and holds the first call until that finished,
    which with fprintd frozen means the default 25 s timeout, not the call's own."""

    def __init__(self, address: str):
        self.bus = dbus.bus.BusConnection(address, mainloop=DBusGMainLoop())
        mgr = dbus.Interface(self.bus.get_object(FPRINT, "/net/reactivated/Fprint/Manager",
                                                 introspect=False),
                             MANAGER_IFACE)
        self.path = mgr.GetDefaultDevice()
        self.dev = dbus.Interface(self.bus.get_object(FPRINT, self.path, introspect=False),
                                  DEVICE_IFACE)
        self.statuses = []
        self.started = False
        self.done_count = 0
        self.bus.add_signal_receiver(self._on_status, "VerifyStatus", DEVICE_IFACE,
                                     path=self.path)

    def _on_status(self, result, done):
        if self.started:  # statuses before VerifyStart returned are not ours
            self.statuses.append((str(result), bool(done)))
            self.done_count += bool(done)

    def start(self, finger: str = "any") -> int:
        """VerifyStart; returns the marker to pass to wait_done."""
        mark = self.done_count
        self.started = False
        self.dev.VerifyStart(finger)
        self.started = True
        return mark

    def wait_done(self, since: int, timeout: float = 10.0) -> tuple:
        """Run the GLib main loop until a final VerifyStatus newer than ``since``."""
        ctx = GLib.MainContext.default()
        waker = GLib.timeout_add(20, lambda: True)
        deadline = time.monotonic() + timeout
        try:
            while self.done_count <= since:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no final VerifyStatus in {timeout}s: {self.statuses}")
                ctx.iteration(True)
        finally:
            GLib.source_remove(waker)
        return self.statuses[-1]

    def stop(self):
        self.started = False
        self.dev.VerifyStop()

    def verify(self, user: str, attempts: int = 1, timeout: float = 10.0,
               release_between: bool = False, finger: str = "any") -> list:
        """Claim, then up to ``attempts`` times VerifyStart/wait for done/VerifyStop (like
        pam_fprintd's max-tries); Release. Returns every VerifyStatus seen."""
        self.dev.Claim(user)
        try:
            for i in range(attempts):
                if i and release_between:
                    self.dev.Release()
                    self.dev.Claim(user)
                result, _ = self.wait_done(self.start(finger), timeout)
                self.stop()
                if result == "verify-match":
                    break
        finally:
            self.dev.Release()
        return self.statuses

    def close(self):
        self.bus.close()


@pytest.fixture
def client(enrolled_bed):
    c = Client(enrolled_bed.address)
    yield c
    c.close()


# --------------------------------------------------------------------------------------

def test_enroll_is_listed_and_stored(bed):
    results = bed.enroll(USER, "right-index-finger", "f1")
    assert results == ["enroll-stage-passed"] * 4 + ["enroll-completed"]
    assert bed.list(USER) == ["right-index-finger"]
    assert bed.print_file(USER, "right-index-finger").is_file()
    assert bed.print_file(USER).parent == bed.state_dir / USER / "virtual_device" / "0"
    # fprintd's own tool agrees, through the bed's bus
    out = subprocess.run(["fprintd-list", USER], env=bed.env(), capture_output=True,
                         text=True, check=True).stdout
    assert "right-index-finger" in out
    assert bed.list("localauth-bed-nobody") == []


def test_delete_one_finger_then_all(bed):
    bed.enroll(USER, "right-index-finger", "f1")
    bed.enroll(USER, "left-thumb", "t1")
    assert sorted(bed.list(USER)) == ["left-thumb", "right-index-finger"]
    bed.delete(USER, "left-thumb")
    assert bed.list(USER) == ["right-index-finger"]
    assert not bed.print_file(USER, "left-thumb").exists()
    bed.delete(USER)
    assert bed.list(USER) == []


def test_verify_match(enrolled_bed, client):
    injection = enrolled_bed.scan_when_ready("f1")
    statuses = client.verify(USER)
    assert statuses == [("verify-match", True)]
    assert injection.wait(10) == ["verify-match"]


def test_verify_other_enrolled_print_is_no_match(enrolled_bed, client):
    enrolled_bed.enroll(USER, "left-thumb", "t1")
    # verify a single finger, then present the other enrolled finger's print
    injection = enrolled_bed.scan_when_ready("t1")
    statuses = client.verify(USER, finger="right-index-finger")
    assert statuses == [("verify-no-match", True)]
    assert injection.wait(10) == ["verify-no-match"]


def test_retry_then_match(enrolled_bed, client):
    injection = enrolled_bed.inject_async(["RETRY 0", "SCAN f1"])
    statuses = client.verify(USER)
    assert statuses == [("verify-retry-scan", False), ("verify-match", True)]
    assert injection.wait(10) == ["verify-retry-scan", "verify-match"]


def test_retry_codes_and_errors(enrolled_bed, client):
    injection = enrolled_bed.inject_async(["RETRY 1", "RETRY 2", "RETRY 3", "ERROR 5"])
    statuses = client.verify(USER)
    assert statuses == [("verify-swipe-too-short", False),
                        ("verify-finger-not-centered", False),
                        ("verify-remove-and-retry", False),
                        ("verify-disconnected", True)]
    injection.wait(10)


@pytest.mark.parametrize("release_between", [False, True])
def test_sequence_waits_for_rearm_after_no_match(enrolled_bed, client, release_between):
    """Three attempts (VerifyStop/VerifyStart between them, optionally Release/Claim):
    each scan must reach its own attempt, none may be lost or eaten by the previous."""
    injection = enrolled_bed.inject_async(["SCAN f2", "SCAN f2", "SCAN f1"])
    statuses = client.verify(USER, attempts=3, release_between=release_between)
    assert statuses == [("verify-no-match", True), ("verify-no-match", True),
                        ("verify-match", True)]
    assert injection.wait(10) == ["verify-no-match", "verify-no-match", "verify-match"]


def test_fprintd_log_witnesses_a_rearm_when_the_signals_show_none(enrolled_bed, client,
                                                                   monkeypatch):
    """The second witness of a re-arm: with the signals made to show none (as a watcher
    that fell behind would), fprintd's own log still tells a new verify waiting for a
    finger from the old one, and from no verify at all."""
    reader = enrolled_bed.reader
    client.dev.Claim(USER)
    try:
        mark = client.start()
        assert reader.inject("SCAN f2") == "verify-no-match"
        client.wait_done(mark)
        monkeypatch.setattr(reader, "_armed", lambda: False)
        assert not reader._armed_by_log()        # the old verify: it took the scan
        client.stop()
        assert not reader._armed_by_log()        # no verify at all
        mark = client.start()
        _wait(reader._armed_by_log, 5, "the log's witness of a new verify")
        assert reader.inject("SCAN f1") == "verify-match"
        assert client.wait_done(mark) == ("verify-match", True)
        client.stop()
    finally:
        client.dev.Release()


def test_scan_waits_until_reader_waits(enrolled_bed, client):
    injection = enrolled_bed.scan_when_ready("f1")
    time.sleep(0.3)   # nobody verifies yet: the scan must still be pending, not lost
    assert not injection.done()
    assert client.verify(USER) == [("verify-match", True)]
    assert injection.wait(10) == ["verify-match"]


def test_wait_finger_needed(enrolled_bed, client):
    assert not enrolled_bed.wait_finger_needed(0.2)
    client.dev.Claim(USER)
    client.dev.VerifyStart("any")
    assert enrolled_bed.wait_finger_needed(5)
    client.dev.VerifyStop()
    assert enrolled_bed.wait_finger_needed(5, value=False)
    client.dev.Release()


def test_stale_command_is_consumed_by_next_verify(enrolled_bed, client):
    """Pins a virtual_device behaviour the PAM tests must avoid: a command sent while the
    device is claimed but idle is queued and matches the next VerifyStart at once."""
    client.dev.Claim(USER)
    enrolled_bed.send("SCAN f1")
    # The match comes at once; the bound is only for a machine busy with other work.
    assert client.wait_done(client.start(), 30) == ("verify-match", True)
    client.stop()
    client.dev.Release()


def test_spawn_injector_other_process(enrolled_bed, client):
    proc = enrolled_bed.spawn_injector(["SCAN f2", "SCAN f1"], text=True)
    statuses = client.verify(USER, attempts=2)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert out.split() == ["verify-no-match", "verify-match"]
    assert statuses == [("verify-no-match", True), ("verify-match", True)]


def test_hold_claim_makes_reader_busy(enrolled_bed, client):
    with enrolled_bed.hold_claim(USER):
        with pytest.raises(dbus.exceptions.DBusException) as exc:
            client.dev.Claim(USER)
        assert exc.value.get_dbus_name() == ERR + "AlreadyInUse"
    client.dev.Claim(USER)   # released on exit
    client.dev.Release()


@pytest.mark.alone("a time bound: the call fails within 2.5 s of its timeout")
def test_freeze_makes_calls_time_out(enrolled_bed, client):
    enrolled_bed.freeze_fprintd()
    t0 = time.monotonic()
    with pytest.raises(dbus.exceptions.DBusException) as exc:
        client.dev.ListEnrolledFingers(USER, timeout=0.5)
    assert exc.value.get_dbus_name() == "org.freedesktop.DBus.Error.NoReply"
    assert 0.4 < time.monotonic() - t0 < 3
    enrolled_bed.thaw_fprintd()
    assert client.dev.ListEnrolledFingers(USER, timeout=5) == ["right-index-finger"]


def test_kill_and_restart_keeps_prints(enrolled_bed):
    old = enrolled_bed.pids["fprintd"]
    enrolled_bed.kill_fprintd()
    assert not alive(old)
    with pytest.raises(DBusCallError) as exc:
        enrolled_bed.list(USER)
    assert exc.value.name == "org.freedesktop.DBus.Error.ServiceUnknown"
    enrolled_bed.start_fprintd()
    assert enrolled_bed.pids["fprintd"] != old
    assert enrolled_bed.list(USER) == ["right-index-finger"]
    enrolled_bed.restart_fprintd()
    c = Client(enrolled_bed.address)
    try:
        injection = enrolled_bed.scan_when_ready("f1")
        assert c.verify(USER) == [("verify-match", True)]
        assert injection.wait(10) == ["verify-match"]
    finally:
        c.close()


@pytest.mark.alone("a time bound: stop() within 3 s")
def test_stop_leaves_no_process_and_no_dir(bed_factory):
    b = bed_factory()
    pids = dict(b.pids)
    assert set(pids) == {"dbus", "polkit", "fprintd"}
    assert all(alive(p) for p in pids.values())
    d = b.dir
    b.freeze_fprintd()          # stop() must cope with a frozen fprintd and bus too
    os.kill(pids["dbus"], signal.SIGSTOP)
    t0 = time.monotonic()
    b.stop()
    assert time.monotonic() - t0 < 3
    assert not any(alive(p) for p in pids.values())
    assert not d.exists()
    b.stop()                    # idempotent


def test_no_reader_has_no_devices(bed_factory):
    b = bed_factory(reader=False)
    assert b.devices() == []
    with pytest.raises(DBusCallError) as exc:
        b.call("GetDefaultDevice", path="/net/reactivated/Fprint/Manager",
               iface=MANAGER_IFACE)
    assert exc.value.name == ERR + "NoSuchDevice"


def test_no_fprintd(bed_factory):
    b = bed_factory(fprintd=False)
    assert "fprintd" not in b.pids
    with pytest.raises(DBusCallError) as exc:
        b.devices()
    assert exc.value.name == "org.freedesktop.DBus.Error.ServiceUnknown"
    with pytest.raises(BedError):
        b.scan("f1", timeout=0.1)


@pytest.mark.alone("a time bound: the refused enrolment within 3 s")
def test_polkit_deny_refuses_claim(bed_factory):
    b = bed_factory(polkit="deny")
    with pytest.raises(DBusCallError) as exc:
        b.call("Claim", USER, signature="s")
    assert exc.value.name == ERR + "PermissionDenied"
    with pytest.raises(DBusCallError) as exc:
        b.list(USER)   # needs the verify action too
    assert exc.value.name == ERR + "PermissionDenied"
    t0 = time.monotonic()
    with pytest.raises(BedError, match="fprintd-enroll exited"):
        b.enroll(USER)
    assert time.monotonic() - t0 < 3


def test_polkit_allow_mock(bed_factory):
    b = bed_factory(polkit="allow")
    b.enroll(USER)
    assert b.list(USER) == ["right-index-finger"]


def test_two_beds_are_independent(bed_factory):
    a, b = bed_factory(), bed_factory()
    a.enroll(USER)
    assert a.address != b.address
    assert b.list(USER) == []


def test_env_points_at_the_bed(bed):
    env = bed.env({"X": "1"})
    assert env["DBUS_SYSTEM_BUS_ADDRESS"] == bed.address == env["LOCALAUTH_BED_ADDRESS"]
    assert env["LOCALAUTH_BED_STATE"] == str(bed.state_dir)
    assert env["LOCALAUTH_BED_SOCK"] == str(bed.sock_path)
    assert env["LOCALAUTH_BED_FPRINTD_PID"] == str(bed.pids["fprintd"])
    assert env["X"] == "1"
    out = subprocess.run(["gdbus", "call", "--system", "-d", FPRINT, "-o",
                          "/net/reactivated/Fprint/Manager", "-m",
                          MANAGER_IFACE + ".GetDevices"],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert "/net/reactivated/Fprint/Device/0" in out


def test_cli_run(tmp_path):
    script = (
        'set -e\n'
        'echo "$DBUS_SYSTEM_BUS_ADDRESS|$LOCALAUTH_BED_ADDRESS|$LOCALAUTH_BED_STATE|'
        '$LOCALAUTH_BED_SOCK|$LOCALAUTH_BED_DIR" > "$OUT/env"\n'
        '"$CLI" list alice > "$OUT/list"\n'
        'fprintd-verify alice > "$OUT/verify" &\n'
        '"$CLI" inject "SCAN f9" > "$OUT/results"\n'
        'wait\n'
        'fprintd-verify alice >> "$OUT/verify" &\n'
        '"$CLI" scan a1 >> "$OUT/results"\n'
        'wait || true\n'
        'exit 7\n')
    env = dict(os.environ, OUT=str(tmp_path), CLI=str(CLI))
    proc = subprocess.run([PYTHON, str(CLI), "run", "--enroll", "alice:left-thumb:a1",
                           "--", "bash", "-c", script], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 7, proc.stderr
    dbus_addr, bed_addr, state, sock, bed_dir = (tmp_path / "env").read_text().strip().split("|")
    assert dbus_addr == bed_addr and bed_addr.startswith("unix:path=")
    assert state.endswith("/state") and sock.endswith("/virtdev.sock")
    assert (tmp_path / "list").read_text().split() == ["left-thumb"]
    assert (tmp_path / "results").read_text().split() == ["verify-no-match", "verify-match"]
    assert not Path(bed_dir).exists()   # stopped and removed


def test_cli_run_stops_bed_on_sigterm(tmp_path):
    env = dict(os.environ, OUT=str(tmp_path))
    proc = subprocess.Popen([PYTHON, str(CLI), "run", "--", "bash", "-c",
                             'echo "$LOCALAUTH_BED_DIR $LOCALAUTH_BED_FPRINTD_PID" > "$OUT/bed";'
                             ' exec sleep 60'], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    bed_file = tmp_path / "bed"
    deadline = time.monotonic() + 10
    while not (bed_file.exists() and bed_file.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.02)
    bed_dir, fprintd_pid = bed_file.read_text().split()
    assert alive(int(fprintd_pid))
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=15)
    assert proc.returncode == 128 + signal.SIGTERM
    assert not alive(int(fprintd_pid))
    assert not Path(bed_dir).exists()


def test_cli_outside_a_bed_fails_cleanly():
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALAUTH_BED_")}
    proc = subprocess.run([PYTHON, str(CLI), "scan", "f1"], env=env, capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode != 0
    assert "LOCALAUTH_BED_ADDRESS" in proc.stderr


# A password reader that misses the first Ctrl-C, as sudo's does when the SIGINT lands
# between its prompt and its read (its handler only sets a flag then): here the first one
# always lands there, so the test does not depend on when the key comes.
MISSES_FIRST_CTRL_C = r"""
import os, signal, sys
seen = []
def note(sig, frame):
    seen.append(sig)
    if len(seen) > 1:
        sys.exit(130)
signal.signal(signal.SIGINT, note)
sys.stdout.write("Password: "); sys.stdout.flush()
while not seen:
    signal.pause()
os.read(0, 1)
sys.exit(0)
"""


def test_giving_up_at_a_prompt_outlasts_a_missed_ctrl_c():
    import system
    pt = system.run_on_pty([PYTHON, "-c", MISSES_FIRST_CTRL_C])
    try:
        pt.expect("Password: ", timeout=15)
        pt.give_up(timeout=15, again_after=1)
        res = pt.finish(timeout=5)
    finally:
        pt.kill()
    assert res.status == 130, res.output
