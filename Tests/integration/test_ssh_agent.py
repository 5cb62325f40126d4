"""localauthd as the user's ssh-agent, against the real OpenSSH of Debian: an sshd on
127.0.0.1 with a host key and authorized keys of the test's own, a throwaway user whose
``~/.ssh/config`` has the one opt-in line (``IdentityAgent SOCKET``), ``ssh``, ``ssh-add``
and ``ssh-keygen -Y sign``, the virtual reader (sshbed.py).

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_ssh_agent.py

* The bed itself, with OpenSSH's own ssh-agent (no product): ssh logs in, a signature is
  asked from inside an ``ssh -A`` session, a commit is signed and verified, a bad
  session-bind is refused. A failure below is then the product's, not the bed's.
* ``ssh-add -L`` lists the key, and a second uid sees none of it.
* ``ssh la-sshbed true``: one matching finger logs in (the prompt names the key and the
  destination as known_hosts names it); three wrong ones do not (no password prompt for a
  finger-only key); a key that allows the password takes it.
* Five wrong fingers: the lockout holds across ssh, sudo and the agent alike.
* ``ssh -A``, then a signature asked from inside that session: refused without a scan for
  a key that does not allow forwarding; "forwarded through la-sshbed" for one that does.
* A session-bind whose signature does not verify is refused before any scan, and so is
  every signature asked after it on that connection (one that verifies is taken, then
  never rebound); a login signature for another session refused.
* 200 signatures in one connection inside the reuse window: the serving helper's
  descriptors and memory do not grow.
* A peer that exits while its request waits for the finger gets nothing: the helper ends,
  the reader stops, no window opens.
* Each use and refusal is in ``localauthctl ssh log`` with what it approved.
"""
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
import sshbed  # noqa: E402
from sshbed import AgentClient, AgentMachine, HOST  # noqa: E402
from messages import ENROLLED, LOCKED, OTHER  # noqa: E402
from terminal_finger import ASK_FINGER  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

FORWARDED = f"forwarded through {HOST}"
SIGN_A_FILE = "sign a file (namespace file)"
PASSWORD_PROMPT = re.compile(r"[Pp]assword[^\r\n]*: ?")
DENIED = re.escape("Permission denied (publickey)")


def flat(output: str) -> str:
    return " ".join(system.screen_lines(output))


def scans(m, since) -> list:
    """The results of the scans on the reader since the bed's mark ``since``."""
    return [e.args[0] for e in m.bed.events(since) if e.name == "VerifyStatus"]


def offered(m, since) -> bool:
    """Whether the reader was asked to wait for a finger since ``since`` (a scan offered)."""
    return any(e.name == "VerifyFingerSelected" or (e.name == "finger-needed" and e.args[0])
               for e in m.bed.events(since))


@pytest.fixture
def m(inst, bed):
    with AgentMachine(inst, bed) as machine:
        yield machine


# --- the bed, proved with OpenSSH's own agent -----------------------------------------------

def test_the_bed_with_openssh_s_own_agent():
    with system.ThrowawayUser() as user, sshbed.Sshd(user) as sshd:
        home = sshbed.SshHome(user, sshd, "/nonexistent")
        with sshbed.OpenSshAgent(user, home.home) as agent:
            home.use_agent(agent.socket)
            sshd.authorize(agent.public)
            listed = home.ssh_add_list()
            login = home.on_pty(home.ssh_argv("echo in-as-$USER")).finish(30)
            data, pub = home.data_file(), home.pubkey_file(agent.public)
            inside = home.on_pty(home.ssh_argv(" ".join(home.keygen_sign_argv(pub, data)), "-A")).finish(30)
            verified = home.verify_sshsig(agent.public, data)
            without_a = home.on_pty(home.ssh_argv("ssh-add -L")).finish(30)
            repo = home.git_repo()
            commit = home.on_pty(home.git_signing_argv(repo, "key::" + agent.public, "commit", "-q", "-S",
                                                       "--allow-empty", "-m", "signed")).finish(30)
            signers = home.write(home.home / "allowed_signers", f"tester@example.org {agent.public}\n", 0o644)
            good = home.git(repo, "verify-commit", "HEAD", allowed_signers=signers)
            client = AgentClient(home, agent.socket)
            session = secrets.token_bytes(32)
            host = sshbed.blob_of(sshd.host_key).hex()
            bad = client.ask("bind", host, session.hex(), sshbed.ed25519_sign(sshd.host_private, b"x" * 32).hex(), 0)
            client.close()
            client = AgentClient(home, agent.socket)
            right = client.ask("bind", host, session.hex(), sshbed.ed25519_sign(sshd.host_private, session).hex(), 0)
            client.close()
    facts = {"listed": listed.stdout.split()[:2] == agent.public.split()[:2],
             "login": (login.status, f"in-as-{user.name}" in login.output),
             "signed_inside_ssh_A": inside.status, "verified": verified.returncode,
             "no_agent_without_A": without_a.status != 0,
             "commit": commit.status, "verify_commit": 'Good "git" signature for tester@example.org' in good.stderr,
             "bad_bind": bad, "good_bind": right}
    assert facts == {"listed": True, "login": (0, True), "signed_inside_ssh_A": 0, "verified": 0,
                     "no_agent_without_A": True, "commit": 0, "verify_commit": True,
                     "bad_bind": {"reply": sshbed.FAILURE}, "good_bind": {"reply": sshbed.SUCCESS}}, \
        f"{facts}\n{login.output}\n{inside.output}\n{commit.output}\n{good.stderr}\n{sshd.log()[-3000:]}"


# --- keys, per uid ------------------------------------------------------------------------

def test_ssh_add_lists_the_key_and_another_uid_sees_none_of_it(m):
    line = m.create_key("laptop")
    listed = m.home.ssh_add_list()
    assert listed.returncode == 0, listed
    assert [l.split()[:2] for l in listed.stdout.splitlines()] == [line.split()[:2]], listed.stdout
    assert line.startswith("ecdsa-sha2-nistp256 "), line
    pub = m.sshd.dir / "theirs.pub"          # a file the second uid can read
    pub.write_text(line + "\n")
    pub.chmod(0o644)
    with system.ThrowawayUser() as other:
        env = sshbed.user_env(other, SSH_AUTH_SOCK=str(m.agent_socket), HOME="/")
        theirs = sshbed.run_as(other, ["ssh-add", "-L"], env=env)
        mark = m.bed.mark()
        # The first uid's key named by its public half: the signature goes to stdout.
        signed = subprocess.run(sshbed.as_user(other, ["ssh-keygen", "-Y", "sign", "-n", "file", "-f", str(pub)]),
                                env=env, input="not theirs\n", capture_output=True, text=True, timeout=60)
    assert (theirs.returncode, theirs.stdout.strip()) == (1, "The agent has no identities."), theirs
    assert signed.returncode != 0 and "SSH SIGNATURE" not in signed.stdout, signed
    assert not offered(m, mark), m.bed.events(mark)


# --- ssh, finger by finger ---------------------------------------------------------------

def test_ssh_logs_in_after_one_matching_finger_and_the_prompt_names_the_key_and_the_destination(m):
    m.create_key("laptop")
    mark = m.bed.mark()
    pt = m.home.on_pty(m.home.ssh_argv("echo in-as-$USER"))
    result = m.present(pt, ENROLLED)
    res = pt.finish(30)
    screen = flat(res.output)
    assert (result, res.status, scans(m, mark)) == ("verify-match", 0, ["verify-match"]), screen
    assert f"in-as-{m.user.name}" in screen
    # Root's words: the key, the destination as known_hosts names it with its verified host
    # key, the account, and the program chain from ssh.
    assert f"SSH key laptop: log in to {HOST} (" in screen and m.sshd.host_fingerprint in screen, screen
    assert f"as {m.user.name}" in screen and "requested by ssh" in screen, screen
    assert [o for o, _ in m.uses()] == ["created", "signed"], m.uses()


def test_ssh_fails_after_three_wrong_fingers_and_a_finger_only_key_asks_no_password(m):
    m.create_key("laptop")
    mark = m.bed.mark()
    pt = m.home.on_pty(m.home.ssh_argv("echo in-as-$USER"))
    results = [m.present(pt, OTHER) for _ in range(3)]
    asked = pt.expect([PASSWORD_PROMPT, DENIED], timeout=30)
    res = pt.finish(30)
    screen = flat(res.output)
    assert results == ["verify-no-match"] * 3, screen
    assert (asked, res.status, f"in-as-{m.user.name}" in screen) == (1, 255, False), screen
    assert scans(m, mark) == ["verify-no-match"] * 3
    assert m.state_file()["failures"] == "3"
    outcomes = [o for o, _ in m.uses()]
    assert outcomes[0] == "created" and len(outcomes) == 2 and outcomes[1] != "signed", outcomes


def test_a_key_that_allows_the_password_takes_it_after_three_wrong_fingers(m):
    m.create_key("laptop", requirement="biometry-or-password")
    pt = m.home.on_pty(m.home.ssh_argv("echo in-as-$USER"))
    results = [m.present(pt, OTHER) for _ in range(3)]
    pt.expect(PASSWORD_PROMPT, timeout=30)
    pt.send_secret(m.user.password)
    res = pt.finish(30)
    assert results == ["verify-no-match"] * 3
    assert res.status == 0 and f"in-as-{m.user.name}" in res.output, flat(res.output)


def test_after_five_wrong_fingers_the_lockout_holds_across_ssh_sudo_and_the_agent(m):
    line = m.create_key("laptop")
    first = m.home.on_pty(m.home.ssh_argv("true"))
    [m.present(first, OTHER) for _ in range(3)]
    assert first.finish(30).status == 255
    second = m.home.on_pty(m.home.ssh_argv("true"))
    [m.present(second, OTHER) for _ in range(2)]
    assert second.finish(30).status == 255
    assert m.state_file()["failures"] == "5"
    mark = m.bed.mark()
    ssh = m.home.on_pty(m.home.ssh_argv("echo in-as-$USER")).finish(30)
    sudo = m.sudo(answers=["not-the-password"])
    data, pub = m.home.data_file(), m.home.pubkey_file(line)
    agent = m.home.on_pty(m.home.keygen_sign_argv(pub, data)).finish(30)
    facts = {"ssh": ssh.status, "sudo": sudo.status != 0, "sudo_says_locked": LOCKED in sudo.screen,
             "agent_signed": Path(f"{data}.sig").exists(), "scans_offered": offered(m, mark),
             "failures": m.state_file()["failures"]}
    assert facts == {"ssh": 255, "sudo": True, "sudo_says_locked": True, "agent_signed": False,
                     "scans_offered": False, "failures": "5"}, \
        f"{facts}\nssh: {flat(ssh.output)}\nsudo: {sudo.screen}\nagent: {flat(agent.output)}"


# --- forwarding ----------------------------------------------------------------------------

def forwarded_sign(m, line, fingers):
    """``ssh -A`` to the test's sshd, a finger for the login, then ``ssh-keygen -Y sign``
    inside that session with the forwarded agent (``fingers`` more presented for it)."""
    data, pub = m.home.data_file(), m.home.pubkey_file(line)
    mark = m.bed.mark()
    pt = m.home.on_pty(m.home.ssh_argv(" ".join(m.home.keygen_sign_argv(pub, data)), "-A"))
    login = m.present(pt, ENROLLED)
    inside = [m.present(pt, p) for p in fingers]
    res = pt.finish(30)
    return res, [login, *inside], scans(m, mark), data


def test_a_forwarded_request_for_a_key_that_does_not_allow_it_is_refused_without_a_scan(m):
    line = m.create_key("laptop", forwarding=False)
    res, results, seen, data = forwarded_sign(m, line, [])
    screen = flat(res.output)
    facts = {"status": res.status != 0, "results": results, "scans": seen, "signed": Path(f"{data}.sig").exists()}
    assert facts == {"status": True, "results": ["verify-match"], "scans": ["verify-match"], "signed": False}, \
        f"{facts}\n{screen}"
    outcome, what = m.uses()[-1]              # the refusal is recorded, and says why
    assert outcome == "refused-forwarded" and FORWARDED in what, m.uses()


def test_a_forwarded_request_for_a_key_that_allows_it_says_forwarded_through_the_host(m):
    line = m.create_key("laptop", forwarding=True)
    res, results, seen, data = forwarded_sign(m, line, [ENROLLED])
    screen = flat(res.output)
    assert (res.status, results, seen) == (0, ["verify-match"] * 2, ["verify-match"] * 2), screen
    assert FORWARDED in screen and SIGN_A_FILE in screen, screen
    assert m.home.verify_sshsig(line, data).returncode == 0
    outcome, what = m.uses()[-1]
    assert outcome == "signed" and FORWARDED in what, m.uses()


# --- session-bind ---------------------------------------------------------------------------

def test_a_session_bind_with_a_bad_signature_is_refused_before_any_scan(m):
    """And one that verifies is taken, the connection is then never bound again, and a login
    signature for another session than the bound one is refused, before any scan too."""
    line = m.create_key("laptop")
    blob = sshbed.blob_of(line)
    host = sshbed.blob_of(m.sshd.host_key)
    session, other = secrets.token_bytes(32), secrets.token_bytes(32)
    right = sshbed.ed25519_sign(m.sshd.host_private, session)
    wrong = sshbed.ed25519_sign(m.sshd.host_private, secrets.token_bytes(32))
    mark = m.bed.mark()
    bad = AgentClient(m.home)
    try:
        refused = bad.ask("bind", host.hex(), session.hex(), wrong.hex(), 0)
        # On a terminal, a git signature would be asked for with the finger; after a failed
        # bind the connection signs nothing.
        after_bad = bad.ask("sign", blob.hex(), "git", 1)
    finally:
        bad.close()
    good = AgentClient(m.home)
    try:
        bound = good.ask("bind", host.hex(), session.hex(), right.hex(), 0)
        elsewhere = good.ask("signdata", blob.hex(), sshbed.userauth_data(other, m.user.name, blob, host).hex())
        rebound = good.ask("bind", host.hex(), other.hex(), sshbed.ed25519_sign(m.sshd.host_private, other).hex(), 0)
    finally:
        good.close()
    facts = {"bad_bind": refused, "sign_after_bad_bind": after_bad["replies"], "good_bind": bound,
             "rebound": rebound, "userauth_for_another_session": elsewhere, "scan_offered": offered(m, mark),
             "why": "a session-bind on this connection was refused" in m.service_lines()}
    assert facts == {"bad_bind": {"reply": sshbed.FAILURE}, "sign_after_bad_bind": [sshbed.FAILURE],
                     "good_bind": {"reply": sshbed.SUCCESS},
                     "rebound": {"reply": sshbed.FAILURE}, "userauth_for_another_session": {"reply": sshbed.FAILURE},
                     "scan_offered": False, "why": True}, f"{facts}\n{m.service_lines()}"


# --- one connection, many signatures; a peer that leaves --------------------------------------

def fds_and_rss(pid):
    """The helper's open descriptors and resident set (KiB) once it is between requests:
    it answers a signature before it records the use, so a record being written (the key
    store's lock and a ``*.tmp`` file open, for some tens of milliseconds) is waited out,
    at most 5 s."""
    deadline = time.monotonic() + 5
    while True:
        targets = []
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                continue                       # closed meanwhile
        if not any(t.endswith((".tmp", ".lock")) for t in targets) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(l.split()[1]) for l in status.splitlines() if l.startswith("VmRSS:"))
    return len(targets), rss


def test_200_signatures_in_one_connection_inside_the_reuse_window_grow_nothing(m):
    line = m.create_key("laptop", reuse=300)
    data, pub = m.home.data_file(), m.home.pubkey_file(line)
    pt = m.home.on_pty(m.home.keygen_sign_argv(pub, data))
    assert m.present(pt, ENROLLED) == "verify-match"
    first = pt.finish(30)
    assert first.status == 0 and SIGN_A_FILE in flat(first.output), flat(first.output)
    mark = m.bed.mark()
    client = AgentClient(m.home)
    try:
        # The first fifty settle the helper's allocator (its resident set grows over them
        # once; 800 more grew it by 8 KiB when measured): the next 150 must grow nothing.
        warm = client.ask("sign", sshbed.blob_of(line).hex(), "file", 50)
        helpers = m.serving_helpers()
        assert len(helpers) == 1, helpers
        before = fds_and_rss(helpers[0])
        rest = client.ask("sign", sshbed.blob_of(line).hex(), "file", 150, timeout=120)
        after = fds_and_rss(helpers[0])
    finally:
        client.close()
    print(f"serving helper {helpers[0]}: descriptors {before[0]} -> {after[0]}, "
          f"resident {before[1]} -> {after[1]} KiB over signatures 51-200")
    assert (warm["ok"], rest["ok"], offered(m, mark)) == (50, 150, False), (warm, rest)
    assert after[0] == before[0], f"descriptors {before[0]} -> {after[0]}"
    assert after[1] - before[1] <= 64, f"resident set {before[1]} -> {after[1]} KiB over 150 signatures"


def test_a_peer_that_exits_mid_request_gets_nothing(m):
    line = m.create_key("laptop", reuse=300)
    client = AgentClient(m.home)
    try:
        client.send("sign", sshbed.blob_of(line).hex(), "file", 1)
        client.pt.expect(ASK_FINGER, timeout=20)
        m.bed.reader.wait_armed(timeout=20)
        helpers = m.serving_helpers()
        os.kill(client.pid, signal.SIGKILL)
    finally:
        client.close()
    deadline = time.monotonic() + 15
    while (set(helpers) & set(m.serving_helpers()) or m.bed.reader.finger_needed()) and time.monotonic() < deadline:
        time.sleep(0.1)
    facts = {"helper_left": sorted(set(helpers) & set(m.serving_helpers())),
             "reader_waits": m.bed.reader.finger_needed(), "failures": m.state_file()["failures"],
             "signed": [w for o, w in m.uses() if o == "signed"]}
    assert facts == {"helper_left": [], "reader_waits": False, "failures": "0", "signed": []}, facts
    # No window was opened by the abandoned request: the next one asks for the finger again.
    data, pub = m.home.data_file(), m.home.pubkey_file(line)
    pt = m.home.on_pty(m.home.keygen_sign_argv(pub, data))
    assert m.present(pt, ENROLLED) == "verify-match"
    assert pt.finish(30).status == 0
