"""SSH keys on root's side, managed with `localauthctl ssh` as an ordinary user through
localauthd (the test's own, appbed.app_world) and the helper's `mode=ssh`, against the real
fprintd and the virtual reader: create, list, the public key (as ssh-keygen reads it), an
allowed_signers line, delete and policy changes only after the finger (the password only
where the key allows it), another uid sees none of the keys, hostile names and policies
refused before anything is written, and `ssh setup` never replacing another agent.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_ssh_keys.py

The agent socket itself (signing) is tested elsewhere; these tests never sign.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from appbed import ENROLLED, OTHER, app_world  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)
from servicebed import namespace_prefix  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

KEY_LINE = re.compile(r"^(ecdsa-sha2-nistp256 AAAA[A-Za-z0-9+/=]+)( .*)?\r?$", re.M)


@pytest.fixture
def world(inst, bed, syslog):
    # The installation's own localauthctl, copied where the throwaway user can run it.
    with app_world(inst, bed, syslog, inst.ctl, "la-sk-") as w:
        yield w


def ssh(world, *args, fingers=(), password=None, user=None, env=None):
    """`localauthctl ssh ARGS` as the world's user (or ``user``) on a terminal."""
    if user is None:
        return world.run("ssh", *args, fingers=fingers, password=password, env=env)
    environment = world.inst.env()
    environment.update(env or {})
    pt = system.run_on_pty([str(world.app), "ssh", *args], env=environment, user=user,
                           prefix=namespace_prefix(world.syslog), timeout=60)
    res = pt.finish(timeout=60)
    return res


def text(run) -> str:
    return run.output.replace("\r", "")


def listed(world, user=None) -> dict:
    run = ssh(world, "list", "--json", user=user)
    assert run.status == 0, run.output
    body = [l for l in text(run).splitlines() if l.startswith("{")]
    assert len(body) == 1, run.output
    return json.loads(body[0])


def keys_dir(world, uid=None) -> Path:
    return world.state / "ssh" / str(uid if uid is not None else world.user.uid)


def created(world, name="work", *options):
    run = ssh(world, "create", name, *options)
    assert run.status == 0, run.output
    assert run.verify_starts == []                       # creating asks nobody
    m = KEY_LINE.search(text(run))
    assert m, run.output
    return run, m.group(0).rstrip("\r")


def fingerprint_by_ssh_keygen(line: str, tmp: Path) -> str:
    pub = tmp / "key.pub"
    pub.write_text(line + "\n")
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


# --- the main path ------------------------------------------------------------------------

def test_a_key_is_created_listed_printed_and_deleted_only_with_the_finger(world):
    run, line = created(world, "work", "--comment", "alice@example.org")
    assert line.endswith(" alice@example.org"), line
    # ssh-keygen reads the public key, and its fingerprint is the one listed and announced.
    fp = fingerprint_by_ssh_keygen(line, world.dir)
    assert f"created work ({fp})" in text(run), run.output
    j = listed(world)
    assert [k["name"] for k in j["keys"]] == ["work"] and j["damaged"] == [], j
    key = j["keys"][0]
    assert (key["type"], key["fingerprint"], key["requirement"], key["reuse_seconds"], key["forwarding"]) \
        == ("ecdsa-sha2-nistp256", fp, "biometry", 0, False), key
    assert key["public_key"] == line
    plain = ssh(world, "list")
    assert re.search(rf"^work\s+ecdsa-sha2-nistp256\s+{re.escape(fp)}\s+finger, every use asks, forwarding refused",
                     text(plain), re.M), plain.output
    pk = ssh(world, "public-key", "work")
    assert pk.status == 0 and text(pk).strip().splitlines()[-1] == line, pk.output
    signers = ssh(world, "allowed-signers", "work", "--principal", "alice@example.org")
    blob = line.split()[1]
    assert signers.status == 0, signers.output
    assert text(signers).strip().splitlines()[-1] == f'alice@example.org namespaces="git" ecdsa-sha2-nistp256 {blob}'

    # Root's directory and files: the user can neither list nor read them.
    d = keys_dir(world)
    st = d.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o700)
    record = d / "work.key"
    assert (record.stat().st_uid, record.stat().st_mode & 0o777) == (0, 0o600)
    assert "private_key=" in record.read_text()
    cat = subprocess.run(system.as_user(world.user, ["cat", str(record)]), capture_output=True, text=True)
    assert cat.returncode != 0 and "Permission denied" in cat.stderr

    # Three wrong fingers: nothing deleted.
    no = ssh(world, "delete", "work", fingers=[OTHER] * 3)
    assert no.status == 1 and "deleted" not in text(no), no.output
    assert len(no.verify_starts) >= 1 and record.exists()
    assert "Password" not in text(no)                  # a finger-only key: no password prompt
    # The enrolled finger: gone.
    yes = ssh(world, "delete", "work", fingers=[ENROLLED])
    assert yes.status == 0 and "deleted work" in text(yes), yes.output
    assert not record.exists() and listed(world)["keys"] == []
    gone = ssh(world, "public-key", "work")
    assert gone.status == 1 and "no SSH key is named work" in text(gone), gone.output

    # The last uses, newest first, with the program the kernel names.
    log = ssh(world, "log", "--json")
    uses = json.loads([l for l in text(log).splitlines() if l.startswith("{")][0])["uses"]
    assert [(u["key"], u["outcome"]) for u in uses] == [("work", "deleted"), ("work", "refused"), ("work", "created")], uses
    assert all(u["program"] == world.app.name for u in uses), uses
    helper = [m for i, m in world.syslog.lines if i == "localauth-helper" and " ssh " in m]
    assert any("ssh delete work: success" in m for m in helper), helper


def test_a_policy_change_asks_for_the_finger_and_the_password_only_where_the_key_allows_it(world):
    created(world, "git", "--reuse", "60")
    assert listed(world)["keys"][0]["reuse_seconds"] == 60
    no = ssh(world, "policy", "git", "--allow-forwarding", "--reuse", "300", fingers=[OTHER] * 3)
    assert no.status == 1 and "Password" not in text(no), no.output
    k = listed(world)["keys"][0]
    assert (k["reuse_seconds"], k["forwarding"]) == (60, False), k
    yes = ssh(world, "policy", "git", "--allow-forwarding", "--reuse", "300", fingers=[ENROLLED])
    assert yes.status == 0 and "reuse 300 s, forwarding allowed" in text(yes), yes.output
    k = listed(world)["keys"][0]
    assert (k["reuse_seconds"], k["forwarding"], k["requirement"]) == (300, True, "biometry"), k
    # A key that allows the password: three wrong fingers, then the password deletes it.
    created(world, "laptop", "--requirement", "biometry-or-password")
    run = ssh(world, "delete", "laptop", fingers=[OTHER] * 3, password=world.user.password)
    assert run.status == 0 and "deleted laptop" in text(run), run.output
    assert [k["name"] for k in listed(world)["keys"]] == ["git"]


def test_a_second_uid_sees_none_of_the_first_users_keys(world):
    _, line = created(world, "work")
    with system.ThrowawayUser(prefix="la-sk2-") as other:
        assert listed(world, user=other) == {"keys": [], "damaged": []}
        pk = ssh(world, "public-key", "work", user=other)
        assert pk.status == 1 and "ecdsa-sha2" not in pk.output, pk.output
        # Deleting "work" finds none of theirs: nothing asked, nothing removed.
        gone = ssh(world, "delete", "work", user=other)
        assert gone.status == 1 and "no ssh key is named work" in gone.output, gone.output
        # The same name is theirs to take, and another key.
        run = ssh(world, "create", "work", user=other)
        assert run.status == 0, run.output
        theirs = listed(world, user=other)["keys"][0]["public_key"]
        assert theirs != line
        assert keys_dir(world, other.uid).is_dir()
    assert listed(world)["keys"][0]["public_key"] == line
    assert (keys_dir(world) / "work.key").exists()


def test_a_damaged_record_is_named_kept_aside_and_deleted_with_the_finger(world):
    created(world, "work")
    record = keys_dir(world) / "work.key"
    record.write_text("version=1\nname=work\n")
    j = listed(world)
    assert j == {"keys": [], "damaged": ["work"]}, j
    plain = ssh(world, "list")
    assert "the record of key work is damaged" in text(plain), plain.output
    # Created again: the damaged bytes are kept aside, never read as the key.
    _, line = created(world, "work")
    assert Path(str(record) + ".damaged").read_text() == "version=1\nname=work\n"
    j = listed(world)
    assert [k["public_key"] for k in j["keys"]] == [line] and j["damaged"] == ["work"], j
    # Deleting asks for the finger and takes both.
    no = ssh(world, "delete", "work", fingers=[OTHER] * 3)
    assert no.status == 1 and record.exists(), no.output
    yes = ssh(world, "delete", "work", fingers=[ENROLLED])
    assert yes.status == 0, yes.output
    assert list(keys_dir(world).glob("work.key*")) == []
    assert listed(world) == {"keys": [], "damaged": []}


# --- hostile input ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../x", "a/b", ".hidden", "x" * 65, "a b", "é"])
def test_a_hostile_name_is_refused_by_the_tool(world, name):
    run = ssh(world, "create", name)
    assert run.status == 64 and "is no key name" in text(run), run.output
    assert not keys_dir(world).exists() or list(keys_dir(world).iterdir()) in ([], [keys_dir(world) / ".lock"])


RAW_CLIENT = r"""
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
body = b"Q" + sys.stdin.buffer.read()
s.sendall(struct.pack(">I", len(body)) + body)
buf = b""
while True:
    try:
        chunk = s.recv(65536)
    except ConnectionResetError:   # the service closes on a request it cannot read
        break
    if not chunk:
        break
    buf += chunk
while len(buf) >= 5:
    n = struct.unpack(">I", buf[:4])[0]
    kind, payload = buf[4:5], buf[5:4 + n]
    buf = buf[4 + n:]
    if kind == b"R":
        sys.stdout.write(payload.decode())
"""


def raw(world, keys: str) -> dict:
    """A request written by hand by the user's own program (no localauthctl to check it)."""
    request = f"version=1\nmode=ssh\n{keys}\nuser={world.user.name}\nservice=x"
    p = subprocess.run(system.as_user(world.user, [sys.executable, "-c", RAW_CLIENT, str(world.inst.service_socket)]),
                       input=request.encode(), capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    answer = dict(l.split("=", 1) for l in p.stdout.decode().splitlines() if "=" in l)
    answer["_raw"] = (p.stdout, p.stderr)
    return answer


def test_hostile_names_and_policies_sent_by_hand_are_refused(world):
    for keys, cause in [("op=create\nname=../../etc/passwd\nrequirement=biometry", "a key name holds only"),
                        ("op=create\nname=.lock\nrequirement=biometry", "does not start with"),
                        ("op=create\nname=ok\nrequirement=default", "unknown requirement"),
                        ("op=create\nname=ok\nrequirement=biometry\nreuse=301", "0 to 300 seconds"),
                        ("op=create\nname=ok\nrequirement=biometry\ncomment=a\x1b[2Jb", "printable ASCII"),
                        ("op=delete\nname=../x", "a key name holds only")]:
        answer = raw(world, keys)
        assert answer.get("code") not in (None, "0") and cause in answer.get("cause", ""), (keys, answer)
    # A repeated key, a policy that changes nothing: no request; localauthd closes
    # without a helper.
    assert "code" not in raw(world, "op=delete\nname=x\nname=y")
    assert "code" not in raw(world, "op=policy\nname=ok")
    assert not (keys_dir(world) / "ok.key").exists()
    assert not (world.state / "ssh" / "etc").exists()
    # A key bound to the enrolled set stays bound; one that is not cannot become so.
    ok = raw(world, "op=create\nname=ok\nrequirement=biometry")
    assert ok.get("code") == "0", (ok, world.syslog.lines[-8:])
    answer = raw(world, "op=policy\nname=ok\nrequirement=biometry-current-set")
    assert answer["code"] != "0" and "created" in answer["cause"], answer
    answer = raw(world, "op=policy\nname=ok\nreuse=301")
    assert answer["code"] != "0", answer
    assert listed(world)["keys"][0]["requirement"] == "biometry"
    # Another user's uid in the request changes nothing: the peer's uid decides.
    with system.ThrowawayUser(prefix="la-sk3-") as other:
        request = f"version=1\nmode=ssh\nop=list\nuser={other.name}\ncaller_uid={other.uid}"
        p = subprocess.run(system.as_user(world.user, [sys.executable, "-c", RAW_CLIENT,
                                                       str(world.inst.service_socket)]),
                           input=request.encode(), capture_output=True, timeout=60)
        out = p.stdout.decode()
        assert "code=" in out and "code=0" not in out and "refused" in out, out


def test_root_is_told_that_keys_are_for_ordinary_users(world):
    r = subprocess.run([str(world.app), "ssh", "list"], env=world.inst.env(), capture_output=True, text=True)
    assert r.returncode == 77 and "ordinary users" in r.stderr, r


# --- ssh setup ----------------------------------------------------------------------------

def test_setup_appends_the_line_only_where_no_agent_is_named(world):
    home = world.dir / "home"
    home.mkdir()
    os.chown(home, world.user.uid, world.user.gid)
    base = {k: v for k, v in world.inst.env().items() if k != "SSH_AUTH_SOCK"}
    base["HOME"] = str(home)

    def setup(*args, **env):
        return subprocess.run(system.as_user(world.user, [str(world.app), "ssh", "setup", *args]),
                              env={**base, **env}, capture_output=True, text=True)

    # Both lines: ssh's, and git's (ssh-keygen -Y sign reads SSH_AUTH_SOCK, never IdentityAgent).
    printed = setup()
    assert printed.returncode == 0 and printed.stdout == (
        "IdentityAgent /run/localauth/ssh-agent\nexport SSH_AUTH_SOCK=/run/localauth/ssh-agent\n"), printed
    assert "reads SSH_AUTH_SOCK, not IdentityAgent" in printed.stderr, printed
    assert not (home / ".ssh").exists()
    # Already pointing at localauthd's: said so, no line for the profile.
    r = setup(SSH_AUTH_SOCK="/run/localauth/ssh-agent")
    assert r.returncode == 0 and r.stdout == "IdentityAgent /run/localauth/ssh-agent\n", r
    assert "git signs through it" in r.stderr, r
    # Another agent in the environment: nothing written, and git's line leaves it in place.
    r = setup("--write", SSH_AUTH_SOCK="/tmp/other-agent.sock")
    assert r.returncode == 2 and "another agent" in r.stderr and not (home / ".ssh").exists(), r
    assert r.stdout.endswith("\nSSH_AUTH_SOCK=/run/localauth/ssh-agent git commit -S\n"), r
    assert "/tmp/other-agent.sock), left as it is" in r.stderr, r
    r = setup("--write")
    assert r.returncode == 0, r
    config = home / ".ssh" / "config"
    assert (config.stat().st_mode & 0o777, (home / ".ssh").stat().st_mode & 0o777) == (0o600, 0o700)
    assert config.stat().st_uid == world.user.uid
    assert "Host *\n    IdentityAgent /run/localauth/ssh-agent\n" in config.read_text()
    # ssh itself reads it so.
    g = subprocess.run(system.as_user(world.user, ["ssh", "-F", str(config), "-G", "example.org"]),
                       env=base, capture_output=True, text=True)
    assert "identityagent /run/localauth/ssh-agent" in g.stdout, g
    before = config.read_text()
    again = setup("--write")
    assert again.returncode == 0 and config.read_text() == before, again
    # A file naming another agent, in any host block, is left as it is.
    config.write_text("Host work\n    IdentityAgent=~/.1password/agent.sock\n")
    r = setup("--write")
    assert r.returncode == 2 and "already names an agent" in r.stderr, r
    assert config.read_text() == "Host work\n    IdentityAgent=~/.1password/agent.sock\n"
    config.write_text("Include ~/.ssh/config.d/*\n")
    r = setup("--write")
    assert r.returncode == 2 and "includes other files" in r.stderr and config.read_text() == "Include ~/.ssh/config.d/*\n", r
