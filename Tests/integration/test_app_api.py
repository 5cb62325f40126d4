"""Applications: Apple's LocalAuthentication API (the LocalAuthentication library) used by an
ordinary program, as an ordinary user, against the real fprintd and the virtual reader.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_app_api.py

The product is installed in a temporary prefix with a localauthd of the test's own
(servicebed.ServiceInstallation, started by appbed.app_world); the application is la-probe
(Tests/Support/la-probe), built against the library, run by a throwaway user on a
pseudo-terminal with LOCALAUTH_SERVICE naming that service's socket (appbed.AppWorld). Its
evaluations go through the service to the helper's `mode=app` (docs/PROTOCOL.md,
"Applications"), so the lockout is counted in root's state file, the one the PAM module
reads: the tests check that file and the module's own view of it, under a lock screen's
stack and under sudo.
"""
import concurrent.futures
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from appbed import ENROLLED, OTHER, app_binary, app_world  # noqa: E402
from servicebed import namespace_prefix  # noqa: E402
from pamenv import LogLine, outcomes  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)

DOMAIN = "com.apple.LocalAuthentication"
SUDO_PROMPT = re.compile(r"[Pp]assword( for [^:\r\n]*)?: ")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


@pytest.fixture(scope="module")
def probe():
    return app_binary("la-probe")


@pytest.fixture
def world(inst, bed, syslog, probe):
    with app_world(inst, bed, syslog, probe, "la-app-") as w:
        yield w


def code(run) -> int:
    return int(run.result["code"])


# What the helper of servicebed.Service's own start check (a connection closed at once)
# logs; it may come in during a world's first run.
START_CHECK = "the connection closed before a request"


def helper_lines(run) -> list:
    """The helper's lines of ``run``, less the service start check's."""
    return [m for m in run.messages("localauth-helper") if m != START_CHECK]


# --- the main path -------------------------------------------------------------------------

def test_a_matching_finger_gives_success_to_an_ordinary_program(world):
    run = world.run("eval", "biometrics", fingers=[ENROLLED])
    r = run.result
    assert (r["success"], r["code"]) == ("1", "0"), run.output
    assert len(run.verify_starts) == 1
    assert re.fullmatch(r"[0-9a-f]{64}", r["state"]), r      # the enrolled set's hash, as Data
    # The prompts came on the program's terminal.
    assert "unlock the test" in run.output
    assert re.search(r"(Place|Swipe) your right index finger (on|across) the fingerprint reader", run.output)
    # Root's state file, root's alone, counted by the helper for this user.
    st = world.state_file.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)
    assert world.state_values()["failures"] == "0"
    assert any(f"user {world.user.name} application la-probe" in m and "evaluate biometrics: success" in m
               for m in helper_lines(run)), helper_lines(run)
    # The program itself runs as the user and cannot read that file.
    cat = subprocess.run(system.as_user(world.user, ["cat", str(world.state_file)]),
                         capture_output=True, text=True)
    assert cat.returncode != 0 and "Permission denied" in cat.stderr


def test_preflight_reports_the_reader_and_the_domain_state_without_a_scan(world):
    run = world.run("can", "biometrics")
    r = run.result
    assert (r["success"], r["biometry"]) == ("1", "1"), run.output   # LABiometryType.touchID
    assert re.fullmatch(r"[0-9a-f]{64}", r["state"]), r
    assert run.verify_starts == []
    # The same value a match reports: the seeds compare the two.
    matched = world.run("eval", "biometrics", fingers=[ENROLLED]).result
    assert matched["state"] == r["state"]
    # A finger added: the preflight still succeeds with the new set's hash, as on Apple's
    # platforms (seed 003's "did the fingers change?" check sees the change), while the
    # evaluation refuses fingerprints until the password (the system's rule, as for sudo).
    world.bed.enroll(world.user.name, "left-thumb", "f2")
    changed = world.run("can", "biometrics")
    assert changed.result["success"] == "1", changed.output
    assert re.fullmatch(r"[0-9a-f]{64}", changed.result["state"]) and changed.result["state"] != r["state"]
    assert changed.verify_starts == []
    refused = world.run("eval", "biometrics")
    assert refused.result["code"] == "-6" and refused.verify_starts == [], refused.output
    assert "enrolled fingerprints changed" in refused.output, refused.output
    assert world.run("can", "owner").result["success"] == "1"
    owner = world.run("eval", "owner", password=world.user.password)
    assert owner.result["success"] == "1" and owner.verify_starts == []   # straight to the password
    after = world.run("can", "biometrics").result
    assert after["success"] == "1" and after["state"] == changed.result["state"]


def test_three_wrong_fingers_give_authentication_failed(world):
    run = world.run("eval", "biometrics", fingers=[OTHER] * 3)
    r = run.result
    assert (r["success"], r["code"], r["domain"]) == ("0", "-1", DOMAIN), run.output
    assert r["desc"] == "Application retry limit exceeded."
    assert len(run.verify_starts) == 3
    assert world.state_values()["failures"] == "3"


def test_five_failures_across_contexts_lock_out_in_the_state_the_module_reads(world, inst):
    # Two contexts of one program: 3 wrong, then 2 wrong, counted together.
    run = world.run("eval", "biometrics", "--repeat", "2", fingers=[OTHER] * 5)
    first, second = run.results
    assert first["code"] == "-1", run.output
    assert (second["code"], second["desc"]) == ("-8", "Biometry is locked out."), run.output
    assert world.state_values()["failures"] == "5"
    # Locked out: the preflight says so and an evaluation does not scan.
    assert world.run("can", "biometrics").result["code"] == "-8"
    again = world.run("eval", "biometrics")
    assert again.result["code"] == "-8" and again.verify_starts == []
    # The PAM module (a lock screen's stack, through the same service) reads that same file.
    module = pam_run(world, inst)
    assert module.status != 0
    first_line = outcomes([LogLine(0, m) for i, m in module.logs])[0]
    assert first_line["result"] == "biometryLockout", first_line
    assert world.state_values()["failures"] == "5"


def pam_run(world, inst, password="not-the-password"):
    """pamtester as the user through a screen locker's stack (the module, pam_unix, the
    authsucc line), with a wrong password: the module's own view of the user's state."""
    lines = [f"auth sufficient {inst.module}", "auth requisite pam_unix.so",
             f"auth optional {inst.module} authsucc", "account required pam_permit.so"]
    with system.PamService("la-app-", lines) as svc:
        mark = world.syslog.mark()
        pt = system.run_on_pty(["pamtester", svc.name, world.user.name, "authenticate"],
                               user=world.user, prefix=namespace_prefix(world.syslog), timeout=40)
        pt.expect(re.compile(r"(^|\n)Password: "), timeout=30)
        pt.sendline(password)
        res = pt.finish(timeout=40)

        class R:
            status, output, logs = res.status, res.output, world.syslog.lines[mark:]
        return R


def sudo_with_wrong_fingers(world, inst, n):
    """``sudo -k true`` as the user with ``n`` wrong fingers, given up at the password
    prompt (a root caller: the installation's module reaches the same localauthd, with the
    same configuration). Returns the first outcome sudo's module logged."""
    lines = [f"auth sufficient {inst.module} config={inst.config}", "auth requisite pam_unix.so",
             f"auth optional {inst.module} authsucc config={inst.config}", "account required pam_permit.so"]
    with system.PamService("la-app-sudo-", lines) as svc, system.SudoersDropIn(world.user, svc.name):
        log_mark = world.syslog.mark()
        pt = system.run_on_pty(["sudo", "-k", "true"], user=world.user,
                               prefix=namespace_prefix(world.syslog), timeout=40)
        injection = world.bed.inject_async([f"SCAN {OTHER}"] * n)
        pt.expect(SUDO_PROMPT, timeout=30)      # the finger failed: sudo's password prompt
        assert injection.wait(20) == ["verify-no-match"] * n
        pt.give_up()                            # the user gives up at the password
        pt.finish(timeout=30)
    sudo_lines = [LogLine(0, m) for i, m in world.syslog.lines[log_mark:] if i == "sudo"]
    return outcomes(sudo_lines)[0]


def test_failures_in_a_program_and_under_sudo_add_up(world, inst):
    """Three wrong fingers in the program, two more under sudo: locked out after five, for
    sudo and for the program alike."""
    assert world.run("eval", "biometrics", fingers=[OTHER] * 3).result["code"] == "-1"
    first = sudo_with_wrong_fingers(world, inst, 2)
    assert first["result"] == "biometryLockout", first
    assert world.state_values()["failures"] == "5"
    run = world.run("eval", "biometrics")
    assert run.result["code"] == "-8" and run.verify_starts == []


# Every password check for a caller that is not root takes this long, whatever its outcome
# (PacedPasswordCheck.duration, the same check authsucc uses on this path).
CHECK_SECONDS = 1.0


def test_device_owner_authentication_takes_the_password_after_a_lockout(world):
    world.configure(lockout_threshold="2", max_tries="2")
    assert world.run("eval", "biometrics", fingers=[OTHER] * 2).result["code"] == "-8"
    # A wrong password: authenticationFailed, logged and counted, nothing cleared.
    wrong = world.run("eval", "owner", password="not-the-password")
    assert wrong.result["code"] == "-1" and wrong.verify_starts == [], wrong.output
    assert any("wrong password for" in m for m in helper_lines(wrong)), helper_lines(wrong)
    values = world.state_values()
    assert (values["failures"], values["password_failures"]) == ("2", "1")
    # The right one: success, checked by the root side, and the lockout is gone.
    right = world.run("eval", "owner", password=world.user.password)
    assert (right.result["success"], right.result["code"]) == ("1", "0"), right.output
    assert right.verify_starts == []
    values = world.state_values()
    assert values["failures"] == "0" and "password_failures" not in values
    assert world.run("eval", "biometrics", fingers=[ENROLLED]).result["success"] == "1"


def test_a_programs_password_check_is_paced_like_the_modules(world):
    """Straight to the service's socket, as a program could: a wrong and a right password
    take the same time (one check a second at most), and guesses in parallel run one at a
    time."""
    world.configure(lockout_threshold="1")
    assert world.run("eval", "biometrics", fingers=[OTHER]).result["code"] == "-8"
    for guess in (b"not-it", world.user.password.encode()):
        started = time.monotonic()
        out = by_hand(world, app_request(world.user.name) + frame("A", guess), world.user)
        assert time.monotonic() - started >= CHECK_SECONDS * 0.95, out
    assert "code=0" in out and world.state_values()["failures"] == "0"
    # Lock out again, then four guesses at once.
    assert world.run("eval", "biometrics", fingers=[OTHER]).result["code"] == "-8"
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda n: by_hand(world, app_request(world.user.name)
                                               + frame("A", f"guess-{n}".encode()), world.user),
                             range(4)))
    assert time.monotonic() - started >= 4 * CHECK_SECONDS * 0.95
    assert all("code=-1\n" in o for o in outs), outs
    assert world.state_values()["password_failures"] == "4"


def test_device_owner_authentication_tries_the_finger_first(world):
    run = world.run("eval", "owner", fingers=[ENROLLED])
    assert run.result["success"] == "1" and len(run.verify_starts) == 1
    assert "Password: " not in run.output


# --- the preflight, answered by the service ------------------------------------------------
#
# docs/SERVICE.md, "Preflight": the library asks for every call and keeps nothing; the
# service answers from root's state file read then and the enrolled set as the last helper
# read it from fprintd, while fprintd's storage is unchanged and that reading is younger
# than RECORD_S. Counted here, not timed: how many helpers answered a program's preflights
# (each logs one line per preflight it answers, naming the program's pid).
RECORD_S = 10.0


def preflights_started(world, since: int, pid=None, policy="biometrics") -> int:
    return sum(1 for i, m in world.syslog.lines[since:]
               if i == "localauth-helper" and f" preflight {policy}: " in m
               and (pid is None or f"(pid {pid})" in m))


def wait_preflights(world, since, at_least, pid=None, policy="biometrics") -> int:
    """The count once ``at_least`` lines are in (the syslog socket is read by a thread)."""
    world.syslog.wait_for(lambda *_: preflights_started(world, since, pid, policy) >= at_least,
                          timeout=10, since=since)
    return preflights_started(world, since, pid, policy)


def test_repeated_preflights_start_one_helper_and_the_service_answers_the_rest(world):
    """Two hundred preflights (a new context each, as a computed property makes them) and
    fifty of the owner policy, each asked of the service: the first starts a helper, which
    reads fprintd and records the enrolled set; the service answers every other from that
    record. Every call gets the same answer, domain state and biometry type. (A per-process
    cache asks once per policy: two helpers.)"""
    mark = world.syslog.mark()
    started_at = time.monotonic()
    run = world.run("can", "biometrics", "--repeat", "200", "--then", "can", "owner", "--repeat", "50")
    bio, owner = run.results[:200], run.results[200:]
    assert len(owner) == 50, run.output
    assert {(r["success"], r["biometry"]) for r in bio + owner} == {("1", "1")}, run.output
    assert len({r["state"] for r in bio}) == 1 and re.fullmatch(r"[0-9a-f]{64}", bio[0]["state"])
    assert run.verify_starts == []
    took = time.monotonic() - started_at
    bio_started = wait_preflights(world, mark, 1)
    owner_started = preflights_started(world, mark, policy="owner")
    # One more helper only each time the record grew older than RECORD_S in the run.
    assert 1 <= bio_started + owner_started <= 1 + int(took // RECORD_S), (bio_started, owner_started, took)


def test_a_lockout_the_programs_own_evaluation_reached_is_seen_by_its_next_preflight(world):
    """A preflight, an evaluation that locks fingerprints out, then the very next preflight
    says so; the password (deviceOwnerAuthentication) lifts it, and the next preflight says
    that too. The service reads root's state file for each: after the first preflight's
    helper, no other helper answers one."""
    world.configure(lockout_threshold="1", max_tries="1")
    mark = world.syslog.mark()
    started_at = time.monotonic()
    run = world.run("can", "biometrics",
                    "--then", "eval", "biometrics",
                    "--then", "can", "biometrics", "--repeat", "20",
                    "--then", "eval", "owner",
                    "--then", "can", "biometrics", "--repeat", "20",
                    fingers=[OTHER], password=world.user.password)
    r = run.results
    assert len(r) == 43, run.output
    before, locking, locked, lifting, lifted = r[0], r[1], r[2:22], r[22], r[23:]
    assert before["success"] == "1", run.output
    assert (locking["op"], locking["code"]) == ("eval", "-8"), run.output
    assert [x["code"] for x in locked] == ["-8"] * 20, run.output
    assert (lifting["op"], lifting["success"]) == ("eval", "1"), run.output
    assert [x["success"] for x in lifted] == ["1"] * 20, run.output
    assert len(run.verify_starts) == 1           # the owner policy went straight to the password
    # One more helper only each time the record grew older than RECORD_S in the run.
    took = time.monotonic() - started_at
    started = wait_preflights(world, mark, 1)
    assert 1 <= started <= 1 + int(took // RECORD_S), (started, took)


def test_a_lockout_reached_elsewhere_is_seen_by_the_next_preflight(world, inst):
    """A program asks once, then sudo locks fingerprints out: the program's very next
    preflight says so, with no helper started for it (the service read root's state). A
    per-process cache gives its old answer for seconds."""
    world.configure(lockout_threshold="2", max_tries="2")
    mark = world.syslog.mark()
    started_at = time.monotonic()
    pt = world.start("can", "biometrics", "--then", "pause", "--then", "can", "biometrics")
    pt.expect(re.compile(r"PAUSED pid=(\d+)"), timeout=40)
    pid = int(pt.child.match.group(1))
    assert wait_preflights(world, mark, 1, pid) == 1
    assert sudo_with_wrong_fingers(world, inst, 2)["result"] == "biometryLockout"
    pt.sendline("")
    first, last = result_lines(pt.finish(timeout=90))
    assert (first["success"], last["code"]) == ("1", "-8"), (first, last)
    # The record of the enrolled set lasts RECORD_S: a machine slow enough to take longer
    # over sudo sends the second call to a helper too.
    if time.monotonic() - started_at < RECORD_S:
        assert preflights_started(world, mark, pid) == 1


def probe_sockets(pid: int) -> list:
    """The socket inodes among a process's open files."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if target.startswith("socket:["):
            found.append(target)
    return found


def test_a_programs_preflights_share_one_kept_connection(world):
    """A program's preflights go over one connection to the service, kept open between
    calls (keep=1, kept=1): after three calls and after fifty more the program holds one
    socket, the same one. Every answer is still the service's of the moment (the lockout
    tests above pass over this connection)."""
    mark = world.syslog.mark()
    started_at = time.monotonic()
    pt = world.start("can", "biometrics", "--repeat", "3", "--then", "pause",
                     "--then", "can", "biometrics", "--repeat", "50", "--then", "pause")
    pt.expect(re.compile(r"PAUSED pid=(\d+)"), timeout=40)
    pid = int(pt.child.match.group(1))
    first = probe_sockets(pid)
    pt.sendline("")
    pt.expect(re.compile(r"PAUSED pid=\d+"), timeout=40)
    second = probe_sockets(pid)
    pt.sendline("")
    res = pt.finish(timeout=60)
    from appbed import RESULT, parse_result
    results = [parse_result(m) for m in RESULT.findall(res.output.replace("\r", ""))]
    assert len(results) == 53 and {r["success"] for r in results} == {"1"}, res.output
    assert len(first) == 1 and first == second, (first, second)
    took = time.monotonic() - started_at
    assert 1 <= wait_preflights(world, mark, 1) <= 1 + int(took // RECORD_S)


def test_a_kept_connection_the_service_closed_is_replaced_without_a_failure(world, inst):
    """The service restarted (an upgrade, a crash) while a program keeps its connection:
    the program's next preflight finds it closed, asks again on a new connection, and gets
    its answer; no call fails."""
    pt = world.start("can", "biometrics", "--repeat", "3", "--then", "pause",
                     "--then", "can", "biometrics", "--repeat", "3")
    pt.expect(re.compile(r"PAUSED pid=(\d+)"), timeout=40)
    pid = int(pt.child.match.group(1))
    before = probe_sockets(pid)
    world.service.stop()
    replacement = inst.serve(world.syslog)
    try:
        pt.sendline("")
        res = pt.finish(timeout=60)
    finally:
        replacement.stop()
    from appbed import RESULT, parse_result
    results = [parse_result(m) for m in RESULT.findall(res.output.replace("\r", ""))]
    assert len(before) == 1, before
    assert len(results) == 6 and {r["success"] for r in results} == {"1"}, res.output


# A program of the user's own speaking the protocol by hand on kept connections: prints,
# as JSON, what each step got back (the answer's keys, and whether the service then closed).
KEEPER = r"""
import json, socket, struct, sys
path, user = sys.argv[1], sys.argv[2]

def request(op="preflight", keep=True):
    kv = dict(version="1", mode="app", op=op, policy="biometrics", user=user, service="keeper",
              tty="", rhost="", ruser="", silent="0", stdin_tty="0", display="0", locale="",
              language="", caller_uid="0", pid="1")
    if keep:
        kv["keep"] = "1"
    payload = "\n".join(f"{k}={v}" for k, v in kv.items()).encode()
    return struct.pack(">I", len(payload) + 1) + b"Q" + payload

def answer(s):
    buf = b""
    while True:
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
            n = struct.unpack(">I", buf[:4])[0]
            kind, payload, buf = buf[4:5], buf[5:4 + n], buf[4 + n:]
            if kind == b"R":
                return dict(l.split("=", 1) for l in payload.decode().split("\n"))
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:   # closed with the request unread
            return None
        if not chunk:
            return None
        buf += chunk

def closed(s):
    s.settimeout(10)
    try:
        return s.recv(1) == b""
    except (socket.timeout, ConnectionResetError):
        return False

def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    return s

out = {}
# Asked once (the helper that records the enrolled set may answer this one).
first = connect(); first.sendall(request()); out["first"] = answer(first); first.close()
kept = connect()
kept.sendall(request()); out["a"] = answer(kept)
kept.sendall(request()); out["b"] = answer(kept)
kept.sendall(request(op="evaluate")); out["evaluate_closed"] = answer(kept) is None
# One after another: connections still waiting for their request count against the
# user's limit of requests at once, a limit of its own.
many, out["many"] = [], []
for _ in range(5):
    s = connect()
    s.sendall(request())
    out["many"].append(answer(s))
    many.append(s)
out["fifth_closed"] = closed(many[4])
out["fourth_closed"] = False
many[3].settimeout(0.5)
try:
    out["fourth_closed"] = many[3].recv(1) == b""
except socket.timeout:
    pass
unkept = connect(); unkept.sendall(request(keep=False)); out["unkept"] = answer(unkept)
out["unkept_closed"] = closed(unkept)
print("OUT " + json.dumps(out), flush=True)
"""


def test_the_service_keeps_a_connection_only_for_preflights_and_only_a_few_per_user(world):
    """By hand: two preflights on one connection are both answered and it stays open
    (kept=1); anything else sent on it closes it unanswered; four kept per user at most (the
    fifth is answered and closed), and a request without keep=1 is closed as before."""
    script = world.app.parent / "keeper.py"
    script.write_text(KEEPER)
    script.chmod(0o644)
    pt = system.run_on_pty(["/usr/bin/python3", str(script), str(world.service.socket), world.user.name],
                           user=world.user, prefix=namespace_prefix(world.syslog), timeout=60)
    res = pt.finish(timeout=60)
    found = re.findall(r"OUT (\{.*\})", res.output)
    assert len(found) == 1, res.output
    import json
    out = json.loads(found[0])
    assert out["first"]["code"] == "0", out
    assert (out["a"]["code"], out["a"].get("kept")) == ("0", "1"), out
    assert (out["b"]["code"], out["b"].get("kept")) == ("0", "1"), out
    assert out["a"]["domain_state"] == out["b"]["domain_state"]
    assert out["evaluate_closed"] is True, out
    assert [a.get("kept") for a in out["many"]] == ["1", "1", "1", "1", None], out
    assert {a["code"] for a in out["many"]} == {"0"}, out
    assert out["fifth_closed"] is True and out["fourth_closed"] is False, out
    assert out["unkept"]["code"] == "0" and "kept" not in out["unkept"] and out["unkept_closed"], out
    assert any("a request other than a preflight on a connection kept for preflights" in m
               for i, m in world.syslog.lines if i == "localauthd"), world.syslog.lines


def result_lines(res) -> tuple:
    from appbed import RESULT, parse_result
    found = [parse_result(m) for m in RESULT.findall(res.output.replace("\r", ""))]
    assert len(found) == 2, res.output
    return found[0], found[1]


# --- the buttons, invalidate and task cancellation -----------------------------------------

def wait_and(world, pt, action):
    assert world.bed.wait_finger_needed(20), pt.output
    action()
    return pt.finish(timeout=30)


def result_of(res) -> dict:
    from appbed import RESULT, parse_result
    (r,) = [parse_result(m) for m in RESULT.findall(res.output.replace("\r", ""))]
    return r


def test_enter_is_the_fallback_button_and_ctrl_d_the_cancel_button(world):
    pt = world.start("eval", "biometrics")
    assert result_of(wait_and(world, pt, lambda: pt.sendline("")))["code"] == "-3"   # userFallback
    pt = world.start("eval", "biometrics")
    assert result_of(wait_and(world, pt, pt.sendeof))["code"] == "-2"                # userCancel
    pt = world.start("eval", "biometrics", "--fallback", "")
    assert result_of(wait_and(world, pt, lambda: pt.sendline("")))["code"] == "-2"   # no fallback offered


def test_the_fallback_of_device_owner_authentication_is_the_password(world):
    pt = world.start("eval", "owner")
    assert world.bed.wait_finger_needed(20)
    pt.sendline("")
    pt.expect(re.compile(r"Password: "), timeout=30)
    pt.sendline(world.user.password)
    r = result_of(pt.finish(timeout=30))
    assert (r["success"], r["code"]) == ("1", "0")


@pytest.mark.parametrize("how", ["--invalidate-after", "--cancel-after"])
def test_invalidate_and_task_cancel_end_the_scan_with_app_cancel(world, how):
    args = ["eval", "biometrics", how, "3"] + (["--async"] if how == "--cancel-after" else [])
    pt = world.start(*args)
    assert world.bed.wait_finger_needed(20)
    res = pt.finish(timeout=30)
    r = result_of(res)
    assert (r["code"], r["desc"]) == ("-9", "Invalidated by client."), res.output
    assert world.bed.wait_finger_needed(10, value=False)   # the reader was let go


def test_a_scan_ended_without_a_finger_gives_its_try_back(world):
    """The cancel and fallback buttons and invalidate() end a scan nobody touched: not a
    failed match (docs/ARCHITECTURE.md §6: a try is given back when no finger was presented)."""
    for args, action in ((("eval", "biometrics"), "eof"), (("eval", "biometrics"), "enter"),
                         (("eval", "biometrics", "--invalidate-after", "2"), None)):
        pt = world.start(*args)
        assert world.bed.wait_finger_needed(20)
        if action == "eof":
            pt.sendeof()
        elif action == "enter":
            pt.sendline("")
        r = result_of(pt.finish(timeout=30))
        assert r["code"] in ("-2", "-3", "-9"), r
        assert world.state_values()["failures"] == "0", (args, action)


# --- what the program cannot do ------------------------------------------------------------

def frame(kind: str, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload) + 1) + kind.encode() + payload


def app_request(user, op="evaluate", policy="owner") -> bytes:
    kv = dict(version="1", mode="app", op=op, policy=policy, user=str(user), service="forged",
              tty="", rhost="", ruser="", silent="0", stdin_tty="1", display="1", locale="",
              caller_uid="0", pid="1")
    return frame("Q", "\n".join(f"{k}={v}" for k, v in kv.items()).encode())


# A program of the user's own that talks to the service by hand: it connects to the socket,
# writes the frames, half-closes (the end of what it says) and prints what came back until
# the service closed the connection. It runs on a terminal, as a program that may evaluate
# does (whether someone can be at the reader is read from the calling process itself, the
# peer the service sees, not from the request).
FORGER = r"""
import socket, sys
data = bytes.fromhex(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(60)
s.connect(sys.argv[1])
try:
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
except OSError:
    pass                   # the helper may answer and go before reading all of it
out = b""
try:
    while chunk := s.recv(65536):
        out += chunk
except ConnectionResetError:
    pass
print("OUT " + out.hex(), flush=True)
"""


def by_hand(world, data: bytes, user) -> str:
    """What the service answers ``data`` written by a program of ``user`` on a terminal."""
    script = world.app.parent / "forger.py"
    # Written aside and renamed into place: the pacing test calls this from four threads at
    # once, and a program started while another thread had the file truncated ran an empty
    # script (status 0, no output; seen under load).
    aside = script.with_name(f"forger.py.{threading.get_ident()}")
    aside.write_text(FORGER)
    aside.chmod(0o644)
    os.replace(aside, script)
    pt = system.run_on_pty(["/usr/bin/python3", str(script), str(world.service.socket), data.hex()],
                           user=user, prefix=namespace_prefix(world.syslog), timeout=60)
    res = pt.finish(timeout=60)
    found = re.findall(r"OUT ([0-9a-f]*)", res.output)
    assert len(found) == 1, f"the program's run (status {res.status}):\n{res.output}"
    (out,) = found
    return bytes.fromhex(out).decode(errors="replace")


def test_a_program_cannot_act_for_another_user_or_lift_its_lockout_without_the_password(world):
    world.configure(lockout_threshold="1")
    assert world.run("eval", "biometrics", fingers=[OTHER]).result["code"] == "-8"
    before = world.state_file.read_bytes()
    with system.ThrowawayUser(prefix="la-app-other-") as other:
        out = by_hand(world, app_request(other.name), world.user)
        assert "request for user" in out and "refused" in out, out
        assert not (world.state / f"{other.name}.state").exists()
    # The password prompt answered with a guess, a cancel, or nothing: the lockout stays
    # (the guess is counted as a wrong password, nothing else changes).
    for extra, guess in ((frame("C", b"cancel"), False), (b"", False), (frame("A", b"guess"), True)):
        out = by_hand(world, app_request(world.user.name) + extra, world.user)
        assert "code=0" not in out, out
        if guess:
            assert world.state_values()["password_failures"] == "1"
        else:
            assert world.state_file.read_bytes() == before
    assert world.state_values()["failures"] == "1"


# A socket of the user's own where LOCALAUTH_SERVICE could point: it takes one connection,
# reads it to its end and prints what came (the test ends it with a connection of its own
# when nobody else came).
LISTENER = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(4)
print("READY", flush=True)
c, _ = s.accept()
c.settimeout(30)
got = b""
while chunk := c.recv(65536):
    got += chunk
print("GOT " + got.hex(), flush=True)
"""
NOBODY_CAME = b"the test's own connection"


@pytest.mark.parametrize("case", ["absent", "users-socket", "users-peer", "not-a-socket"])
def test_a_service_socket_that_is_not_roots_is_not_used(world, case):
    """LOCALAUTH_SERVICE names where the root side is; the library still talks only to a
    socket of root's with root at its other end. A socket the user made (the user could
    answer anything there), one root's by its file but the user's by its listener (SO_PEERCRED),
    a file that is not a socket and a path with nothing at it: biometryNotAvailable, with
    nothing sent to whatever listens and nothing started on root's side."""
    own = world.dir / "own"
    own.mkdir(mode=0o755)
    os.chown(own, world.user.uid, world.user.gid)
    path = own / "socket"
    listener = None
    if case in ("users-socket", "users-peer"):
        listener = subprocess.Popen(system.as_user(world.user, ["/usr/bin/python3", "-c", LISTENER, str(path)]),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                                    env=system.default_env())
        assert listener.stdout.readline() == "READY\n"
        assert path.stat().st_uid == world.user.uid
        if case == "users-peer":
            os.chown(path, 0, 0)            # root's file, the user's listener
            path.chmod(0o666)
    elif case == "not-a-socket":
        path.write_text("")
        os.chown(path, 0, 0)
        path.chmod(0o666)
    try:
        log_mark = world.syslog.mark()
        run = world.run("can", "biometrics", env={"LOCALAUTH_SERVICE": str(path)})
        got = None
        if listener is not None:
            if case == "users-socket":      # nobody came: the test's own connection ends it
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.connect(str(path))
                    s.sendall(NOBODY_CAME)
            got = listener.communicate(timeout=30)[0]
    finally:
        if listener is not None and listener.poll() is None:
            listener.kill()
            listener.wait()
    assert (run.result["success"], run.result["code"]) == ("0", "-6"), run.output
    assert run.result["desc"] == "Biometry is not available on this device."
    (debug,) = re.findall(r"^DEBUG (.*?)\r?$", run.output, re.M)
    assert debug == {
        "absent": f"localauthd is not running (no socket at {path}): the reader is reached only through it",
        "users-socket": f"{path} is not a socket of root's",
        "users-peer": f"the service at {path} refused: its end is not root's",
        "not-a-socket": f"{path} is not a socket of root's",
    }[case], debug
    if case == "users-socket":              # not even connected to
        assert got == f"GOT {NOBODY_CAME.hex()}\n", got
    elif case == "users-peer":              # connected to, and left without a word
        assert got == "GOT \n", got
    # Nothing ran on root's side, and the world's own service (the default) was not asked.
    assert helper_lines(run) == [] and run.messages("localauthd") == [], run.logs
    assert preflights_started(world, log_mark) == 0 and world.service.helpers() == []


def test_the_worlds_service_is_the_one_asked(world):
    """The counterpart of the test above: with LOCALAUTH_SERVICE naming the world's service
    (appbed's default), the same preflight reaches its helper, which logs it."""
    mark = world.syslog.mark()
    run = world.run("can", "biometrics")
    assert run.result["success"] == "1", run.output
    assert wait_preflights(world, mark, 1) == 1


@pytest.mark.parametrize("op", ["can", "eval"])
def test_a_root_program_with_no_service_starts_no_helper(world, inst, op):
    """localauthd is the library's one way to the root side, for root too: a program run
    as root where no service answers gets biometryNotAvailable at once, and the helper
    installed beside it (root's, in root's directories: what the library once started
    itself) is not started."""
    absent = world.dir / "no-service" / "socket"
    env = system.default_env(LOCALAUTH_SERVICE=str(absent), LOCALAUTH_PREFIX=str(inst.prefix))
    mark = world.syslog.mark()
    res = system.run_on_pty([str(world.app), op, "biometrics"], env=env,
                            prefix=namespace_prefix(world.syslog), timeout=60).finish(timeout=60)
    from appbed import RESULT, parse_result
    (result,) = [parse_result(m) for m in RESULT.findall(res.output.replace("\r", ""))]
    assert (result["success"], result["code"]) == ("0", "-6"), res.output
    (debug,) = re.findall(r"^DEBUG (.*?)\r?$", res.output, re.M)
    assert debug == f"localauthd is not running (no socket at {absent}): the reader is reached only through it"
    lines = world.syslog.lines[mark:]
    assert not any(i == "localauth-helper" and m != START_CHECK for i, m in lines), lines
    assert world.service.helpers() == []


def test_companion_policies_fail_without_the_root_side(world):
    run = world.run("can", "3")
    assert (run.result["code"], run.result["desc"]) == ("-11", "No companion device available.")
    assert helper_lines(run) == []


def test_the_readers_lines_come_in_the_programs_language(world):
    run = world.run("eval", "biometrics", fingers=[OTHER, ENROLLED], env={"LANG": "zh_CN.UTF-8"})
    assert run.result["success"] == "1", run.output
    assert "指纹" in run.output, run.output                  # the helper's lines, in Chinese
    assert run.result["desc"] == "-"                          # (and no error to describe)
