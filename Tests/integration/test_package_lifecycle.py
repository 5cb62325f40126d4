"""The package's life on a clean Debian 12: install an earlier release, enable it with
pam-auth-update, put in every service file the README shows (as the package ships them in
/usr/share/doc/localauth/examples/pam.d), upgrade, remove, purge: in a throwaway root made
by mmdebstrap (debroot.py), so nothing of this machine's /etc, users or packages is touched.

What must hold at each step: the account's password gets through every stack (pamtester
with the password on stdin, and the real sudo -S), before the upgrade, after it, and after
the package is removed with the service files still naming the module; the earlier
profile's `account required` line becomes `optional` on upgrade; the administrator's
edit of the conffile survives it; `dpkg --remove` names every line still naming the
module, and which of them fail their stack (a hand-written `account required` line, as
the documentation of earlier releases had it: that one really fails); purging leaves
nothing of ours and dpkg warns of nothing.

The root is made once (mmdebstrap, minbase, with pamtester and sudo: about 25 s with a
reachable Debian mirror) and removed on every exit path.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from debroot import DebianRoot, repacked  # noqa: E402

EXAMPLES = "/usr/share/doc/localauth/examples/pam.d"
# The README's service files, as the administrator installs them (a screen locker's is
# the locker's own name).
INSTALLED = {"sudo": "sudo", "su": "su", "login": "login", "polkit-1": "polkit-1",
             "localauth": "localauth", "screenlocker": "swaylock",
             "gdm-fingerprint": "gdm-fingerprint"}
# The stacks a password gets through; su and a screen locker run as the user (root passes
# su by pam_rootok, without a password).
PASSWORD_STACKS = {"sudo": None, "login": None, "polkit-1": None, "localauth": None,
                   "su": "user", "swaylock": "user"}
# How earlier releases told administrators to write the account line.
LEGACY = "la-legacy"


def _previous_release(tree: Path) -> None:
    """The earlier profile: its account line was `required`."""
    profile = tree / "usr/share/pam-configs/localauth-authsucc"
    profile.write_text(profile.read_text().replace("\toptional\tpam_localauth.so\n",
                                                   "\trequired\tpam_localauth.so\n"))


@pytest.fixture(scope="module")
def root():
    with DebianRoot(include=["pamtester", "sudo"]) as r:
        yield r


def dpkg(root: DebianRoot, *args: str) -> subprocess.CompletedProcess:
    return root.run("dpkg " + " ".join(args))


def version(root: DebianRoot) -> str:
    return root.run("dpkg-query -W -f='${Version}' localauth").stdout


def password_gets_through(root: DebianRoot, user: str, password: str, when: str) -> None:
    for service, as_user in PASSWORD_STACKS.items():
        r = root.run(f"pamtester {service} {user} authenticate acct_mgmt",
                     user=user if as_user else None, input=password + "\n")
        out = r.stdout + r.stderr
        assert r.returncode == 0, (when, service, out)
        assert "successfully authenticated" in out and "account management done" in out, (when, service, out)
        assert "Module is unknown" not in out, (when, service, out)
    # The real sudo, the password from a pipe.
    r = root.run("sudo -S -k -p 'pw: ' id -u", user=user, input=password + "\n")
    assert r.returncode == 0 and r.stdout.strip() == "0", (when, r.stdout, r.stderr)


def test_the_root_sees_no_process_of_this_machine(root):
    """A maintainer script that stops a daemon by its executable (polkitd's does) must find
    nothing of this machine: the root's /proc shows its own PID namespace only."""
    r = root.run("for p in /proc/[0-9]*; do echo ${p#/proc/}; done")
    pids = r.stdout.split()
    assert r.returncode == 0, r.stderr
    assert pids and len(pids) <= 3, pids  # unshare's child (PID 1), sh, nothing else
    assert "1" in pids, pids


def test_install_enable_upgrade_remove_purge(root, deb, tmp_path):
    current = deb.name.split("_")[1]
    previous = repacked(deb, tmp_path, f"{current}~prev1", _previous_release)
    root.copy_in(previous, "/tmp/previous.deb")
    root.copy_in(deb, "/tmp/current.deb")
    user = "la-life-" + secrets.token_hex(3)
    password = "pw-" + secrets.token_urlsafe(12)
    common_auth = root.path("/etc/pam.d/common-auth").read_text()

    # Install the earlier release: nothing changes in the stacks.
    r = dpkg(root, "-i", "/tmp/previous.deb")
    assert r.returncode == 0, r.stdout + r.stderr
    assert root.path("/etc/pam.d/common-auth").read_text() == common_auth
    assert root.run("stat -c %a:%U /var/lib/localauth").stdout.strip() == "700:root"
    assert root.run("stat -c %a:%U /etc/security/localauth.conf.d").stdout.strip() == "755:root"

    # The administrator's setup: a user with sudo, every example service file, a line
    # written the way earlier releases' documentation said, both profiles enabled.
    r = root.run(f"useradd -M -s /bin/sh {user} && echo '{user}:{password}' | chpasswd && "
                 f"echo '{user} ALL=(ALL) ALL' > /etc/sudoers.d/{user} && chmod 0440 /etc/sudoers.d/{user}")
    assert r.returncode == 0, r.stderr
    for shipped, name in INSTALLED.items():
        r = root.run(f"cp {EXAMPLES}/{shipped} /etc/pam.d/{name}")
        assert r.returncode == 0, (shipped, r.stderr)
    root.path(f"/etc/pam.d/{LEGACY}").write_text(
        "auth sufficient pam_localauth.so\n@include common-auth\n"
        "auth optional pam_localauth.so authsucc\n@include common-account\n"
        "account required pam_localauth.so\n")
    r = root.run("pam-auth-update --enable localauth localauth-authsucc")
    assert r.returncode == 0, r.stderr
    assert "pam_localauth.so" in root.path("/etc/pam.d/common-auth").read_text()
    assert "required\tpam_localauth.so" in root.path("/etc/pam.d/common-account").read_text()
    password_gets_through(root, user, password, "installed")

    # Upgrade, with a local edit of the conffile.
    with open(root.path("/etc/security/localauth.conf"), "a") as f:
        f.write("max_tries = 2\n")
    r = dpkg(root, "-i", "/tmp/current.deb")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
    assert version(root) == current
    assert root.path("/etc/security/localauth.conf").read_text().endswith("max_tries = 2\n")
    account = root.path("/etc/pam.d/common-account").read_text()
    assert "optional\tpam_localauth.so" in account and "required\tpam_localauth.so" not in account, account
    password_gets_through(root, user, password, "upgraded")

    # Remove: the profiles' lines go, the hand-written ones are named, and the only ones
    # said to fail are the ones that do.
    r = dpkg(root, "--remove", "localauth")
    assert r.returncode == 0, r.stdout + r.stderr
    said = r.stderr
    for name in ("common-auth", "common-account"):
        assert "pam_localauth" not in root.path(f"/etc/pam.d/{name}").read_text(), name
    assert "these PAM lines still name pam_localauth.so" in said, said
    for name in list(INSTALLED.values()) + [LEGACY]:
        assert f"/etc/pam.d/{name}:" in said, (name, said)
    failing = said.split("WARNING: without the module these fail their stack", 1)[1].split("localauth: make each")[0]
    assert failing.strip().splitlines()[1:] == [f"  /etc/pam.d/{LEGACY}:5: account required pam_localauth.so"], said
    assert "finger-only conversations fail without the module" in said and "/etc/pam.d/gdm-fingerprint:" in said.split(
        "finger-only conversations")[1], said
    assert list(root.path("/usr/lib").glob("*/security/pam_localauth.so")) == []

    password_gets_through(root, user, password, "removed")
    # What the warning said: the `required` line fails its stack, and the finger-only
    # conversation lets nobody in.
    r = root.run(f"pamtester {LEGACY} {user} authenticate acct_mgmt", input=password + "\n")
    assert r.returncode != 0 and "Module is unknown" in r.stdout + r.stderr, r.stdout + r.stderr
    r = root.run(f"pamtester gdm-fingerprint {user} authenticate", input=password + "\n")
    assert r.returncode != 0, r.stdout + r.stderr

    # Purge: nothing of ours, and no warning from dpkg.
    r = dpkg(root, "--purge", "localauth")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
    for path in ("/var/lib/localauth", "/etc/security/localauth.conf", "/etc/security/localauth.conf.d",
                 "/etc/pam.d/localauthctl",
                 "/usr/share/pam-configs/localauth", "/usr/share/pam-configs/localauth-authsucc",
                 "/usr/libexec/localauth", "/usr/share/doc/localauth"):
        assert not root.path(path).exists(), path
    assert root.run("dpkg-query -W -f='${db:Status-Status}' localauth").stdout in ("", "not-installed")
