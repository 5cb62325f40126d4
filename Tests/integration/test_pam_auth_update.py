"""The pam-auth-update profiles (pam.d/pam-configs), applied by Debian's own pam-auth-update
in a throwaway root (`--root`): a copy of this machine's /etc/pam.d/common-*, /var/lib/pam
and /usr/share/pam-configs plus ours, and a private debconf database (DEBCONF_SYSTEMRC), so
neither /etc/pam.d nor debconf's database on the machine is touched — the test checks that
too.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ctl_support import REPO, localauthctl_binary  # noqa: E402

PROFILES = REPO / "pam.d" / "pam-configs"
WATCHED = [*sorted(Path("/etc/pam.d").glob("common-*")), *sorted(Path("/var/lib/pam").glob("*")),
           Path("/var/cache/debconf/config.dat")]


def _digests() -> dict:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in WATCHED if p.is_file()}


@pytest.fixture
def root(tmp_path) -> Path:
    r = tmp_path / "root"
    for d in ("etc/pam.d", "var/lib/pam", "usr/share/pam-configs", "debconf"):
        (r / d).mkdir(parents=True)
    for f in Path("/etc/pam.d").glob("common-*"):
        shutil.copy(f, r / "etc/pam.d")
    for f in Path("/var/lib/pam").iterdir():
        shutil.copy(f, r / "var/lib/pam")
    for f in [*Path("/usr/share/pam-configs").iterdir(), *PROFILES.iterdir()]:
        shutil.copy(f, r / "usr/share/pam-configs")
    (r / "debconf.conf").write_text(
        "Config: configdb\nTemplates: templatedb\n\n"
        f"Name: configdb\nDriver: File\nFilename: {r}/debconf/config.dat\n\n"
        f"Name: templatedb\nDriver: File\nMode: 644\nFilename: {r}/debconf/templates.dat\n")
    return r


def pam_auth_update(root: Path, *args: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive",
           "DEBCONF_SYSTEMRC": str(root / "debconf.conf")}
    proc = subprocess.run(["pam-auth-update", "--root", str(root), *args], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Local modifications" not in proc.stderr, proc.stderr


def auth_lines(path: Path) -> list:
    return [l.split() for l in path.read_text().splitlines()
            if l.strip() and not l.lstrip().startswith("#") and l.split()[0] == "auth"]


def index(lines: list, module: str, authsucc: bool = False) -> int:
    found = [i for i, l in enumerate(lines)
             if any(w.endswith(module) for w in l) and ("authsucc" in l) == authsucc]
    assert len(found) == 1, (module, authsucc, lines)
    return found[0]


@pytest.mark.alone("compares the machine's own pam-auth-update and debconf files before and after: "
                   "a package test installing the .deb meanwhile changes them too")
def test_enabling_the_profiles_puts_our_lines_around_pam_unix(root):
    before = _digests()
    original = (root / "etc/pam.d/common-auth").read_text()
    pam_auth_update(root, "--enable", "localauth", "localauth-authsucc")
    auth = auth_lines(root / "etc/pam.d/common-auth")
    first = index(auth, "pam_localauth.so")
    unix = index(auth, "pam_unix.so")
    deny = index(auth, "pam_deny.so")
    permit = index(auth, "pam_permit.so")
    succ = index(auth, "pam_localauth.so", authsucc=True)
    assert first < unix < deny < permit < succ, auth
    # A match jumps over pam_unix and pam_deny to pam_permit; the password is tried otherwise.
    assert auth[first][1] == f"[success={permit - first - 1}", auth[first]
    assert auth[succ][1] == "optional", auth[succ]
    seen = set((root / "var/lib/pam/seen").read_text().split())
    assert {"localauth", "localauth-authsucc"} <= seen, seen

    # What localauthctl doctor makes of it: sound, the authsucc line only after a good password.
    (root / "etc/pam.d/sudo").write_text("@include common-auth\n@include common-account\n")
    ctl = localauthctl_binary()
    doctor = subprocess.run([ctl, "doctor", "--pam-dir", str(root / "etc/pam.d")],
                            capture_output=True, text=True, timeout=60)
    common = [l for l in doctor.stdout.splitlines() if "/common-auth" in l]
    assert len(common) == 1 and common[0].startswith("ok "), doctor.stdout
    assert "reached only after the password succeeded" in common[0]

    (root / "etc/pam.d/sudo").unlink()
    # Removing them (what the package's prerm does) gives the original file back.
    pam_auth_update(root, "--package", "--remove", "localauth", "localauth-authsucc")
    assert (root / "etc/pam.d/common-auth").read_text() == original
    assert _digests() == before, "pam-auth-update --root touched the machine's files"


def test_only_the_first_profile_leaves_lockouts_uncleared(root):
    # Enabled alone, the fingerprint line goes in without its authsucc partner: doctor says so.
    pam_auth_update(root, "--enable", "localauth")
    auth = auth_lines(root / "etc/pam.d/common-auth")
    assert index(auth, "pam_localauth.so") < index(auth, "pam_unix.so")
    assert not [l for l in auth if "authsucc" in l], auth
    (root / "etc/pam.d/sudo").write_text("@include common-auth\n@include common-account\n")
    doctor = subprocess.run([localauthctl_binary(), "doctor", "--pam-dir", str(root / "etc/pam.d")],
                            capture_output=True, text=True, timeout=60)
    assert doctor.returncode == 1, doctor.stdout
    assert any(l.startswith("problem ") and "/common-auth (used by sudo): no line clears a fingerprint lockout" in l
               for l in doctor.stdout.splitlines()), doctor.stdout


def test_the_profiles_are_off_by_default(root):
    # A plain run (what postinst's --package does) changes no stack.
    original = {p.name: p.read_bytes() for p in (root / "etc/pam.d").iterdir()}
    pam_auth_update(root, "--package")
    assert {p.name: p.read_bytes() for p in (root / "etc/pam.d").iterdir()} == original


# Profiles of the shape libpam-sss and libpam-krb5 install (priorities as Debian's), so that
# pam-auth-update itself writes the stacks a directory-service fleet runs.
DIRECTORY_PROFILES = {
    "sss": """\
Name: SSS authentication
Default: yes
Priority: 128
Auth-Type: Primary
Auth:
	[success=end new_authtok_reqd=done default=ignore]	pam_sss.so use_first_pass
Auth-Initial:
	[success=end new_authtok_reqd=done default=ignore]	pam_sss.so
""",
    "krb5": """\
Name: Kerberos authentication
Default: yes
Priority: 704
Auth-Type: Primary
Auth:
	[success=end default=ignore]	pam_krb5.so minimum_uid=1000 try_first_pass
Auth-Initial:
	[success=end default=ignore]	pam_krb5.so minimum_uid=1000
""",
}


@pytest.mark.parametrize("service", [None, "sss", "krb5"], ids=["stock", "sssd", "krb5"])
def test_doctor_on_the_stacks_pam_auth_update_writes(root, service):
    """A stock, an SSSD and a Kerberos stack, with both profiles enabled: doctor finds no
    problem, advises nothing, and sees every password module."""
    names = ["localauth", "localauth-authsucc"]
    if service:
        (root / "usr/share/pam-configs" / service).write_text(DIRECTORY_PROFILES[service])
        names.append(service)
    pam_auth_update(root, "--enable", *names)
    auth = auth_lines(root / "etc/pam.d/common-auth")
    first = index(auth, "pam_localauth.so")
    passwords = [i for i, l in enumerate(auth)
                 if any(w in ("pam_unix.so", "pam_sss.so", "pam_krb5.so") for w in l)]
    assert len(passwords) == (2 if service else 1), auth
    assert first < min(passwords), auth  # the finger before any password prompt
    (root / "etc/pam.d/sudo").write_text("@include common-auth\n@include common-account\n")
    shutil.copy(REPO / "pam.d" / "localauthctl", root / "etc/pam.d")  # the package ships it
    doctor = subprocess.run([localauthctl_binary(), "doctor", "--pam-dir", str(root / "etc/pam.d")],
                            capture_output=True, text=True, timeout=60)
    lines = doctor.stdout.splitlines()
    # (No bus here: fprintd's absence is a problem of its own; the stacks are what is checked.)
    assert not [l for l in lines if l.startswith(("problem ", "warning ")) and str(root) in l], doctor.stdout
    stack = [l for l in lines if "/common-auth (used by " in l]
    assert len(stack) == 1 and stack[0].startswith("ok "), doctor.stdout
    assert "reached only after the password succeeded" in stack[0]
    for module in ("pam_unix.so", "pam_sss.so" if service == "sss" else None,
                   "pam_krb5.so" if service == "krb5" else None):
        if module:
            assert module in stack[0], stack[0]
    assert "fix:" not in doctor.stdout.split("/common-auth", 1)[1].split("\n", 1)[0]
