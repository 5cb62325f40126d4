"""pam_localauth.so through the real libpam (pam_wrapper), asking a localauthd of the
test's own that starts a fake helper (module_bed.py, fake_helper.py).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_pam_module.py
The module is built first with `scripts/build --c-only`, and localauthd with
`scripts/build --swift-only` when it is not there (set LOCALAUTH_SKIP_BUILD=1 to use what
is in build/ or LOCALAUTH_PAM_MODULE as it is).

Most tests use a stack of this module as `sufficient` followed by pam_matrix as the
password module, and check: the PAM result, what the user saw, the module's log line, and
that the password still works in the same transaction. The module starts no process: the
host's children after a run are none (test_no_fork.py shows it under strace).
"""
import ctypes
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pamenv  # noqa: E402
from module_bed import LOCALAUTHD, PASSWORD, USER, Bed, failed, sudo_bed  # noqa: E402,F401
from pamenv import MODULE, PamWorld, outcomes  # noqa: E402
from real_helper import REAL_HELPER  # noqa: E402

SRC = pamenv.REPO / "Sources" / "pam_localauth"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root (localauthd, sudo)")


@pytest.fixture(scope="session", autouse=True)
def built_module():
    if not os.environ.get("LOCALAUTH_SKIP_BUILD") and not os.environ.get("LOCALAUTH_PAM_MODULE"):
        subprocess.run([str(pamenv.REPO / "scripts" / "build"), "--c-only"], check=True,
                       capture_output=True)
    if not LOCALAUTHD.is_file() and not os.environ.get("LOCALAUTH_SKIP_BUILD"):
        subprocess.run([str(pamenv.REPO / "scripts" / "build"), "--swift-only"], check=True,
                       capture_output=True)
    assert MODULE.is_file(), f"{MODULE} missing"
    assert LOCALAUTHD.is_file(), f"{LOCALAUTHD} missing (scripts/build)"
    return MODULE


@pytest.fixture
def bed(request):
    with PamWorld() as world:
        b = Bed(world)
        try:
            yield b
        finally:
            b.close(failed(request))


def only_outcome(result):
    found = outcomes(result.logs)
    assert len(found) == 1, [l.message for l in result.logs]
    return found[0]


def prompts(result):
    return [text for style, text in result.messages if style.startswith("PAM_PROMPT")]


def assert_password_fallback(result):
    """The module did not decide; pam_matrix asked for the password and it worked."""
    assert result.rv == "PAM_SUCCESS", result.stderr[-1500:]
    assert prompts(result)[-1] == "Password: "
    assert result.children == []  # the module started nothing in the host


# --- the built object (always build/, the production build) ------------------------------

RELEASE_MODULE = pamenv.REPO / "build" / "lib" / "security" / "pam_localauth.so"


@pytest.fixture
def release_module(built_module):
    if not RELEASE_MODULE.is_file():
        pytest.skip("no build/lib/security/pam_localauth.so")
    return RELEASE_MODULE


def test_links_only_libpam_and_libc(release_module):
    out = subprocess.run(["readelf", "-d", str(release_module)], check=True,
                         capture_output=True, text=True).stdout
    needed = {l.split("[")[1].rstrip("]") for l in out.splitlines() if "(NEEDED)" in l}
    assert needed == {"libpam.so.0", "libc.so.6"}
    assert "BIND_NOW" in out or "NOW" in out


def test_exports_only_pam_entry_points(release_module):
    out = subprocess.run(["nm", "-D", "--defined-only", str(release_module)], check=True,
                         capture_output=True, text=True).stdout
    names = {l.split()[-1] for l in out.splitlines() if l.strip()}
    assert names == {"pam_sm_authenticate", "pam_sm_setcred", "pam_sm_acct_mgmt"}


def test_default_service_path_is_compiled_in_and_no_helper_path(release_module):
    """The module knows one door, localauthd's socket; no helper's path is in it."""
    data = release_module.read_bytes()
    assert b"/run/localauth/socket" in data
    assert b"localauth-helper" not in data and b"libexec" not in data


# --- outcomes of the helper --------------------------------------------------------------

def test_match_is_success_without_password(bed):
    r = bed.drive(bed.stack("match"))
    assert r.rv == "PAM_SUCCESS"
    assert prompts(r) == []
    o = only_outcome(r)
    assert (o["user"], o["service"], o["result"], o["pam"], o["cause"]) == \
        (USER, "la-test", "success", "PAM_SUCCESS", "fake match")
    assert r.children == []


def test_no_match_shows_message_then_password(bed):
    r = bed.drive(bed.stack("nomatch"))
    assert_password_fallback(r)
    assert r.messages[0] == ["PAM_TEXT_INFO", "Place your finger on the reader"]
    o = only_outcome(r)
    assert (o["result"], o["pam"]) == ("authenticationFailed", "PAM_AUTH_ERR")
    assert o["cause"] == "fake: 3 failed matches"


def test_info_and_error_messages_are_relayed(bed):
    r = bed.drive(bed.stack("messages"))
    assert_password_fallback(r)
    assert r.messages[:2] == [["PAM_TEXT_INFO", "fake info message"],
                              ["PAM_ERROR_MSG", "fake error message"]]
    assert only_outcome(r)["pam"] == "PAM_AUTHINFO_UNAVAIL"


def test_silent_is_passed_to_the_helper_which_filters_its_own_lines(bed):
    """PAM_SILENT reaches the helper as `silent=1`; the module relays what the helper
    sends (the helper drops chatter and keeps what the user must do with the reader)."""
    r = bed.drive(bed.stack("messages"), flags=["PAM_SILENT"])
    assert r.rv == "PAM_SUCCESS"
    assert r.messages[:2] == [["PAM_TEXT_INFO", "fake info message"],
                              ["PAM_ERROR_MSG", "fake error message"]]
    assert r.messages[-1] == ["PAM_PROMPT_ECHO_OFF", "Password: "]
    assert bed.events("start")[0]["request"]["silent"] == "1"


def test_not_opted_in_is_unavailable_and_the_password_follows(bed):
    r = bed.drive(bed.stack("notoptedin"))
    assert_password_fallback(r)
    o = only_outcome(r)
    assert (o["result"], o["pam"]) == ("notOptedIn", "PAM_AUTHINFO_UNAVAIL")


@pytest.mark.parametrize("after", ["pam_permit.so", "pam_env.so", "pam_shells.so",
                                   "pam_succeed_if.so uid >= 0"])
def test_required_line_then_a_module_that_succeeds_denies_a_user_not_opted_in(bed, after):
    """The gdm-fingerprint shape with a module that always succeeds after the line: a
    user who never turned fingerprint login on must not get in with nothing (PAM_IGNORE
    here was pam-u2f's CVE-2025-23013)."""
    svc = bed.world.service("la-req", [bed.line("notoptedin", "required"),
                                       f"auth optional {after}"])
    r = bed.drive(svc, answers=[])
    assert r.rv == "PAM_AUTHINFO_UNAVAIL", r.stderr[-1500:]
    assert prompts(r) == []


@pytest.mark.parametrize("code", [1, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -13, -1004, -77])
def test_required_line_then_pam_permit_denies_every_result_but_success(bed, code):
    svc = bed.world.service("la-req2", [bed.line("code", "required", f"fake_code={code}"),
                                        "auth optional pam_permit.so"])
    r = bed.drive(svc, answers=[])
    assert r.rv not in ("PAM_SUCCESS", "PAM_IGNORE"), code


# docs/ARCHITECTURE.md §7, code by code; the solo stack returns the module's own code.
CODE_TABLE = [
    (-1, "authenticationFailed", "PAM_AUTH_ERR"),
    (-2, "userCancel", "PAM_AUTH_ERR"),
    (-3, "userFallback", "PAM_AUTHINFO_UNAVAIL"),
    (-4, "systemCancel", "PAM_AUTHINFO_UNAVAIL"),
    (-5, "passcodeNotSet", "PAM_AUTHINFO_UNAVAIL"),
    (-6, "biometryNotAvailable", "PAM_AUTHINFO_UNAVAIL"),
    (-7, "biometryNotEnrolled", "PAM_AUTHINFO_UNAVAIL"),
    (-8, "biometryLockout", "PAM_AUTHINFO_UNAVAIL"),
    (-9, "appCancel", "PAM_AUTH_ERR"),
    (-10, "invalidContext", "PAM_AUTHINFO_UNAVAIL"),
    (-13, "biometryDisconnected", "PAM_AUTHINFO_UNAVAIL"),
    (-1004, "notInteractive", "PAM_AUTHINFO_UNAVAIL"),
    (-11, "unknownCode", "PAM_AUTHINFO_UNAVAIL"),
    (2, "unknownCode", "PAM_AUTHINFO_UNAVAIL"),
]


@pytest.mark.parametrize("code,name,pam", CODE_TABLE)
def test_result_code_maps_to_pam(bed, code, name, pam):
    r = bed.drive(bed.solo("code", f"fake_code={code}"), answers=[])
    assert r.rv == pam
    o = only_outcome(r)
    assert (o["result"], o["pam"]) == (name, pam)
    if name == "unknownCode":
        assert f"unknown result code {code}" in o["cause"]


# Every way a helper can go wrong: PAM_AUTHINFO_UNAVAIL, a log line naming it, and the
# password still works. Never success, even when a valid `R` code=0 was part of it. (How a
# helper ended, its exit status, is localauthd's to see and log: the module sees only the
# connection.)
FAILURES = [
    ("garbage", [], "malformed frame payload"),
    ("oversized", [], "frame length out of range"),
    ("zero_length", [], "frame length out of range"),
    ("truncated", [], "end of file in the middle of a frame"),
    ("unknown_type", [], "unknown frame type 0x5a"),
    ("wrong_direction", [], "unexpected frame type 'Q'"),
    ("hang", [], "the service sent nothing within 10000 ms of the connection"),
    ("hang", ["helper_timeout=1"], "helper timed out after 1 s"),
    ("hang_after_start", ["helper_timeout=4"], "helper timed out after 4 s"),
    ("crash", [], "helper ended without a result"),
    ("exit_without_result", [], "helper ended without a result"),
    ("bad_result", [], "result without a code"),
    ("frame_after_result", [], "frame after the result"),
    ("linger_after_result", [], "helper did not close the connection within 2000 ms after its result"),
]


@pytest.mark.alone("a time bound: the password within seconds of the first-frame bound")
def test_a_silent_helper_hands_over_to_the_password_within_seconds(bed):
    """A service that takes the connection and never writes (a helper that hangs in its
    start-up) holds the caller for the first-frame bound (10 s, which also covers a service
    socket-activated by this very connection), not for helper_timeout (120 s by default)."""
    started = time.monotonic()
    r = bed.drive(bed.stack("hang"))
    took = time.monotonic() - started
    assert_password_fallback(r)
    assert "the service sent nothing" in only_outcome(r)["cause"]
    assert 9.5 < took < 15, took


@pytest.mark.alone("a time bound: the password within 1 s of Ctrl-C")
def test_ctrl_c_ends_the_wait_for_a_silent_helper_at_once(bed):
    run = bed.world.pamtester(bed.stack("hang"), USER, items={"tty": "/dev/pts/0"})
    # The helper has its request: the module waits for its first frame now (a fixed sleep
    # here was a guess at how long pamtester and the module take to get there).
    deadline = time.monotonic() + 15
    while not bed.events("start"):
        assert time.monotonic() < deadline, "the helper never started"
        time.sleep(0.02)
    run.wait_module_takes_ctrl_c()   # and it waits on the helper, where Ctrl-C is its own
    asked = time.monotonic()
    run.interrupt()
    run.expect("Password: ", timeout=5)
    waited = time.monotonic() - asked
    run.sendline(PASSWORD)
    res = run.finish()
    assert res.status == 0, res.output
    assert waited < 1, waited
    assert "interrupted before the helper's first frame" in res.output


@pytest.mark.parametrize("mode,extra,cause", FAILURES)
def test_helper_failure_falls_back_to_password(bed, mode, extra, cause):
    started = time.monotonic()
    r = bed.drive(bed.stack(mode, *extra))
    assert_password_fallback(r)
    o = only_outcome(r)
    assert (o["result"], o["pam"]) == ("helperFailure", "PAM_AUTHINFO_UNAVAIL")
    assert cause in o["cause"]
    assert any(l.priority == 3 for l in r.logs)  # LOG_ERR
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("mode,result", [("crash", "helperFailure"), ("hang", "helperFailure"),
                                         ("match", "success")])
def test_an_app_that_ignores_sigchld_keeps_it_ignored_throughout(bed, mode, result):
    """The host lets the kernel reap its children (SIGCHLD ignored): the module leaves that
    as it is for the whole run (it has no child to wait for), and nothing is left behind."""
    r = bed.drive(bed.stack(mode, "helper_timeout=2"), ignore_signals=["SIGCHLD"])
    assert r.dispositions["before"] == r.dispositions["after"]
    assert r.dispositions["after"]["SIGCHLD"][0] == 1  # still SIG_IGN
    assert only_outcome(r)["result"] == result
    assert r.children == []
    if result != "success":
        assert_password_fallback(r)


@pytest.mark.parametrize("mode,result,said", [
    ("exit_nonzero", "success", "exited with status 3"),
    ("crash", "helperFailure", "was killed by signal 11"),
])
def test_how_a_helper_ended_is_the_services_to_log(bed, mode, result, said):
    """The module sees only the connection: a whole result and then the connection's end is
    the result, whatever the exit status after it; an end before a result is the password.
    How the helper ended is localauthd's to see, reap and log."""
    r = bed.drive(bed.stack(mode))
    assert only_outcome(r)["result"] == result
    assert r.children == []
    assert bed.syslog.wait_for(lambda ident, m: ident == "localauthd" and said in m,
                               timeout=10), bed.service_log()


def test_helper_gone_before_answer_does_not_kill_app(bed):
    """The module's write meets a closed pipe: SIGPIPE must not end the application."""
    r = bed.drive(bed.stack("prompt_then_exit"), answers=["1234", PASSWORD], answer_delay=0.3)
    assert_password_fallback(r)
    assert only_outcome(r)["pam"] == "PAM_AUTHINFO_UNAVAIL"
    assert r.dispositions["before"] == r.dispositions["after"]


# --- prompts and the conversation --------------------------------------------------------

def test_prompt_answer_reaches_helper(bed):
    r = bed.drive(bed.stack("prompt"), answers=["1234"])
    assert r.rv == "PAM_SUCCESS"
    assert r.messages == [["PAM_PROMPT_ECHO_OFF", "Fake code: "]]
    assert [(e["type"], e["payload"]) for e in bed.events("reply")] == [("A", "1234")]
    assert PASSWORD not in r.stderr and "1234" not in "".join(l.message for l in r.logs)


def test_prompt_echo_on(bed):
    r = bed.drive(bed.stack("prompt", "fake_echo=1"), answers=["1234"])
    assert r.rv == "PAM_SUCCESS"
    assert r.messages == [["PAM_PROMPT_ECHO_ON", "Fake code: "]]


def test_wrong_answer_then_password(bed):
    r = bed.drive(bed.stack("prompt"), answers=["0000", PASSWORD])
    assert_password_fallback(r)
    assert only_outcome(r)["result"] == "authenticationFailed"


def test_failed_conversation_sends_N_and_gives_conv_err(bed):
    r = bed.drive(bed.solo("prompt"), answers=[])
    assert r.rv == "PAM_CONV_ERR"
    assert [e["type"] for e in bed.events("reply")] == ["N"]
    o = only_outcome(r)
    assert (o["result"], o["pam"]) == ("appCancel", "PAM_CONV_ERR")


def test_time_in_the_conversation_is_not_helper_time(bed):
    r = bed.drive(bed.stack("prompt", "helper_timeout=1"), answers=["1234"], answer_delay=1.5)
    assert r.rv == "PAM_SUCCESS"
    assert only_outcome(r)["result"] == "success"


# --- the request -------------------------------------------------------------------------

def test_request_carries_the_call(bed):
    service = bed.stack("match", "debug", "[reason=Fingerprint for sudo]")
    r = bed.drive(service, items={"tty": "/dev/pts/9", "rhost": "localhost", "ruser": "la-bob"},
                  pam_env={"LANG": "de_DE.UTF-8"})
    assert r.rv == "PAM_SUCCESS" and prompts(r) == [], r.logs
    (start,) = bed.events("start")
    req = start["request"]
    assert {k: req[k] for k in ("version", "mode", "user", "service", "tty", "rhost", "ruser",
                                "silent", "locale", "caller_uid")} == {
        "version": "1", "mode": "authenticate", "user": USER, "service": "la-test",
        "tty": "/dev/pts/9", "rhost": "localhost", "ruser": "la-bob", "silent": "0",
        "locale": "de_DE.UTF-8", "caller_uid": "0"}
    assert "first_line" not in req
    # The process that called pam_authenticate, as the kernel named the service's peer.
    argv = start["argv"]
    assert argv[:2] == ["--service-peer-uid", "0"] and argv[2] == "--service-peer-pid"
    assert req["pid"] == argv[3] and start["ppid"] == bed.service.pid
    assert req["arg"] == [bed.arg, "fake_mode=match",
                          f"fake_dir={bed.records}", "debug", "reason=Fingerprint for sudo"]


def test_locale_prefers_pam_environment_then_process(bed):
    service = bed.stack("match")
    bed.drive(service, pam_env={"LC_MESSAGES": "fr_FR.UTF-8"}, env={"LC_ALL": "de_DE.UTF-8"})
    bed.drive(service, env={"LC_ALL": "", "LC_MESSAGES": "", "LANG": "pt_BR.UTF-8"})
    bed.drive(service, pam_env={"LANG": "x;rm -rf /"})
    locales = [e["request"]["locale"] for e in bed.events("start")]
    assert locales == ["fr_FR.UTF-8", "pt_BR.UTF-8", ""]


def test_user_name_with_newline_is_refused(bed):
    r = bed.drive(bed.stack("match"), user="la-alice\nmode=authsucc")
    assert bed.events() == []
    o = only_outcome(r)
    assert (o["result"], o["pam"]) == ("helperFailure", "PAM_AUTHINFO_UNAVAIL")
    assert "`user` is not one line" in o["cause"]


# --- what reaches the helper, which localauthd starts ----------------------------------

def test_helper_process_is_clean(bed):
    """Nothing of the host (its environment, a descriptor it let leak, its session) reaches
    the root process that serves its request: localauthd starts that, not the module."""
    r = bed.drive(bed.stack("match"), inheritable_fd=True,
                  env={"LD_LIBRARY_PATH": "/nonexistent", "LA_SECRET": "x", "LANG": "C"})
    assert r.rv == "PAM_SUCCESS"
    (start,) = bed.events("start")
    env = dict(start["env"])
    env.pop("LC_CTYPE", None)  # Python's own C-locale coercion (PEP 538), not inherited
    assert env == {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    # 0-3 and the descriptor Python used to list the directory; nothing inherited.
    assert start["fds"][:4] == [0, 1, 2, 3] and len(start["fds"]) <= 5, start["fds"]
    targets = start["fd_targets"]
    assert targets["0"].startswith("socket:") and targets["0"] == targets["1"]
    assert targets["2"] == "/dev/null"
    assert "pidfd" in targets["3"]          # the peer's, which the helper pins it by
    assert start["sid"] == start["pid"]  # own session: terminal signals do not reach it
    assert start["ppid"] == bed.service.pid
    assert start["ids"] == [0] * 6
    assert start["sigint"] == "<built-in function default_int_handler>"  # defaults


# The caller at the lowest priority it can give itself, on one CPU, idle I/O, with small
# limits: none of it may reach the helper, which then never runs in time.
STARVED = ["chrt", "--idle", "0", "nice", "-n", "19", "taskset", "-c", "0", "ionice", "-c", "3",
           "prlimit", "--fsize=4096:unlimited", "--nofile=16:1024", "--core=1000000:unlimited",
           "--"]


@pytest.mark.alone("its caller runs at idle priority on one CPU: beside other tests it waits for them")
def test_helper_does_not_inherit_the_callers_scheduling_or_limits(bed):
    """The helper has the service's scheduling and limits (here this test's own, which
    started it), whatever its caller gave itself."""
    import resource
    r = bed.drive(bed.stack("match"), prefix=STARVED)
    assert r.rv == "PAM_SUCCESS"
    (start,) = bed.events("start")
    s = start["scheduling"]
    assert (s["nice"], s["policy"]) == (os.getpriority(os.PRIO_PROCESS, 0), os.SCHED_OTHER), s
    assert s["ioprio_class"] != 3, s       # not idle I/O
    assert s["cpus"] == sorted(os.sched_getaffinity(0)), s
    assert (s["fsize"], s["nofile"]) == (resource.getrlimit(resource.RLIMIT_FSIZE)[0],
                                         resource.getrlimit(resource.RLIMIT_NOFILE)[0]), s
    assert s["core"] != 1000000, s


def test_one_identity_when_ruid_differs(bed):
    """Like setuid sudo: ruid is the user, euid root; the helper is root's alone, and the
    request names the caller's real uid."""
    r = bed.drive(bed.stack("match"), real_uid=65534)
    assert r.rv == "PAM_SUCCESS"
    (start,) = bed.events("start")
    assert start["ids"] == [0] * 6
    assert start["request"]["caller_uid"] == "65534"


def test_service_argument_ignored_for_non_root_caller(bed):
    """A caller that is not root reaches only the compiled-in socket (none here): one line
    says so, and the password follows."""
    svc = bed.world.service("la-nonroot", [bed.line("match", module=bed.readable_module()),
                                           f"auth required {bed.world.matrix}"])
    r = bed.drive(svc, prefix=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
    assert bed.events() == []
    assert any("service= ignored: the caller is not root" in l.message for l in r.logs)
    assert r.rv == "PAM_SUCCESS" and prompts(r) == ["Password: "]


def test_obsolete_helper_argument_is_logged_and_ignored(bed):
    """An old stack's `helper=` starts nothing and moves nothing: one line, and the request
    goes to the service as without it."""
    r = bed.drive(bed.stack("match", "helper=/usr/libexec/localauth/localauth-helper"))
    assert r.rv == "PAM_SUCCESS"
    said = [l.message for l in r.logs if "helper= is obsolete and ignored" in l.message]
    assert len(said) == 1, [l.message for l in r.logs]
    assert len(bed.events("start")) == 1 and r.children == []


def stale_socket(path):
    """A root-owned socket file nothing listens on (a service that crashed)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()


@pytest.mark.parametrize("spoil,why", [
    (lambda p: (stale_socket(p), os.chown(p, 65534, 65534)), "refused: not a socket of root's"),
    (lambda p: p.write_text(""), "refused: not a socket of root's"),
    (lambda p: p.mkdir(), "refused: not a socket of root's"),
    (stale_socket, "did not take the connection"),
], ids=["users-socket", "regular-file", "directory", "stale"])
def test_a_service_that_cannot_be_used_gives_the_password(bed, spoil, why):
    path = bed.world.root / "other-run" / "socket"
    path.parent.mkdir()
    spoil(path)
    svc = bed.world.service("la-spoilt", [bed.line("match").replace(bed.arg, f"service={path}"),
                                          f"auth required {bed.world.matrix}"])
    r = bed.drive(svc)
    assert bed.events() == []
    assert_password_fallback(r)
    o = only_outcome(r)
    assert (o["result"], o["pam"]) == ("helperFailure", "PAM_AUTHINFO_UNAVAIL")
    assert why in o["cause"], o


def test_relative_service_path_keeps_default(bed):
    r = bed.drive(bed.world.service("la-rel", [
        f"auth sufficient {MODULE} service=run/socket", f"auth required {bed.world.matrix}"]))
    assert any("service= must be an absolute path; keeping /run/localauth/socket"
               in l.message for l in r.logs)
    assert bed.events() == []
    assert r.rv == "PAM_SUCCESS"


@pytest.mark.parametrize("value", ["0", "abc", "3601", "-1", "1.5s"])
def test_bad_helper_timeout_is_logged_and_default_kept(bed, value):
    r = bed.drive(bed.stack("match", f"helper_timeout={value}"))
    assert any("helper_timeout must be a number of seconds from 1 to 3600; keeping 120"
               in l.message for l in r.logs)
    assert r.rv == "PAM_SUCCESS"


# --- where no helper is asked -----------------------------------------------------------

def test_a_remote_host_is_the_services_to_judge(bed):
    """The module decides nothing from PAM_RHOST: it sends it, and localauthd answers a
    sign-in from another machine itself, without a helper (RemoteHostAnswer; the real
    helper refuses one too: test_e2e_pam, test_faults). Its first line ran, so the lines
    after the password ask the helper, which refuses to clear on such a handle."""
    r = bed.drive(bed.stack("notoptedin"), items={"rhost": "192.0.2.7"})
    assert bed.events("start") == []
    o = only_outcome(r)
    assert (o["result"], o["reason"], o["pam"]) == ("notInteractive", "remote", "PAM_AUTHINFO_UNAVAIL")
    assert "192.0.2.7" in o["cause"], o
    assert_password_fallback(r)


@pytest.mark.parametrize("rhost", ["", "localhost", "127.0.0.1", "::1"])
def test_local_host_starts_helper(bed, rhost):
    r = bed.drive(bed.stack("match"), items={"rhost": rhost})
    assert r.rv == "PAM_SUCCESS"
    assert len(bed.events("start")) == 1


def test_no_user_fails_without_prompting(bed):
    r = bed.drive(bed.solo("match"), user=None, answers=["should-not-be-asked"])
    assert r.rv == "PAM_AUTHINFO_UNAVAIL"
    assert r.messages == []
    assert bed.events() == []
    assert only_outcome(r)["result"] == "noUser"


# --- authsucc: the line after the password module ----------------------------------------

def authsucc_line(bed, mode="match", control="optional"):
    return bed.line(mode, control, "authsucc")


def test_authsucc_without_first_line_changes_nothing(bed):
    svc = bed.world.service("la-as1", [f"auth required {bed.world.matrix}",
                                       authsucc_line(bed)])
    r = bed.drive(svc)
    assert r.rv == "PAM_SUCCESS"
    assert bed.events() == []
    assert any("authsucc: the first line did not run in this handle, or a finger matched there: nothing changed" in l.message
               for l in r.logs)


def test_authsucc_after_first_line_runs_helper(bed):
    svc = bed.world.service("la-as2", [bed.line("nomatch", "sufficient"),
                                       f"auth required {bed.world.matrix}",
                                       authsucc_line(bed)])
    r = bed.drive(svc)
    assert r.rv == "PAM_SUCCESS"
    first, second = bed.events("start")
    assert first["request"]["mode"] == "authenticate"
    assert second["request"]["mode"] == "authsucc"
    assert second["request"]["first_line"] == "1"
    assert second["request"]["proof"] == "authtok"
    assert "authsucc" in second["request"]["arg"]
    assert [o["pam"] for o in outcomes(r.logs)] == ["PAM_AUTH_ERR", "PAM_AUTHINFO_UNAVAIL"]


def test_after_a_silent_helper_the_lines_after_the_password_start_none(bed):
    """A helper that never answered the first line would make the person who just typed the
    password wait its first-frame bound again: neither the authsucc line nor the account
    line starts another (issue 21: no second wait)."""
    svc = bed.world.service("la-as7", [bed.line("hang", "sufficient"),
                                       f"auth required {bed.world.matrix}",
                                       authsucc_line(bed),
                                       f"account required {MODULE} {bed.arg} fake_dir={bed.records}",
                                       "account required pam_permit.so"])
    r = bed.drive(svc, account=True)
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS")
    assert [e["request"]["mode"] for e in bed.events("start")] == ["authenticate"]
    said = [l.message for l in r.logs if "did not answer earlier in this transaction" in l.message]
    assert len(said) == 2, [l.message for l in r.logs]   # the authsucc line's, the account line's


def test_after_fprintd_failed_the_lines_after_the_password_do_not_ask_it_again(bed):
    svc = bed.world.service("la-as8", [bed.line("reader_unreachable", "sufficient"),
                                       f"auth required {bed.world.matrix}",
                                       authsucc_line(bed)])
    r = bed.drive(svc)
    assert r.rv == "PAM_SUCCESS"
    first, second = bed.events("start")
    assert "reader" not in first["request"]
    assert (second["request"]["mode"], second["request"]["reader"]) == ("authsucc", "unreachable")
    # A first line that reached the reader sends no such word.
    svc = bed.world.service("la-as9", [bed.line("nomatch", "sufficient"),
                                       f"auth required {bed.world.matrix}", authsucc_line(bed)])
    bed.drive(svc)
    assert "reader" not in bed.events("start")[-1]["request"]


def test_authsucc_after_a_fingerprint_success_changes_nothing(bed):
    """pam-auth-update's `success=end` jumps from a fingerprint success to the Additional
    block, where the authsucc line sits: that must not count as a password."""
    svc = bed.world.service("la-as5", [bed.line("match", "[success=1 default=ignore]"),
                                       f"auth requisite {bed.world.matrix}",
                                       "auth required pam_permit.so",
                                       authsucc_line(bed)])
    r = bed.drive(svc)
    assert r.rv == "PAM_SUCCESS"
    assert [e["request"]["mode"] for e in bed.events("start")] == ["authenticate"]
    assert any("authsucc: the first line did not run in this handle, or a finger matched there: nothing changed" in l.message
               for l in r.logs)


def test_authsucc_cannot_produce_success(bed):
    """Even a helper answering success in authsucc mode only yields PAM_AUTHINFO_UNAVAIL:
    the line authenticates nobody (never PAM_SUCCESS, never PAM_IGNORE)."""
    svc = bed.world.service("la-as3", [bed.line("nomatch", "optional"),
                                       authsucc_line(bed, "match", "required"),
                                       "auth optional pam_permit.so"])
    r = bed.drive(svc)
    assert r.rv == "PAM_AUTHINFO_UNAVAIL"
    last = outcomes(r.logs)[-1]
    assert (last["result"], last["pam"]) == ("success", "PAM_AUTHINFO_UNAVAIL")


SET_ITEMS = Path(pamenv.PAM_MATRIX).parent / "pam_set_items.so"


def test_authsucc_sends_the_password_the_stack_accepted(bed):
    """PAM_AUTHTOK (set here by pam_wrapper's pam_set_items, as pam_unix sets it) follows
    the request as an `A` frame."""
    svc = bed.world.service("la-as6", [bed.line("nomatch", "sufficient"),
                                       f"auth required {bed.world.matrix}",
                                       f"auth optional {SET_ITEMS}",
                                       bed.line("match", "optional", "authsucc")])
    r = bed.drive(svc, env={"PAM_AUTHTOK": PASSWORD})
    assert r.rv == "PAM_SUCCESS"
    tok, = bed.events("authtok")
    assert (tok["type"], tok["payload"]) == ("A", PASSWORD)


def account_stack(bed, name, first_mode):
    return bed.world.service(name, [bed.line(first_mode, "sufficient"),
                                    f"auth required {bed.world.matrix}",
                                    f"account required {MODULE} {bed.arg} "
                                    f"fake_mode=match fake_dir={bed.records}", "account required pam_permit.so"])


def test_account_phase_runs_the_helper_after_a_password_success(bed):
    r = bed.drive(account_stack(bed, "la-acct", "nomatch"), account=True)
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS")
    first, second = bed.events("start")
    assert (second["request"]["mode"], second["request"]["proof"]) == ("authsucc", "account")
    assert second["request"]["first_line"] == "1"


def test_account_phase_after_a_fingerprint_success_changes_nothing(bed):
    r = bed.drive(account_stack(bed, "la-acct2", "match"), account=True)
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS")
    assert [e["request"]["mode"] for e in bed.events("start")] == ["authenticate"]


def test_a_remote_handle_s_account_phase_asks_the_helper_with_its_first_line(bed):
    """sshd runs the account phase on the handle where a wrong password failed once a key
    lets the user in. The first line's sign-in from another machine is localauthd's to
    refuse (no helper); the account line asks the helper once, with the handle's items and
    `first_line=1`; the real helper records the login from elsewhere and clears nothing
    there (test_account_phase.py, test_remote_login.py)."""
    r = bed.drive(account_stack(bed, "la-acct-remote", "nomatch"), items={"rhost": "192.0.2.7"},
                  account=True)
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS")
    assert outcomes(r.logs)[0]["result"] == "notInteractive"
    second, = bed.events("start")
    assert {k: second["request"].get(k) for k in ("mode", "proof", "first_line", "rhost")} == {
        "mode": "authsucc", "proof": "account", "first_line": "1", "rhost": "192.0.2.7"}


@pytest.mark.parametrize("items", [{"rhost": "192.0.2.7"}, {"rhost": "127.0.0.1"}, {"tty": "ssh"}],
                         ids=["remote", "ipv4-loopback", "sshd-tty"])
def test_a_networked_account_phase_without_the_first_line_asks_the_helper_once(bed, items):
    """An SSH login by key: no first line ran in the handle, but it names where the login
    comes from, so the account line tells the helper (`first_line` absent), which records a
    login from elsewhere. Its answer is logged at LOG_INFO: nothing was to be cleared."""
    svc = bed.world.service("la-acct-key", [f"auth required {bed.world.matrix}",
                                            f"account required {MODULE} {bed.arg} "
                                            f"fake_mode=nomatch fake_dir={bed.records}", "account required pam_permit.so"])
    r = bed.drive(svc, items=items, account=True)
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS")
    start, = bed.events("start")
    assert (start["request"]["mode"], start["request"]["proof"]) == ("authsucc", "account")
    assert "first_line" not in start["request"], start
    line, = outcomes(r.logs)
    assert line["pam"] == "PAM_IGNORE" and [l.priority for l in r.logs if "result=" in l.message] == [6], r.logs


def test_account_phase_without_the_first_line_changes_nothing(bed):
    svc = bed.world.service("la-acct3", [f"auth required {bed.world.matrix}",
                                         f"account required {MODULE} {bed.arg} "
                                         f"fake_mode=match fake_dir={bed.records}", "account required pam_permit.so"])
    r = bed.drive(svc, account=True)
    assert (r.rv, r.acct_rv) == ("PAM_SUCCESS", "PAM_SUCCESS")
    assert bed.events("start") == []
    # Every SSH login by key is this: not a line in the log for it.
    assert [l.message for l in r.logs if "account:" in l.message] == [], r.logs


def test_authsucc_needs_a_new_first_line_each_time(bed):
    svc = bed.world.service("la-as4", [bed.line("nomatch", "sufficient"),
                                       f"auth required {bed.world.matrix}",
                                       authsucc_line(bed), authsucc_line(bed)])
    r = bed.drive(svc)
    assert r.rv == "PAM_SUCCESS"
    assert [e["request"]["mode"] for e in bed.events("start")] == ["authenticate", "authsucc"]


# --- Ctrl-C ------------------------------------------------------------------------------

def test_ctrl_c_on_terminal_cancels_scan_and_password_follows(bed):
    svc = bed.stack("cancel")
    run = bed.world.pamtester(svc, USER, items={"tty": "/dev/pts/0"})
    run.expect("Touch the reader")
    run.wait_module_takes_ctrl_c()   # the module is back to waiting on the helper
    run.interrupt()
    run.expect("Password: ")
    run.sendline(PASSWORD)
    res = run.finish()
    assert res.status == 0, res.output
    assert "successfully authenticated" in res.output
    assert [e["type"] for e in bed.events("frame")] == ["C"]
    o = only_outcome(res)
    assert (o["result"], o["pam"]) == ("userFallback", "PAM_AUTHINFO_UNAVAIL")


def test_ctrl_c_restores_signal_dispositions(bed):
    r = bed.drive(bed.stack("cancel"), interrupt_on="Touch the reader")
    assert_password_fallback(r)
    assert [e["type"] for e in bed.events("frame")] == ["C"]
    assert r.dispositions["before"] == r.dispositions["after"]
    assert only_outcome(r)["result"] == "userFallback"


def test_ctrl_c_ignored_by_the_application_stays_ignored(bed):
    """An application that ignores SIGINT keeps it so: no handler, no cancel."""
    r = bed.drive(bed.stack("cancel", "fake_wait=1.5"), interrupt_on="Touch the reader",
                  ignore_signals=["SIGINT"])
    assert_password_fallback(r)
    assert bed.events("frame") == []
    assert only_outcome(r)["result"] == "systemCancel"
    assert r.dispositions["before"] == r.dispositions["after"]
    assert r.dispositions["after"]["SIGINT"][0] == 1  # SIG_IGN


def test_helper_ignoring_cancel_is_killed_after_grace(bed):
    started = time.monotonic()
    r = bed.drive(bed.stack("ignore_cancel"), interrupt_on="Touch the reader")
    assert_password_fallback(r)
    assert 1.5 < time.monotonic() - started < 10
    o = only_outcome(r)
    assert (o["result"], o["pam"]) == ("helperFailure", "PAM_AUTHINFO_UNAVAIL")
    assert "did not answer the cancel within 2000 ms" in o["cause"]


# --- pamtester on a terminal: what a user sees -------------------------------------------

def test_pamtester_match(bed):
    run = bed.world.pamtester(bed.stack("match"), USER)
    res = run.finish()
    assert res.status == 0
    assert "Password" not in res.output
    assert only_outcome(res)["result"] == "success"


def test_pamtester_garbled_helper_then_password(bed):
    run = bed.world.pamtester(bed.stack("garbage"), USER)
    run.expect("Password: ")
    run.sendline(PASSWORD)
    res = run.finish()
    assert res.status == 0
    assert only_outcome(res)["cause"] == "garbled frame: malformed frame payload"


def test_pamtester_messages_and_wrong_password(bed):
    run = bed.world.pamtester(bed.stack("messages"), USER)
    run.expect("fake info message")
    run.expect("fake error message")
    run.expect("Password: ")
    run.sendline("wrong")
    res = run.finish()
    assert res.status != 0


def test_pamtester_remote(bed):
    """pamtester with a remote PAM_RHOST: the service's refusal (no helper) and the
    password after it."""
    run = bed.world.pamtester(bed.stack("notoptedin"), USER, items={"rhost": "ssh.example.org"})
    run.expect("Password: ")
    run.sendline(PASSWORD)
    res = run.finish()
    assert res.status == 0
    assert bed.events("start") == []
    assert only_outcome(res)["result"] == "notInteractive"


# --- the pure parts, through a test build with every symbol visible ----------------------

@pytest.fixture(scope="module")
def pure(tmp_path_factory):
    so = tmp_path_factory.mktemp("pure") / "la_pure.so"
    subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-fPIC", "-shared", "-Wall", "-Werror",
                    "-o", str(so), str(SRC / "frame.c"), str(SRC / "kv.c"),
                    str(SRC / "result_map.c")], check=True)
    lib = ctypes.CDLL(str(so))
    lib.la_frame_decode.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p,
                                    ctypes.POINTER(ctypes.c_size_t)]
    lib.la_result_to_pam.argtypes = [ctypes.c_long, ctypes.c_bool]
    lib.la_kv_find.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                               ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
    return lib


def decode(lib, data):
    frame = ctypes.create_string_buffer(32)
    used = ctypes.c_size_t(0)
    status = lib.la_frame_decode(data, len(data), frame, ctypes.byref(used))
    return status, used.value


OK, INCOMPLETE, BAD_LENGTH, BAD_TYPE, BAD_PAYLOAD = range(5)


def frame(t, payload=b"", length=None):
    n = len(payload) + 1 if length is None else length
    return n.to_bytes(4, "big") + t + payload


@pytest.mark.parametrize("data,expected", [
    (frame(b"I", b"hello"), (OK, 10)),
    (frame(b"I", b"hello") + b"next", (OK, 10)),
    (frame(b"R", b"x" * 4095), (OK, 4100)),
    (frame(b"N"), (OK, 5)),
    (b"", (INCOMPLETE, 0)),
    (b"\x00\x00\x00", (INCOMPLETE, 0)),
    (frame(b"I", b"hel", length=6), (INCOMPLETE, 0)),
    (frame(b"I", length=0), (BAD_LENGTH, 0)),
    ((4097).to_bytes(4, "big"), (BAD_LENGTH, 0)),  # refused before the bytes arrive
    (b"\xff\xff\xff\xff", (BAD_LENGTH, 0)),
    (frame(b"Z", b"x"), (BAD_TYPE, 0)),
    (frame(b"\x00"), (BAD_TYPE, 0)),
    (frame(b"I", b"a\x00b"), (BAD_PAYLOAD, 0)),
    (frame(b"I", b"\xc0\x80"), (BAD_PAYLOAD, 0)),          # overlong NUL
    (frame(b"I", b"\xed\xa0\x80"), (BAD_PAYLOAD, 0)),      # surrogate
    (frame(b"I", b"\xf4\x90\x80\x80"), (BAD_PAYLOAD, 0)),  # above U+10FFFF
    (frame(b"I", b"\xe2\x82"), (BAD_PAYLOAD, 0)),          # cut sequence
    (frame(b"C", b"x"), (BAD_PAYLOAD, 0)),                 # C carries nothing
    (frame(b"I", "Lecteur prêt ✓".encode()), (OK, 5 + len("Lecteur prêt ✓".encode()))),
])
def test_frame_decoder(pure, data, expected):
    assert decode(pure, data) == expected


KV_FOUND, KV_ABSENT, KV_MALFORMED, KV_DUPLICATE = range(4)


@pytest.mark.parametrize("payload,expected", [
    (b"code=0\nname=success\ncause=a=b", (KV_FOUND, b"0")),
    (b"name=x\ncode=-1004", (KV_FOUND, b"-1004")),
    (b"code=", (KV_FOUND, b"")),
    (b"name=x", (KV_ABSENT, None)),
    (b"", (KV_ABSENT, None)),
    (b"code=0\n", (KV_MALFORMED, None)),          # no newline after the last line
    (b"code=0\n\nname=x", (KV_MALFORMED, None)),   # no empty line
    (b"code=0\njunk", (KV_MALFORMED, None)),       # checked past the match
    (b"=0", (KV_MALFORMED, None)),
    (b"code=0\ncode=-1", (KV_DUPLICATE, None)),
    (b"codex=0\ncod=1", (KV_ABSENT, None)),
])
def test_key_value_reader(pure, payload, expected):
    value, size = ctypes.c_void_p(), ctypes.c_size_t()
    status = pure.la_kv_find(payload, len(payload), b"code", ctypes.byref(value),
                             ctypes.byref(size))
    got = ctypes.string_at(value.value, size.value) if status == KV_FOUND else None
    assert (status, got) == expected


def test_result_table_uses_header_values(pure):
    c = pamenv.pam_constants()
    for code, name, pam in CODE_TABLE:
        assert pure.la_result_to_pam(code, False) == c[pam], name
    assert pure.la_result_to_pam(0, False) == c["PAM_SUCCESS"]
    assert pure.la_result_to_pam(1, False) == c["PAM_AUTHINFO_UNAVAIL"]
    # No result, known or not, conversation failed or not, is ever PAM_IGNORE.
    for code in range(-1100, 10):
        for conv_failed in (False, True):
            assert pure.la_result_to_pam(code, conv_failed) != c["PAM_IGNORE"], code
    assert pure.la_result_to_pam(-2, True) == c["PAM_CONV_ERR"]
    assert pure.la_result_to_pam(-9, True) == c["PAM_CONV_ERR"]
    assert pure.la_result_to_pam(-1, True) == c["PAM_AUTH_ERR"]
    assert pure.la_result_to_pam(0, True) == c["PAM_SUCCESS"]


# --- with the real helper, when it is built (scripts/build without --c-only) ------------

@pytest.mark.skipif(not REAL_HELPER.is_file(), reason="localauth-helper not built")
def test_real_helper_without_reader_then_the_account_phase_records_password(bed):
    """No bus, no reader: the password works, and the authsucc line records it (the real
    helper, which localauthd starts for root's peer, takes root's module arguments)."""
    bed.serve(REAL_HELPER)
    state = bed.world.root / "state"
    state.mkdir(mode=0o700)
    # No terminal here: presence is not what this test is about.
    args = (f"{bed.arg} state_dir={state} config={bed.world.root}/none.conf "
            f"dbus_address=unix:path={bed.world.root}/no-bus require_presence=no")
    svc = bed.world.service("la-real", [f"auth sufficient {MODULE} {args}",
                                        f"auth required {bed.world.matrix}",
                                        f"auth optional {MODULE} authsucc {args}"])
    svc_account = bed.world.service("la-real-acct", [
        f"auth sufficient {MODULE} {args}", f"auth required {bed.world.matrix}",
        f"account required {MODULE} {args}", "account required pam_permit.so"])
    # pam_matrix's made-up user has no local password hash: the auth line cannot prove the
    # password, so nothing is recorded there ...
    r = bed.drive(svc)
    assert_password_fallback(r)
    first, second = outcomes(r.logs)
    assert (second["result"], second["pam"]) == ("invalidContext", "PAM_AUTHINFO_UNAVAIL"), second
    assert "cannot be checked here" in second["cause"], second
    assert not (state / f"{USER}.state").exists()
    # ... the account phase, reached only after the stack succeeded, records it.
    for attempt in range(2):
        started = time.monotonic()
        r = bed.drive(svc_account, account=True)
        assert_password_fallback(r)
        assert r.acct_rv == "PAM_SUCCESS"
        assert time.monotonic() - started < 5
        first, second = outcomes(r.logs)
        assert first["pam"] == "PAM_AUTHINFO_UNAVAIL", first
        assert (second["result"], second["pam"]) == ("success", "PAM_IGNORE"), second
        assert (state / f"{USER}.state").is_file()
    # After the password was recorded once, the reader itself is what is missing.
    assert first["result"] == "biometryNotAvailable", first


# --- under the real setuid sudo (its own /etc/pam.d service, a throwaway user) -----------

def test_sudo_fingerprint_match_needs_no_password(sudo_bed):
    p = sudo_bed.sudo("match")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "0"
    assert "password" not in p.stderr.lower()
    (start,) = sudo_bed.bed.events("start")
    assert start["ids"] == [0] * 6 and sudo_bed.user.gid not in start["groups"]  # not the user's group
    assert start["request"]["caller_uid"] == str(sudo_bed.uid)
    assert start["request"]["service"] == sudo_bed.tag


def test_sudo_no_match_then_password(sudo_bed):
    p = sudo_bed.sudo("nomatch", PASSWORD + "\n")
    assert p.returncode == 0, p.stderr
    # sudo passes PAM_SILENT; the helper's lines are still relayed (it filters its own).
    assert p.stdout.strip().splitlines() == ["Place your finger on the reader", "0"]
    p = sudo_bed.sudo("garbage", "wrong\n")
    assert p.returncode != 0
