"""Rights: Apple's LARightStore, LAPersistedRight, LASecret and LAPrivateKey (the
LocalAuthentication library) used by an ordinary program, as an ordinary user, against the
real fprintd and the virtual reader, through localauthd (the test's own, appbed.app_world) to
the helper's `mode=right` (docs/PROTOCOL.md, "Rights").

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_rights.py

The program is the example Examples/SecretVault (`secret-vault`), copied into a root-owned
directory where the user can run it (appbed.AppWorld); each `run` is a new process, so a
secret read back was kept across a restart. The rights live in root's state directory
(`rights/UID/`), which the user cannot read.

A program without a terminal gets the desktop's polkit dialog (the product's action
org.localauth.right.authorize): the bed's real polkitd (with the action added and, since no
logind runs here to call the session active, a rule that gives it the auth_self the action
gives an active session), polkit_dialog.py as the agent registered for the program (as
GNOME Shell is for a program of its session), the setuid polkit-agent-helper-1 and
pam.d/polkit-1 as shipped, in a desktop.Desktop namespace sharing root's state directory
with the service's helper.
"""
import os
import re
import shutil
import subprocess
import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from appbed import ENROLLED, OTHER, REPO, app_binary, app_world  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)
from servicebed import Service, namespace_prefix  # noqa: E402
from desktop import Desktop  # noqa: E402
from polkit_agents import dialog  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

DOMAIN = "com.apple.LocalAuthentication"
SECRET = "correct horse battery staple"
ACTION = "org.localauth.right.authorize"
POLICY = REPO / "polkit" / "org.localauth.right.policy"
# What the action's allow_active gives a local active session; polkitd here sees no session.
AUTH_SELF = f"""polkit.addRule(function(action, subject) {{
    if (action.id == "{ACTION}") return polkit.Result.AUTH_SELF;
}});
"""


@pytest.fixture(scope="module")
def vault():
    return app_binary("secret-vault", REPO / "Examples" / "SecretVault")


@pytest.fixture
def world(inst, bed, syslog, vault):
    with app_world(inst, bed, syslog, vault, "la-rt-") as w:
        yield w


@pytest.fixture
def dialog_world(inst, bed_factory, syslog, vault):
    """A world whose programs have no terminal: see the module docstring."""
    yield from desktop_world(inst, bed_factory(polkit_rules=AUTH_SELF, polkit_actions=[POLICY]), syslog, vault)


@pytest.fixture
def yes_world(inst, bed_factory, syslog, vault):
    """As dialog_world, with a rule that says yes to the action without any prompt."""
    rule = AUTH_SELF.replace("polkit.Result.AUTH_SELF", "polkit.Result.YES")
    yield from desktop_world(inst, bed_factory(polkit_rules=rule, polkit_actions=[POLICY]), syslog, vault)


def desktop_world(inst, bed, syslog, vault):
    with app_world(inst, bed, syslog, vault, "la-rd-") as world:
        world.desktop = Desktop(inst, bed, syslog)
        try:
            world.desktop.pam_file("polkit-1", (REPO / "pam.d" / "polkit-1").read_text())
            # One state directory and bus for the service's helper and root's (the dialog's).
            world.desktop.configure(dbus_address=bed.address, password_after_reboot="no",
                                    password_after_idle="0", password_stale="0")
            world.state = world.desktop.state
            yield world
        finally:
            world.desktop.close()


def without_terminal(world, *args, **kw):
    """The vault run by polkit_dialog.py (no terminal, DISPLAY=:0), the agent registered
    for it unless ``register=False``; ``fingers`` presented and ``answers`` typed in the dialog."""
    return dialog(world, command=[str(world.app), *args],
                  env={"LOCALAUTH_SERVICE": str(world.inst.service_socket)}, **kw)


def subject_error(run):
    status, lines = run.subject
    m = [re.match(r"ERROR code=(-?\d+) domain=(\S+)", l) for l in lines]
    found = [x for x in m if x]
    assert status == 1 and len(found) == 1 and found[0].group(2) == DOMAIN, run
    return int(found[0].group(1))


def error_code(run):
    m = re.search(r"^ERROR code=(-?\d+) domain=(\S+)", run.output.replace("\r", ""), re.M)
    assert m, run.output
    assert m.group(2) == DOMAIN, run.output
    return int(m.group(1))


def line(run, key):
    m = re.search(rf"^{key} (.*?)\r?$", run.output, re.M)
    return m.group(1) if m else None


def saved(world, name="notes", requirement="biometry", secret=SECRET):
    run = world.run("save", name, secret, requirement)
    assert run.status == 0 and f"OK saved {name}" in run.output, run.output
    assert run.verify_starts == []                      # saving asks nobody
    return run


def rights_dir(world) -> Path:
    return world.state / "rights" / str(world.user.uid)


# --- the main path ------------------------------------------------------------------------

def test_the_secret_comes_back_after_a_restart_only_with_the_enrolled_finger(world):
    saved(world)
    # Root's directory, root's files: the user cannot list or read them.
    d = rights_dir(world)
    st = d.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o700)
    records = list(d.glob("*.right"))
    assert len(records) == 1 and (records[0].stat().st_mode & 0o777) == 0o600
    ls = subprocess.run(system.as_user(world.user, ["ls", str(d)]), capture_output=True, text=True)
    assert ls.returncode != 0 and "Permission denied" in ls.stderr
    cat = subprocess.run(system.as_user(world.user, ["cat", str(records[0])]), capture_output=True, text=True)
    assert cat.returncode != 0 and "Permission denied" in cat.stderr
    # A new process: the finger, then the bytes.
    run = world.run("open", "notes", fingers=[ENROLLED])
    assert run.status == 0 and line(run, "SECRET") == SECRET, run.output
    assert len(run.verify_starts) == 1
    assert "Open the vault notes" in run.output                      # the reason, on its terminal
    assert re.search(r"(Place|Swipe) your right index finger", run.output)
    logs = run.messages("localauth-helper")
    assert any("right authorize notes: success" in m and "program " + str(world.app) in m for m in logs), logs


def test_the_completion_handler_forms_do_the_same(world):
    saved(world)
    run = world.run("open-handlers", "notes", fingers=[ENROLLED])
    assert run.status == 0 and line(run, "SECRET") == SECRET and len(run.verify_starts) == 1, run.output
    assert "OK can authorize" in world.run("check", "notes").output


def test_without_authorizing_or_in_another_process_there_are_no_bytes(world):
    saved(world)
    peek = world.run("peek", "notes")
    assert error_code(peek) == -1004 and SECRET not in peek.output and peek.verify_starts == []   # notInteractive
    # Authorized in one process (which deauthorizes on its way out, as the example does)...
    assert line(world.run("open", "notes", fingers=[ENROLLED]), "SECRET") == SECRET
    # ...gives another process nothing.
    again = world.run("peek", "notes")
    assert error_code(again) == -1004 and SECRET not in again.output


def test_another_right_object_of_the_same_process_gets_no_bytes_until_it_authorizes(world):
    """The authorization returns a capability, which only the authorized right object
    presents: another object for the same identifier, in the same process (another part of
    the program, a plugin asking through the library), gets notInteractive, as on Apple's
    platforms; the authorized one reads the secret in the same process right after."""
    saved(world)
    run = world.run("open-beside", "notes", fingers=[ENROLLED])
    assert run.status == 0 and line(run, "SECRET") == SECRET and len(run.verify_starts) == 1, run.output
    assert line(run, "BESIDE") == "code=-1004" and run.output.count(SECRET) == 1, run.output
    logs = run.messages("localauth-helper")
    assert any("right secret notes: notInteractive" in m for m in logs), logs


def test_a_wrong_finger_gets_authentication_failed_and_no_bytes(world):
    saved(world)
    run = world.run("open", "notes", fingers=[OTHER] * 3)
    assert error_code(run) == -1 and SECRET not in run.output, run.output     # authenticationFailed
    assert len(run.verify_starts) == 3
    assert world.state_values()["failures"] == "3"                           # counted as under sudo


def test_a_locked_out_user_gets_biometry_lockout_and_no_bytes(world):
    saved(world)
    world.configure(lockout_threshold="1")
    first = world.run("open", "notes", fingers=[OTHER])
    assert SECRET not in first.output
    locked = world.run("open", "notes")          # no scan is offered: nothing to present
    assert error_code(locked) == -8 and SECRET not in locked.output, locked.output   # biometryLockout
    assert locked.verify_starts == []


def test_a_different_program_finds_nothing_and_gets_no_bytes(world):
    saved(world)
    other = world.app.parent / "other-vault"
    shutil.copy2(world.app, other)
    other.chmod(0o755)
    world.app, mine = other, world.app
    try:
        run = world.run("open", "notes")
        assert error_code(run) == -10 and SECRET not in run.output, run.output   # invalidContext: not found
        assert run.verify_starts == []
    finally:
        world.app = mine
    # The saver still has it.
    assert line(world.run("open", "notes", fingers=[ENROLLED]), "SECRET") == SECRET


def test_a_program_the_user_could_replace_cannot_hold_rights(world):
    mine = world.app.parent / "user-vault"
    shutil.copy2(world.app, mine)
    os.chown(mine, world.user.uid, world.user.gid)
    saved_app, world.app = world.app, mine
    try:
        run = world.run("save", "notes", SECRET, "biometry")
        assert error_code(run) == -6, run.output                                 # biometryNotAvailable
        assert "must be owned by root" in run.output
    finally:
        world.app = saved_app
    assert not list(rights_dir(world).glob("*.right"))


def test_a_remote_caller_gets_not_interactive_and_no_bytes(world, bed):
    from test_never_remote import FakeLogind
    saved(world)
    logind = FakeLogind(bed, world.user)
    service = None
    try:
        logind.session(REMOTE=1, REMOTE_HOST="203.0.113.9", TYPE="tty", ACTIVE=1)
        logind.user([logind.id])
        # Root's side is the service's helper: it reads the caller's session where the
        # machine's localauthd would, so this service sees the fake /run/systemd too.
        world.service.stop()
        service = Service(world.inst, world.syslog, socket_path=world.inst.service_socket,
                          prefix=[*logind.prefix(), *namespace_prefix(world.syslog)])
        into_scope = ["sh", "-c", f'echo $$ > {logind.scope}/cgroup.procs && exec "$@"', "sh"]
        mark, log_mark = world.bed.mark(), world.syslog.mark()
        env = world.inst.env()
        pt = system.run_on_pty([str(world.app), "open", "notes"], env=env, user=world.user,
                               prefix=[*logind.prefix(), *into_scope, *namespace_prefix(world.syslog)],
                               timeout=60)
        res = pt.finish(timeout=60)
    finally:
        if service is not None:
            service.stop()
        logind.close()
    assert "ERROR code=-1004" in res.output and SECRET not in res.output, res.output   # notInteractive
    assert not [e for e in world.bed.events(mark) if e.name == "VerifyFingerSelected"]


def test_a_program_without_a_terminal_gets_not_interactive_and_no_bytes(world):
    saved(world)
    mark = world.bed.mark()
    env = world.inst.env()
    # Its own session (no controlling terminal), stdin from /dev/null, no display named.
    run = subprocess.run(["setsid", "--wait", *system.as_user(world.user, [str(world.app), "open", "notes"])],
                         env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "ERROR code=-1004" in run.stdout and SECRET not in run.stdout, run.stdout
    assert not [e for e in world.bed.events(mark) if e.name == "VerifyFingerSelected"]


# --- the key ------------------------------------------------------------------------------

def test_a_signature_verifies_with_the_exported_public_key(world):
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    public_at_save = line(saved(world), "PUBLIC")
    message = "transfer 10 coins to the vault"
    run = world.run("sign", "notes", message, fingers=[ENROLLED])
    assert run.status == 0, run.output
    public, signature = line(run, "PUBLIC"), line(run, "SIGNATURE")
    assert public == public_at_save and len(public) == 130 and public.startswith("04")   # X9.63 uncompressed
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), bytes.fromhex(public))
    key.verify(bytes.fromhex(signature), message.encode(), ec.ECDSA(hashes.SHA256()))   # DER, SHA-256
    with pytest.raises(InvalidSignature):
        key.verify(bytes.fromhex(signature), b"transfer 99 coins", ec.ECDSA(hashes.SHA256()))
    # The private key never leaves the root side: only the public point is in the output.
    record = next(rights_dir(world).glob("*.right")).read_text()
    private = re.search(r"^private_key=([0-9a-f]{64})$", record, re.M).group(1)
    assert private not in run.output


def test_signing_without_the_finger_gives_no_signature(world):
    saved(world)
    run = world.run("sign", "notes", "hello", fingers=[OTHER] * 3)
    assert error_code(run) == -1 and line(run, "SIGNATURE") is None


# --- requirements and the store's state ---------------------------------------------------

def test_a_current_set_right_is_invalidated_when_a_finger_is_added(world):
    saved(world, requirement="current")
    assert line(world.run("open", "notes", fingers=[ENROLLED]), "SECRET") == SECRET
    world.bed.enroll(world.user.name, "left-thumb", "f2")
    run = world.run("open", "notes")
    assert error_code(run) == -10 and SECRET not in run.output and run.verify_starts == [], run.output
    assert "changed since the right was saved" in run.output
    # Void for good, so it can be replaced or removed without a finger that could never
    # authorize it again (it would otherwise count against the user's limit until root acts).
    assert "OK saved notes" in world.run("save", "notes", "new", "current").output
    world.bed.enroll(world.user.name, "left-index-finger", "f3")
    gone = world.run("remove-all")
    assert "OK removed all" in gone.output and gone.verify_starts == [], gone.output
    assert not list(rights_dir(world).glob("*.right"))


def test_the_password_opens_only_a_right_that_allows_it(world):
    saved(world, name="any", requirement="passcode")
    run = world.run("open", "any", fingers=[OTHER] * 3, password=world.user.password)
    assert line(run, "SECRET") == SECRET, run.output
    saved(world, name="finger", requirement="biometry")
    no = world.run("open", "finger", fingers=[OTHER] * 3)
    assert error_code(no) == -1 and "Password: " not in no.output


def test_a_damaged_record_is_a_clear_error_and_is_kept(world):
    saved(world)
    record = next(rights_dir(world).glob("*.right"))
    record.write_text("version=1\nsecret=zz\n")
    run = world.run("open", "notes")
    assert error_code(run) == -6 and "damaged" in run.output and run.verify_starts == [], run.output
    assert record.read_text() == "version=1\nsecret=zz\n"
    # Saving again keeps the damaged bytes aside.
    saved(world)
    assert Path(str(record) + ".damaged").read_text() == "version=1\nsecret=zz\n"
    assert line(world.run("open", "notes", fingers=[ENROLLED]), "SECRET") == SECRET


def test_the_log_names_the_right_as_one_word_and_never_shows_the_secret(world):
    run = saved(world, name="my notes=x y")
    opened = world.run("open", "my notes=x y", fingers=[ENROLLED])
    assert line(opened, "SECRET") == SECRET
    logs = run.messages("localauth-helper") + opened.messages("localauth-helper")
    assert any("right save my?notes?x?y: success" in m for m in logs), logs
    assert any("right secret my?notes?x?y: success (secret given)" in m for m in logs), logs
    assert not any(SECRET in m or SECRET.encode().hex() in m for m in logs), logs


def test_removing_rights_needs_the_finger_as_reading_them_does(world):
    saved(world, name="a")
    saved(world, name="b")
    removed = world.run("remove", "a", fingers=[ENROLLED])
    assert "OK removed a" in removed.output and len(removed.verify_starts) == 1, removed.output
    assert error_code(world.run("open", "a")) == -10
    assert error_code(world.run("remove", "a")) == -10
    # Every right at once, without authorizing b in that process: refused, nothing removed.
    bare = world.run("remove-all")
    assert error_code(bare) == -1004 and bare.verify_starts == [], bare.output   # notInteractive
    assert any("rights are not authorized for this process" in m and "nothing was removed" in m
               for m in bare.messages("localauth-helper")), bare.logs
    assert "OK can authorize" in world.run("check", "b").output
    assert "OK removed all" in world.run("remove-all", "b", fingers=[ENROLLED]).output
    assert error_code(world.run("check", "b")) == -10


def test_replacing_a_right_needs_the_finger_and_without_it_the_secret_stays(world):
    saved(world)
    again = world.run("save", "notes", "a secret someone else knows", "biometry")
    assert error_code(again) == -1004 and again.verify_starts == [], again.output
    assert any("authorize it before replacing it" in m for m in again.messages("localauth-helper")), again.logs
    assert line(world.run("open", "notes", fingers=[ENROLLED]), "SECRET") == SECRET


# A process forks a child that waits, then becomes the real program (exec keeps its pid and
# start time); once the owner authorized a right there, the child -- whose parent is now
# the authorized program -- runs the program's own code to read the secret.
FORK_THEN_EXEC = r"""
import os, sys
app, go = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    with open(go) as f:
        f.read()
    os.execv(app, [app, "peek", "notes"])
os.execv(app, [app, "hold", "notes"])
"""


def attack_on_a_held_right(world, name, script_text, *args, child_says):
    """``script_text`` run as the user on a terminal (argv: the program, a FIFO, ``args``):
    it ends by exec'ing the program's `hold notes`, and its child waits on the FIFO. The
    owner's finger authorizes the right; then the child is let go and its answer, the
    first match of ``child_says``, is read; the program lets the right go. Returns that
    match's first group and the whole output."""
    saved(world)
    script = world.dir / name
    script.write_text(script_text)
    script.chmod(0o644)
    go = world.dir / "go"
    os.mkfifo(go, 0o600)
    os.chown(go, world.user.uid, world.user.gid)
    pt = system.run_on_pty(["/usr/bin/python3", str(script), str(world.app), str(go), *args],
                           env=world.inst.env(), user=world.user,
                           prefix=namespace_prefix(world.syslog), timeout=60)
    try:
        injection = world.bed.inject_async([f"SCAN {ENROLLED}"])
        pt.expect("AUTHORIZED notes", timeout=40)
        injection.wait(20)
        with open(go, "w") as f:                   # the child goes on
            f.write("go")
        pt.expect(child_says, timeout=30)
        said = pt.child.match.group(1)
        pt.sendline("")                            # the program lets its right go
        res = pt.finish(timeout=30)
    finally:
        pt.kill()
    return said, res.output


def test_a_child_of_the_authorized_program_gets_no_bytes(world):
    code, output = attack_on_a_held_right(world, "fork-then-exec.py", FORK_THEN_EXEC,
                                          child_says=r"ERROR code=(-?\d+)")
    assert int(code) == -1004 and SECRET not in output, output   # notInteractive: not this process
    logs = [m for i, m in world.syslog.lines if i == "localauth-helper"]
    assert any(f"program {world.app} " in m and "right secret notes: notInteractive" in m for m in logs), logs


# The same with the connection: a process connects to localauthd, forks a child that keeps
# the connection, then becomes the real program; once the owner authorized a right there,
# the child asks for the secret on the connection its parent opened (whose peer, for the
# kernel, is the program now).
HANDED_CONNECTION = r"""
import os, socket, struct, sys
app, go, sock_path, user = sys.argv[1:5]
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sock_path)
if os.fork() == 0:
    with open(go) as f:
        f.read()
    keys = dict(version="1", mode="right", op="secret", identifier=b"notes".hex(), user=user,
                service="forged", tty="", rhost="", ruser="", silent="0", locale="",
                caller_uid=str(os.getuid()), pid=str(os.getppid()), display="0", stdin_tty="1")
    payload = "\n".join(f"{k}={v}" for k, v in keys.items()).encode()
    conn.sendall(struct.pack(">I", len(payload) + 1) + b"Q" + payload)
    conn.shutdown(socket.SHUT_WR)
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    while len(data) >= 4:
        (n,) = struct.unpack(">I", data[:4])
        if data[4:5] == b"R":
            print("CHILD " + data[5:4 + n].decode().replace("\n", " "), flush=True)
        data = data[4 + n:]
    sys.exit(0)
conn.close()
os.execv(app, [app, "hold", "notes"])
"""


def test_a_connection_opened_before_the_program_ran_carries_no_grant(world):
    child, output = attack_on_a_held_right(world, "handed-connection.py", HANDED_CONNECTION,
                                           str(world.inst.service_socket), world.user.name,
                                           child_says=r"CHILD ([^\r\n]*)")
    assert "name=notInteractive" in child and "secret=" not in child, child
    assert SECRET.encode().hex() not in output and SECRET not in output, output


def forged_save(world, program_user, sandbox=()) -> dict:
    """A right saved by hand through the service, from a Python program of the user's own
    (socket_client.py): the caller's executable is the interpreter. ``sandbox``: a command
    line that runs it (bubblewrap's)."""
    client = Path(__file__).resolve().parent / "socket_client.py"
    keys = dict(version="1", mode="right", op="save", identifier=b"notes".hex(), requirement="biometry",
                secret=SECRET.encode().hex(), user=world.user.name, service="forged", tty="", rhost="",
                ruser="", silent="0", locale="", caller_uid=str(world.user.uid), pid="1", display="0",
                stdin_tty="0")
    payload = "\n".join(f"{k}={v}" for k, v in keys.items()).encode()
    data = struct.pack(">I", len(payload) + 1) + b"Q" + payload
    out = subprocess.run(system.as_user(program_user, [*sandbox, "/usr/bin/python3", str(client),
                                                       str(world.inst.service_socket)]),
                         input=data, capture_output=True, timeout=60).stdout
    frames = []
    while len(out) >= 4:
        (length,) = struct.unpack(">I", out[:4])
        frames.append((chr(out[4]), out[5:4 + length].decode()))
        out = out[4 + length:]
    results = [p for k, p in frames if k == "R"]
    assert len(results) == 1, frames
    return dict(l.split("=", 1) for l in results[0].split("\n"))


def test_an_interpreter_cannot_hold_rights_unless_the_administrator_allows_it(world):
    r = forged_save(world, world.user)
    assert (r["code"], r["name"]) == ("-6", "biometryNotAvailable"), r
    assert "is an interpreter or a loader" in r["cause"] and "rights_interpreters" in r["cause"], r
    assert not list(rights_dir(world).glob("*.right"))
    world.configure(rights_interpreters="yes")
    assert forged_save(world, world.user)["name"] == "success"
    assert len(list(rights_dir(world).glob("*.right"))) == 1


def test_a_user_cannot_fill_roots_disk_with_rights(world):
    """Any user can save rights as root's files: past the limit a save is refused, and
    nothing already saved is lost."""
    saved(world)
    (first,) = rights_dir(world).glob("*.right")
    for n in range(63):                      # 64 records in all: the limit
        shutil.copy2(first, first.with_name(f"{n:064x}.right"))
    full = world.run("save", "one-more", SECRET, "biometry")
    assert error_code(full) == -6, full.output                               # biometryNotAvailable
    assert any("would have 65 rights, more than 64" in m for m in full.messages("localauth-helper")), full.logs
    assert len(list(rights_dir(world).glob("*.right"))) == 64
    assert line(world.run("open", "notes", fingers=[ENROLLED]), "SECRET") == SECRET


# --- a program without a terminal: the desktop's polkit dialog -----------------------------

def test_without_a_terminal_the_dialog_asks_and_the_enrolled_finger_gives_the_secret(dialog_world, syslog):
    world = dialog_world
    saved(world)
    mark = syslog.mark()
    run = without_terminal(world, "open", "notes", fingers=[ENROLLED])
    status, out = run.subject
    assert status == 0 and f"SECRET {SECRET}" in out, run
    # polkitd asked the agent for the product's action, with the program's reason shown.
    [begin] = run.texts("BEGIN")
    program = re.escape(str(world.app.resolve()))
    assert re.fullmatch(rf"{ACTION} \u201cOpen the vault notes\u201d \u2014 asked by {program} \(pid \d+\)",
                        begin), run
    assert run.texts("INFO")[:1] and run.texts("HELPER") == ["SUCCESS"], run
    assert len(run.verify_starts) == 1
    assert any(e.name == "VerifyStatus" and e.args[0] == "verify-match" for e in run.bed_events)
    logs = [m for i, m in syslog.lines[mark:] if i == "localauth-helper"]
    assert any("right authorize notes: success (authorized (fingerprint))" in m for m in logs), logs


def test_without_a_terminal_a_wrong_finger_then_cancel_gives_no_bytes(dialog_world):
    world = dialog_world
    saved(world)
    run = without_terminal(world, "open", "notes", fingers=[OTHER] * 3)
    assert subject_error(run) == -1 and SECRET not in " ".join(run.subject[1]), run   # authenticationFailed
    assert run.texts("HELPER") == ["FAILURE"] and len(run.verify_starts) == 3
    assert world.state_values()["failures"] == "3"                   # counted as under sudo


def test_the_dialog_dismissed_gives_user_cancel_and_no_bytes(dialog_world):
    world = dialog_world
    saved(world)
    run = without_terminal(world, "open", "notes", fingers=[OTHER] * 3, dismiss=True)
    assert subject_error(run) == -2 and SECRET not in " ".join(run.subject[1]), run   # userCancel
    assert run.texts("HELPER") == ["FAILURE"], run


def test_the_password_in_the_dialog_opens_only_a_right_that_allows_it(dialog_world, syslog):
    world = dialog_world
    saved(world, name="finger", requirement="biometry")
    mark = syslog.mark()
    no = without_terminal(world, "open", "finger", fingers=[OTHER] * 3, answers=[world.user.password])
    # polkit said yes (the stack took the password), the right needs the finger: no bytes.
    assert no.texts("HELPER") == ["SUCCESS"], no
    assert subject_error(no) == -1 and SECRET not in " ".join(no.subject[1]), no
    logs = [m for i, m in syslog.lines[mark:] if i == "localauth-helper"]
    assert any("this right needs the finger" in m for m in logs), logs
    saved(world, name="any", requirement="default")
    yes = without_terminal(world, "open", "any", fingers=[OTHER] * 3, answers=[world.user.password])
    status, out = yes.subject
    assert status == 0 and f"SECRET {SECRET}" in out, yes


def test_without_a_terminal_and_no_agent_there_is_a_clear_error_and_no_bytes(dialog_world, syslog):
    world = dialog_world
    saved(world)
    mark = syslog.mark()
    run = without_terminal(world, "open", "notes", register=False)
    assert subject_error(run) == -1004 and SECRET not in " ".join(run.subject[1]), run   # notInteractive
    assert run.texts("BEGIN") == [] and run.verify_starts == []
    logs = [m for i, m in syslog.lines[mark:] if i == "localauth-helper"]
    assert any("no polkit authentication agent is registered for it" in m for m in logs), logs


def test_polkits_yes_without_a_finger_or_password_gives_no_bytes(yes_world, syslog):
    world = yes_world
    saved(world, requirement="default")
    mark = syslog.mark()
    run = without_terminal(world, "open", "notes")
    assert run.texts("BEGIN") == []                      # polkitd said yes with no dialog
    assert subject_error(run) == -1 and SECRET not in " ".join(run.subject[1]), run
    logs = [m for i, m in syslog.lines[mark:] if i == "localauth-helper"]
    assert any("no finger matched and no password was entered" in m for m in logs), logs


def test_the_dialog_is_closed_when_the_program_goes_away(dialog_world, syslog):
    world = dialog_world
    saved(world)
    mark = syslog.mark()
    run = without_terminal(world, "open", "notes", kill_at_info=True)
    status, out = run.subject
    assert status == -9 and SECRET not in " ".join(out), run            # killed mid-dialog
    # The root side cancelled its CheckAuthorization: polkitd told the agent to close.
    assert "CANCELLED" in [kind for kind, _ in run.events], run
    assert run.texts("HELPER") == ["FAILURE"] and run.verify_starts[:1], run
    # Its last line comes once CancelCheckAuthorization returned, after the agent heard
    # of it (and the test may have moved on): waited for, not raced.
    last = syslog.wait_for(lambda i, m: i == "localauth-helper" and "right authorize notes:" in m,
                           timeout=30, since=mark)
    assert last and "right authorize notes: appCancel" in last[1], syslog.lines[mark:]
    logs = [m for i, m in syslog.lines[mark:] if i == "localauth-helper"]
    assert any("polkit dialog cancelled: the program went away" in m for m in logs), logs
    assert list((world.state / "dialogs").iterdir()) == []            # its ticket went with it


def sudo_with_the_finger(world):
    """``sudo -k true`` as the dialog's user, in the same desktop (root's state directory
    and the shipped sudo stack), passed with the enrolled finger."""
    world.desktop.pam_file("sudo", (REPO / "pam.d" / "sudo").read_text())
    world.desktop.sudoers(world.user)
    pt = world.desktop.run_on_pty(["sudo", "-k", "true"], user=world.user, timeout=60)
    scan = world.bed.scan_when_ready(ENROLLED, timeout=30)
    assert scan.wait(40) == ["verify-match"]
    res = pt.finish(timeout=40)
    assert res.status == 0, res.output


def test_a_same_user_match_elsewhere_during_a_rights_dialog_does_not_count_for_it(dialog_world, syslog):
    """The dialog for a right that needs the finger is open; three wrong fingers in it, and
    at its password prompt the same user passes `sudo` with the enrolled finger. The dialog
    is then passed with the password: polkit says yes, and the finger under sudo must not
    be taken for this dialog's."""
    world = dialog_world
    saved(world, requirement="biometry")
    mark = syslog.mark()
    run = without_terminal(world, "open", "notes", fingers=[OTHER] * 3, answers=[world.user.password],
                           at_prompt=lambda: sudo_with_the_finger(world))
    assert run.texts("HELPER") == ["SUCCESS"], run                    # polkit's yes
    status, out = run.subject
    assert SECRET not in " ".join(out), f"the finger under sudo opened the right: status {status}, {out}"
    assert subject_error(run) == -1, run                               # authenticationFailed
    logs = [m for i, m in syslog.lines[mark:] if i == "localauth-helper"]
    assert any("this right needs the finger" in m for m in logs), logs
    assert list((world.state / "dialogs").iterdir()) == []            # the ticket went with the dialog


def test_a_ticket_whose_dialog_ended_is_removed_and_the_next_dialog_works(dialog_world):
    world = dialog_world
    saved(world)
    dialogs = world.state / "dialogs"
    dialogs.mkdir(mode=0o700)
    # Left by a dialog that was killed: its process (pid 2^22, above any pid_max) is gone.
    stale = dialogs / ("ticket-" + "0" * 32)
    stale.write_text(f"ticket 1\nuser {world.user.name}\ncreated 1\ndialog 4194304 1\n")
    stale.chmod(0o600)
    run = without_terminal(world, "open", "notes", fingers=[ENROLLED])
    status, out = run.subject
    assert status == 0 and f"SECRET {SECRET}" in out, run
    assert list(dialogs.iterdir()) == []


# --- a Flatpak app: bound to its app id and its deployed file ------------------------------
#
# No Flatpak runtime is installed here; the sandbox is built as Flatpak builds it, with
# bubblewrap (the kernel's mount and user namespaces, as the user): the app's deployment in
# the system installation mounted at /app, and /.flatpak-info naming the app.

FLATPAK_APPS = Path("/var/lib/flatpak/app")


class FlatpakDeployment:
    """The vault deployed as a system-wide Flatpak app of a unique id (root's files, as
    `flatpak install` leaves them); removed with every directory this made."""

    def __init__(self, world):
        self.id = f"org.localauth.Vault_{os.urandom(3).hex()}"
        self.made = [p for p in (FLATPAK_APPS.parent, FLATPAK_APPS) if not p.exists()]
        top = FLATPAK_APPS / self.id
        self.files = top / "x86_64" / "stable" / os.urandom(8).hex() / "files"
        try:
            (self.files / "bin").mkdir(parents=True)
            # Root's and 0755, as flatpak makes them: only the directories made here are set
            # (an existing /var/lib/flatpak is left as it is).
            for d in self.made + [top, top / "x86_64", top / "x86_64" / "stable", self.files.parent,
                                  self.files, self.files / "bin"]:
                d.chmod(0o755)
        except BaseException:
            self.remove()
            raise
        self.program = self.files / "bin" / "secret-vault"
        shutil.copy2(world.app, self.program)
        self.program.chmod(0o755)
        self.info = world.dir / f"{self.id}.flatpak-info"
        self.info.write_text(f"[Application]\nname={self.id}\nruntime=runtime/org.localauth.Platform/x86_64/1\n")
        self.info.chmod(0o644)

    def remove(self):
        shutil.rmtree(FLATPAK_APPS / self.id, ignore_errors=True)
        for d in reversed(self.made):
            try:
                d.rmdir()
            except OSError:
                pass


def sandbox(world, app_files: Path, info) -> list:
    """A bubblewrap command line shaped like Flatpak's sandbox: /usr and /etc read-only,
    /app from ``app_files``, ``info`` (or none) as /.flatpak-info, the service's socket
    directory shared as the documentation tells Flatpak apps to, and this test directory
    read-only (for socket_client.py)."""
    sock_dir = str(world.inst.service_socket.parent)
    here = str(Path(__file__).resolve().parent)
    argv = ["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
            "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--ro-bind", str(app_files), "/app", "--bind", sock_dir, sock_dir, "--ro-bind", here, here]
    if info is not None:
        argv += ["--ro-bind", str(info), "/.flatpak-info"]
    return argv + ["--"]


def in_sandbox(world, app_files: Path, info, *args, fingers=()):
    """The vault as the user inside ``sandbox``."""
    argv = sandbox(world, app_files, info) + ["/app/bin/secret-vault", *args]
    mark, log_mark = world.bed.mark(), world.syslog.mark()
    pt = system.run_on_pty(argv, env=world.inst.env(), user=world.user,
                           prefix=namespace_prefix(world.syslog), timeout=60)
    injection = world.bed.inject_async([f"SCAN {p}" for p in fingers]) if fingers else None
    res = pt.finish(timeout=60)
    if injection:
        injection.wait(20)
    helper = [m for i, m in world.syslog.lines[log_mark:] if i == "localauth-helper"]
    return res, helper


def test_a_flatpak_app_holds_rights_bound_to_its_app_id_and_deployed_file(world):
    """In the sandbox the vault saves and opens its right, which is bound to
    flatpak:APPID:/app/bin/secret-vault; the same file outside the sandbox finds nothing; a
    sandbox naming the app over other files at /app, and one with no /.flatpak-info, hold
    no rights. (Before this binding, a sandboxed program could not hold rights at all: its
    /app path means nothing in root's view.)"""
    app = FlatpakDeployment(world)
    try:
        res, helper = in_sandbox(world, app.files, app.info, "save", "notes", SECRET, "biometry")
        assert res.status == 0 and "OK saved notes" in res.output, (res.output, helper)
        identity = f"flatpak:{app.id}:/app/bin/secret-vault"
        assert any(f"program {identity} " in m and "right save notes: success" in m for m in helper), helper
        res, helper = in_sandbox(world, app.files, app.info, "open", "notes", fingers=[ENROLLED])
        assert res.status == 0 and f"SECRET {SECRET}" in res.output, (res.output, helper)
        # bubblewrap sets no_new_privs, as Flatpak's sandbox does: the secret went to a
        # process that no setuid program could have served.
        nnp = system.run_on_pty(sandbox(world, app.files, app.info) + ["/usr/bin/grep", "NoNewPrivs", "/proc/self/status"],
                                env=world.inst.env(), user=world.user, prefix=namespace_prefix(world.syslog),
                                timeout=60).finish(timeout=60)
        assert re.search(r"NoNewPrivs:\s+1", nnp.output), nnp.output
        # The same file run outside the sandbox is another program: it finds nothing.
        outside = system.run_on_pty([str(app.program), "peek", "notes"], env=world.inst.env(),
                                    user=world.user, prefix=namespace_prefix(world.syslog)).finish(timeout=60)
        assert "ERROR code=-10" in outside.output and SECRET not in outside.output, outside.output
        # A sandbox that names the app but mounts other files at /app (a root-owned copy of
        # the very same program) is not the app.
        copy = world.dir / "not-the-deployment"
        (copy / "bin").mkdir(parents=True)
        shutil.copy2(app.program, copy / "bin" / "secret-vault")
        for p in (copy, copy / "bin", copy / "bin" / "secret-vault"):
            p.chmod(0o755)
        res, helper = in_sandbox(world, copy, app.info, "peek", "notes")
        assert "ERROR code=-6" in res.output and SECRET not in res.output, res.output
        assert any(f"is not a file of {app.id}'s deployment" in m for m in helper), helper
        # A file system view of its own without /.flatpak-info is no app at all. (The
        # library does not even ask there: the socket shows as nobody's; a program of the
        # user's own asks by hand.)
        r = forged_save(world, world.user, sandbox=sandbox(world, app.files, None))
        assert r["code"] == "-6" and "not a Flatpak app's" in r["cause"], r
    finally:
        app.remove()
