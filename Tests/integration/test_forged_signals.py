"""Signals from anyone but their sender change nothing: another local uid addresses forged
logind and fprintd signals (forged_signal.py) to the service's and a helper's connections
while a real scan waits, with the real fprintd and its virtual reader, the real service and
helper, and the logind fake on the bed's bus.

The bus daemon delivers a signal with a destination whatever the receiver's match rules say,
and writes its sender field itself: so a forged signal always comes from the forger's own
unique name, and the product takes logind's and fprintd's signals from their current owners
alone, and the bus daemon's NameOwnerChanged from the daemon alone (SystemBus/NameOwner).
Each forged batch ends with a call to the bus daemon, so it is in its receivers' queues
before anything the test does next; the receiver says in its log that it dropped signals.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_forged_signals.py
"""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)
from logind_bus import LogindBus  # noqa: E402
from pamenv import PamWorld, outcomes  # noqa: E402
from real_helper import ENROLLED as REAL_ENROLLED, PRESENT, Real, needs_helper  # noqa: E402
from servicebed import Service, Syslog  # noqa: E402
from system import ThrowawayUser  # noqa: E402
from terminal_finger import is_hint, present  # noqa: E402
from test_e2e_pam import E2E, ENROLLED, FINGER, OK, OTHER, PASSWORD, PROMPT_TEXT, SWIPE, USER  # noqa: E402
from test_never_remote import FakeLogind, LOCAL  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root (users, namespaces)")

FORGER = Path(__file__).resolve().parent / "forged_signal.py"
LOGIND_DROPPED = "signal(s) claiming to be org.freedesktop.login1's dropped"
FPRINTD_DROPPED = "signal(s) claiming to be net.reactivated.Fprint's dropped"


@pytest.fixture
def forger():
    """The other uid: a throwaway user, removed at the end."""
    with ThrowawayUser(prefix="la-fs-") as user:
        yield user


def forge(forger, address, pids, *kinds):
    """``kinds`` (forged_signal.py) sent as ``forger`` to every connection of ``pids``, each
    in the receivers' queues when this returns. The unique names reached."""
    argv = system.as_user(forger, ["/usr/bin/python3", str(FORGER), address,
                                   ",".join(str(p) for p in pids), *kinds])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"PATH": system.SAFE_PATH})
    assert p.returncode == 0, p.stderr
    names = p.stdout.split()
    assert names, f"no connection of {pids} on the bus"
    return names


def dropped_or_ended(syslog, mark, ident, words, ended, bound=30.0):
    """Waits until ``ident`` says it dropped signals (``words``) or ``ended()`` holds (the
    forged signals did what they must not). The lines said."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        syslog._sync()
        lines = [m for i, m in syslog.lines[mark:] if i == ident and words in m]
        if lines or ended():
            return lines
        time.sleep(0.05)
    return []


@pytest.fixture
def e2e(bed, inst):
    bed.enroll(USER, FINGER, ENROLLED)
    with PamWorld() as world:
        yield E2E(bed, world, inst)


# --- logind's signals, to the service ---------------------------------------------------

def test_forged_logind_signals_to_the_service_end_no_scan_and_record_nothing(e2e, inst, syslog, tmp_path, forger):
    """Another uid tells the service the system goes to sleep (after telling it, as the bus
    daemon, that logind's name is now the forger's), and that sessions opened: the scan goes
    on and the finger matches, no session is asked about or logged, and the dozens of drops
    make one log line. Then logind itself announces a sleep: the next scan ends."""
    logind = LogindBus(e2e.bed.address)
    logind.start()
    config = tmp_path / "localauth.conf"
    config.write_text(f"dbus_address = {e2e.bed.address}\nstate_dir = {e2e.state}\n")
    service = None
    try:
        service = Service(inst, syslog, config=config)
        e2e.args.append(f"service={service.socket}")
        e2e.service = e2e.stack()
        e2e.first_password()
        mark = syslog.mark()
        pt = e2e.world.pamtester(e2e.service, USER, operation=("authenticate", "acct_mgmt"))
        try:
            assert e2e.bed.wait_finger_needed(timeout=30), "the reader never waited for a finger"
            forged = ["logind-moved", "sleep"] + [f"session-new:la-forged-{i}" for i in range(20)] + ["sleep"]
            forge(forger, e2e.bed.address, [service.proc.pid], *forged)
            lines = dropped_or_ended(syslog, mark, "localauthd", LOGIND_DROPPED,
                                     lambda: not e2e.bed.reader.finger_needed())
            assert lines, ("no drop said, and the scan ended" if not e2e.bed.reader.finger_needed() else
                           "no drop said") + f": {syslog.since(mark)}"
            assert e2e.bed.reader.finger_needed(), "a forged signal ended the scan"
            assert present(pt, e2e.bed, ENROLLED) == "verify-match"
            res = pt.finish()
        finally:
            pt.kill()
        assert res.status == 0, res
        syslog._sync()
        said = syslog.since(mark, "localauthd")
        assert not any("la-forged" in m or "la_2dforged" in m for m in said), said
        assert not any("prepares to sleep" in m for m in said), said
        # 23 drops, one line: at most one per interval (two, on a machine that stalled 10 s).
        assert 1 <= len([m for m in said if LOGIND_DROPPED in m]) <= 2, said
        assert lines[0].startswith("1 signal(s)") and "from :" in lines[0], lines

        # logind's own announcement, from its unique name, still ends a scan.
        pt = e2e.world.pamtester(e2e.service, USER, operation=("authenticate", "acct_mgmt"))
        try:
            assert e2e.bed.wait_finger_needed(timeout=30), "the reader never waited for a finger"
            sleep_mark = e2e.bed.mark()
            logind.prepare_for_sleep(True, only_pid=service.proc.pid)
            e2e.bed.wait_event("finger-needed", since=sleep_mark, timeout=30, where=lambda e: e.args == (False,))
            pt.expect(PROMPT_TEXT)
            pt.send_secret(PASSWORD)
            res = pt.finish()
        finally:
            pt.kill()
        assert res.status == 0, res
        syslog._sync()
        assert any("the system prepares to sleep: 1 running request(s) told to end their scan" in m
                   for m in service.lines("localauthd")), service.lines("localauthd")
    finally:
        if service is not None:
            service.stop()
        logind.stop()


# --- fprintd's signals, to the service's helper -----------------------------------------

def test_forged_fprintd_signals_to_a_helper_neither_end_its_scan_nor_match(e2e, inst, syslog, forger):
    """Another uid tells the service's helper, as the bus daemon, that fprintd left and that
    fprintd's name is now the forger's, then sends it fprintd's VerifyStatus: a match, and a
    no-match. None counts: a stranger's finger is the first result the user sees, the
    enrolled one the second (no success without a real match; no try taken by a forger)."""
    with Service(inst, syslog) as service:
        e2e.args.append(f"service={service.socket}")
        e2e.service = e2e.stack()
        e2e.first_password()
        mark = syslog.mark()
        pt = e2e.world.pamtester(e2e.service, USER, operation=("authenticate", "acct_mgmt"))
        try:
            assert e2e.bed.wait_finger_needed(timeout=30), "the reader never waited for a finger"
            helpers = service.helpers()
            assert len(helpers) == 1, helpers
            forge(forger, e2e.bed.address, helpers, "fprintd-gone", "fprintd-moved",
                  "verify:verify-match", "verify:verify-no-match")
            lines = dropped_or_ended(syslog, mark, "localauth-helper", FPRINTD_DROPPED,
                                     lambda: not e2e.bed.reader.finger_needed())
            assert e2e.bed.reader.finger_needed(), f"a forged signal ended the scan: {syslog.since(mark)}"
            assert lines, f"no drop said: {syslog.since(mark)}"
            results = [present(pt, e2e.bed, OTHER), present(pt, e2e.bed, ENROLLED)]
            res = pt.finish()
        finally:
            pt.kill()
        assert results == ["verify-no-match", "verify-match"], results
        screen = [line for line in system.screen_lines(res.output)
                  if not is_hint(line) and not line.startswith("pamtester: account")]
        assert screen == [SWIPE, "Fingerprint not recognized - 2 tries left", SWIPE,
                          "Fingerprint recognized", OK], screen
        assert res.status == 0, res


# --- logind's change signals, to a helper watching its session ---------------------------

@pytest.fixture
def person():
    with ThrowawayUser(prefix="la-fs-p-") as user:
        yield user


@pytest.fixture
def logind(bed, person):
    fake = FakeLogind(bed, person)
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def real(bed, person):
    with PamWorld() as world:
        bed.enroll(person.name, "right-index-finger", REAL_ENROLLED)
        r = Real(world, bed)
        world.add_user(person.name, PASSWORD)
        yield r


def waiting_helper(real, logind, syslog):
    """The person's sudo-shaped transaction from their local session, its reader waiting;
    (the transaction's future, the helper's pid)."""
    logind.session(**LOCAL)
    real.in_namespace(logind.prefix(), syslog)   # its helpers read this /run/systemd, log to syslog
    future = real.in_background("forged lock", real.stack(), user=logind.person.name,
                                prefix=logind.prefix(), cgroup=str(logind.scope),
                                real_uid=logind.person.uid, env=PRESENT)
    assert real.bed.wait_finger_needed(30), "the reader never waited"
    helpers = real.service.helpers()
    assert len(helpers) == 1, helpers
    return future, helpers[0]


@needs_helper
def test_a_forged_lock_of_the_session_does_not_end_a_helpers_wait(real, logind, forger):
    """Another uid tells the helper watching its session that the session locked, also after
    telling it, as the bus daemon, that logind's name is now the forger's: the wait goes on
    and the finger matches. Then logind itself locks the session: the next wait ends."""
    syslog = Syslog()
    try:
        mark = syslog.mark()
        future, helper = waiting_helper(real, logind, syslog)
        forge(forger, real.bed.address, [helper], f"locked:{logind.id}", "logind-moved", f"locked:{logind.id}")
        lines = dropped_or_ended(syslog, mark, "localauth-helper", LOGIND_DROPPED, future.done)
        assert not future.done(), f"a forged signal ended the wait: {outcomes(future.result().logs)}"
        assert lines, f"no drop said: {syslog.since(mark)}"
        assert real.bed.reader.inject(f"SCAN {REAL_ENROLLED}") == "verify-match"
        r = future.result(60)
        assert outcomes(r.logs)[0]["result"] == "success", outcomes(r.logs)

        # logind's own change, from its unique name, still ends a wait.
        future, helper = waiting_helper(real, logind, syslog)
        forge(forger, real.bed.address, [helper], "logind-moved")
        logind.bus.set_hint(logind.id, "LockedHint", True)
        r = future.result(60)
        first = outcomes(r.logs)[0]
        assert (first["result"], first["reason"]) == ("systemCancel", "session-locked"), first
    finally:
        syslog.close()
