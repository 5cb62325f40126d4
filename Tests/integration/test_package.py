"""The Debian package, built on this machine by scripts/package: its contents, lintian, and
a real installation — `dpkg -i`, an authentication through the *installed* module with
pamtester against the test bed (real fprintd, virtual reader), the installed localauthctl
agreeing with it, then `dpkg --purge` leaving nothing of ours behind.

Installing writes system locations. The test refuses to start when anything of ours is
already there (it would be overwritten, then purged); every exit path purges the package,
removes its own service files and puts back /etc/pam.d/common-* and /var/lib/pam if the
maintainer scripts changed them (they must not: both profiles are "Default: no").

scripts/package builds first (scripts/build); with LOCALAUTH_SKIP_BUILD=1 it packages
build/ as it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ctl_support import REPO, ThrowawayAccount, read_state  # noqa: E402
from pamenv import end_child  # noqa: E402
from real_helper import LocalService  # noqa: E402

PKG = "localauth"
MULTIARCH = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True,
                           text=True, check=True).stdout.strip()
MODULE = f"/lib/{MULTIARCH}/security/pam_localauth.so"   # where libpam-modules puts Debian 12's
HELPER = "/usr/libexec/localauth/localauth-helper"
CTL = "/usr/bin/localauthctl"
SERVICE = "/usr/libexec/localauth/localauthd"
# What earlier versions installed for callers that are not root; localauthd serves them now.
OLD_LAUNCHER = "/usr/libexec/localauth/localauth-launcher"
UNITS = ("/lib/systemd/system/localauth.socket", "/lib/systemd/system/localauth.service",
         "/lib/systemd/system/localauth-ssh-agent.socket")
# What enabling the socket and the service writes (deb-systemd-helper, with or without a
# running systemd): the service runs from boot, to follow logind's sessions.
ENABLED = [Path("/etc/systemd/system/sockets.target.wants/localauth.socket"),
           Path("/etc/systemd/system/multi-user.target.wants/localauth.service"),
           Path("/var/lib/systemd/deb-systemd-helper-enabled/localauth.socket.dsh-also"),
           Path("/var/lib/systemd/deb-systemd-helper-enabled/localauth.service.dsh-also"),
           Path("/var/lib/systemd/deb-systemd-helper-enabled/sockets.target.wants/localauth.socket"),
           Path("/var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/localauth.service"),
           Path("/etc/systemd/system/localauth.socket"),          # masks, after remove
           Path("/etc/systemd/system/localauth.service"),
           Path("/var/lib/systemd/deb-systemd-helper-masked/localauth.socket"),
           Path("/var/lib/systemd/deb-systemd-helper-masked/localauth.service"),
           # The ssh-agent's socket, enabled as the service's own (localauthd(8), AGENT).
           Path("/etc/systemd/system/sockets.target.wants/localauth-ssh-agent.socket"),
           Path("/var/lib/systemd/deb-systemd-helper-enabled/localauth-ssh-agent.socket.dsh-also"),
           Path("/var/lib/systemd/deb-systemd-helper-enabled/sockets.target.wants/localauth-ssh-agent.socket"),
           Path("/etc/systemd/system/localauth-ssh-agent.socket"),
           Path("/var/lib/systemd/deb-systemd-helper-masked/localauth-ssh-agent.socket")]
STATE = Path("/var/lib/localauth")
# The AppArmor profiles of localauthd and the helper (conffiles), and what postinst makes
# for each: an empty file for site additions, removed on purge.
APPARMOR_NAMES = ("usr.libexec.localauth.localauthd", "usr.libexec.localauth.localauth-helper")
APPARMOR = ["/etc/apparmor.d/abstractions/localauth", *(f"/etc/apparmor.d/{n}" for n in APPARMOR_NAMES)]
APPARMOR_LOCAL = [Path("/etc/apparmor.d/local") / n for n in APPARMOR_NAMES]
PAM_SNAPSHOT = [Path("/etc/pam.d") / n
                for n in ("common-auth", "common-account", "common-password", "common-session",
                          "common-session-noninteractive")]


def setuid_or_setgid(perms: str) -> bool:
    """``-rwsr-xr-x`` and the like, as ``dpkg-deb --contents`` and ``ls -l`` write modes."""
    return perms[3] in "sS" or perms[6] in "sS"


def deb_members(deb: Path) -> dict:
    """Path (without the leading ./) → (mode, owner, group) of the data archive."""
    listing = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True,
                             check=True).stdout
    members = {}
    for line in listing.splitlines():
        perms, owner, _size, _date, _time, name = line.split(None, 5)
        members[name.removeprefix("./").rstrip("/")] = (perms, owner)
    return members


def control(deb: Path, field: str) -> str:
    return subprocess.run(["dpkg-deb", "--field", str(deb), field], capture_output=True,
                          text=True, check=True).stdout.strip()


# ---- what the package holds --------------------------------------------------------------

def test_the_files_are_where_a_debian_system_expects_them(deb):
    m = deb_members(deb)
    expect = {
        MODULE[1:]: "-rw-r--r--", HELPER[1:]: "-rwxr-xr-x", CTL[1:]: "-rwxr-xr-x",
        SERVICE[1:]: "-rwxr-xr-x", **{unit[1:]: "-rw-r--r--" for unit in UNITS},
        "usr/share/man/man8/localauthd.8.gz": "-rw-r--r--",
        "etc/security/localauth.conf": "-rw-r--r--", "etc/pam.d/localauthctl": "-rw-r--r--",
        "usr/share/pam-configs/localauth": "-rw-r--r--",
        "usr/share/pam-configs/localauth-authsucc": "-rw-r--r--",
        "usr/share/polkit-1/actions/org.localauth.right.policy": "-rw-r--r--",
        "usr/share/man/man8/pam_localauth.8.gz": "-rw-r--r--",
        "usr/share/man/man8/localauthctl.8.gz": "-rw-r--r--",
        "usr/share/man/man5/localauth.conf.5.gz": "-rw-r--r--",
        "usr/share/doc/localauth/copyright": "-rw-r--r--",
        "usr/share/doc/localauth/changelog.gz": "-rw-r--r--",
        **{profile[1:]: "-rw-r--r--" for profile in APPARMOR},
    }
    for path, perms in expect.items():
        assert path in m, (path, sorted(m))
        assert m[path] == (perms, "root/root"), (path, m[path])
    # The drop-in directory the shipped file tells administrators to keep site changes in.
    assert m["etc/security/localauth.conf.d"] == ("drwxr-xr-x", "root/root"), m.get("etc/security/localauth.conf.d")
    assert not any(p.startswith("var/") for p in m), "the state directory is postinst's"
    assert all(owner == "root/root" for _, owner in m.values())
    # No setuid or setgid file at all: callers that are not root reach root's side through
    # localauthd's socket, and the launcher earlier versions installed is gone.
    assert OLD_LAUNCHER[1:] not in m, m[OLD_LAUNCHER[1:]]
    assert not any(p.endswith("localauth-launcher") for p in m), sorted(m)
    assert [(p, perms) for p, (perms, _) in m.items() if setuid_or_setgid(perms)] == []
    assert sorted(p for p in m if p.startswith("usr/libexec/localauth/")) == [HELPER[1:], SERVICE[1:]], sorted(m)


def unit_settings(path: Path) -> dict:
    """A unit file's `Key=value` lines: key -> every value it is given, in order."""
    settings: dict = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            settings.setdefault(key, []).append(value)
    return settings


def test_the_packaged_service_unit_is_the_security_design(deb, tmp_path):
    """What docs/SECURITY.md ("The unit") and the code rely on, in the unit as shipped; the
    settings left out on purpose stay out."""
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tmp_path)], check=True)
    unit = unit_settings(tmp_path / UNITS[1][1:])
    expect = {
        # The audit records (NETLINK_AUDIT) and the peer proof without SO_PEERPIDFD
        # (NETLINK_SOCK_DIAG); no IP socket.
        "RestrictAddressFamilies": ["AF_UNIX AF_NETLINK"], "IPAddressDeny": ["any"],
        "Restart": ["always"], "CPUWeight": ["200"], "IOWeight": ["200"],
        "MemoryDenyWriteExecute": ["yes"], "PrivateMounts": ["yes"], "ProtectHome": ["yes"],
        "NoNewPrivileges": ["yes"], "ProtectSystem": ["strict"],
        "CapabilityBoundingSet": ["CAP_SYS_PTRACE CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_SYS_ADMIN CAP_AUDIT_WRITE"],
    }
    assert {k: unit.get(k) for k in expect} == expect
    # sock_diag from a private network namespace sees none of the host's sockets; the
    # others: SECURITY.md says why each is left out.
    for key in ("PrivateNetwork", "User", "DynamicUser", "PrivateUsers", "ProtectProc", "ProcSubset",
                "PrivateDevices", "AmbientCapabilities"):
        assert key not in unit, (key, unit[key])


def test_control_fields_and_conffiles(deb, tmp_path):
    depends = control(deb, "Depends")
    for name in ("libc6", "libpam0g", "libsystemd0", "libgcrypt20", "libpam-runtime"):
        assert name in depends, depends
    # One crypto library: libgcrypt, which libsystemd loads anyway; not OpenSSL besides.
    assert "libssl" not in depends, depends
    assert control(deb, "Recommends") == "fprintd"
    assert control(deb, "Package") == PKG and control(deb, "Section") == "admin"
    subprocess.run(["dpkg-deb", "--control", str(deb), str(tmp_path / "DEBIAN")], check=True)
    conffiles = (tmp_path / "DEBIAN" / "conffiles").read_text().split()
    assert sorted(conffiles) == sorted(["/etc/pam.d/localauthctl", "/etc/security/localauth.conf", *APPARMOR])
    for script in ("postinst", "prerm", "postrm"):
        assert os.access(tmp_path / "DEBIAN" / script, os.X_OK), script
    postinst = (tmp_path / "DEBIAN" / "postinst").read_text()
    assert "mkdir -m 0700 /var/lib/localauth" in postinst
    assert "for unit in localauth.socket localauth.service" in postinst
    assert 'deb-systemd-helper enable "$unit"' in postinst
    # The AppArmor profiles are loaded before the service starts (a process started
    # unconfined stays so), and only where AppArmor is enabled.
    assert postinst.index("apparmor_parser -r") < postinst.index("deb-systemd-invoke start")
    assert "aa-enabled --quiet" in postinst
    prerm = (tmp_path / "DEBIAN" / "prerm").read_text()
    assert "pam-auth-update --package --remove localauth localauth-authsucc" in prerm
    assert "deb-systemd-invoke stop localauth.socket localauth.service" in prerm
    postrm = (tmp_path / "DEBIAN" / "postrm").read_text()
    assert "rm -rf /var/lib/localauth" in postrm and 'deb-systemd-helper purge "$unit"' in postrm


def test_md5sums_match_the_files(deb, tmp_path):
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tmp_path / "root")], check=True)
    subprocess.run(["dpkg-deb", "--control", str(deb), str(tmp_path / "DEBIAN")], check=True)
    sums = (tmp_path / "DEBIAN" / "md5sums").read_text().splitlines()
    files = sorted(str(p.relative_to(tmp_path / "root")) for p in (tmp_path / "root").rglob("*")
                   if p.is_file())
    assert sorted(line.split(None, 1)[1] for line in sums) == files
    check = subprocess.run(["md5sum", "--check", "--quiet", str(tmp_path / "DEBIAN" / "md5sums")],
                           cwd=tmp_path / "root", capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_profiles_are_off_until_enabled(deb, tmp_path):
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tmp_path)], check=True)
    for name in ("localauth", "localauth-authsucc"):
        text = (tmp_path / "usr/share/pam-configs" / name).read_text()
        assert "Default: no" in text.splitlines(), text


def test_the_packaged_man_pages_have_no_warning(deb, tmp_path):
    """The pages scripts/build made from man/*.scd, as installed (gzip'd)."""
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tmp_path)], check=True)
    pages = sorted((tmp_path / "usr/share/man").rglob("*.gz"))
    assert [p.name for p in pages] == ["localauth.conf.5.gz", "localauthctl.8.gz",
                                       "localauthd.8.gz", "pam_localauth.8.gz"]
    for page in pages:
        proc = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True,
                              text=True, env={**os.environ, "LC_ALL": "C.UTF-8", "MANWIDTH": "80"})
        assert proc.returncode == 0 and proc.stderr == "", (page, proc.stderr)
        assert "SEE ALSO" in proc.stdout, page


def test_lintian_finds_no_error(deb):
    proc = subprocess.run(["lintian", "--pedantic", str(deb)], capture_output=True, text=True,
                          timeout=600)
    tags = [l for l in proc.stdout.splitlines() if l[:2] in ("E:", "W:", "I:", "P:")]
    print("\nlintian:\n" + "\n".join(t for t in tags if "spelling-error-in-binary" not in t))
    assert not [t for t in tags if t.startswith("E:")], proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_binaries_are_stripped_and_the_swift_ones_need_no_toolchain(deb, tmp_path):
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tmp_path)], check=True)
    for path in (HELPER, CTL, SERVICE, MODULE):
        f = tmp_path / path[1:]
        sections = subprocess.run(["readelf", "-S", "-W", str(f)], capture_output=True,
                                  text=True, check=True).stdout
        assert ".symtab" not in sections and ".debug_info" not in sections, f"{path} is not stripped"
    for path in (HELPER, CTL):
        ldd = subprocess.run(["ldd", str(tmp_path / path[1:])], capture_output=True, text=True).stdout
        assert "libswift" not in ldd and "not found" not in ldd, ldd
        # The toolchain's libstdc++ is linked in (scripts/build); one crypto library.
        assert "libstdc++" not in ldd and "libcrypto" not in ldd, ldd


def build_id(binary: Path) -> str:
    notes = subprocess.run(["readelf", "-n", str(binary)], capture_output=True, text=True,
                           check=True).stdout
    return next(l.split(":", 1)[1].strip() for l in notes.splitlines() if "Build ID:" in l)


# What gdb answers for each binary when it finds the debug information, and not without.
DEBUGGER_FINDS = [(MODULE, "info line pam_sm_authenticate", "Line "),
                  (HELPER, "info address localauth_helper_main", "is a function at"),
                  (CTL, "info line Sources/localauthctl/main.swift:1", "Line "),
                  (SERVICE, "info line Sources/localauthd/main.swift:1", "Line ")]


def test_debug_information_is_in_the_dbgsym_package_where_gdb_finds_it(deb, tmp_path):
    dbgsym = deb.with_name(deb.name.replace(f"{PKG}_", f"{PKG}-dbgsym_", 1))
    assert dbgsym.is_file(), f"scripts/package made no {dbgsym.name}"
    assert not any(p.startswith("usr/lib/debug") for p in deb_members(deb)), "debug files in the main package"
    assert control(dbgsym, "Depends") == f"{PKG} (= {control(deb, 'Version')})"
    assert control(dbgsym, "Section") == "debug"
    root = tmp_path / "root"
    for package in (deb, dbgsym):
        subprocess.run(["dpkg-deb", "--extract", str(package), str(root)], check=True)
    debug_dir = root / "usr/lib/debug"
    ids = []
    for path, command, found in DEBUGGER_FINDS:
        binary = root / path[1:]
        ids.append(build_id(binary))
        debug_file = debug_dir / ".build-id" / ids[-1][:2] / f"{ids[-1][2:]}.debug"
        assert debug_file.is_file(), (path, debug_file)
        assert build_id(debug_file) == ids[-1]
        for where, expect in ((debug_dir, True), (tmp_path / "nowhere", False)):
            gdb = subprocess.run(["gdb", "-batch", "-nx", "-iex", f"set debug-file-directory {where}",
                                  "-ex", command, str(binary)], capture_output=True, text=True,
                                 timeout=120)
            assert (found in gdb.stdout) == expect, (path, where, gdb.stdout, gdb.stderr[-2000:])
    assert sorted(control(dbgsym, "Build-Ids").split()) == sorted(ids)


# ---- installed for real ----------------------------------------------------------------

def _dpkg(*args: str) -> subprocess.CompletedProcess:
    """dpkg, waiting for its lock when another package operation holds it."""
    deadline = time.monotonic() + 120
    while True:
        proc = subprocess.run(["dpkg", *args], capture_output=True, text=True,
                              env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        locked = "lock" in proc.stderr and proc.returncode != 0
        if not locked or time.monotonic() > deadline:
            return proc
        time.sleep(1)


def _installed() -> bool:
    proc = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}", PKG],
                          capture_output=True, text=True)
    return proc.returncode == 0 and proc.stdout.strip() not in ("", "not-installed")


def _snapshot() -> dict:
    files = list(PAM_SNAPSHOT) + sorted(Path("/var/lib/pam").glob("*"))
    return {p: p.read_bytes() for p in files if p.is_file()}


def _changed(snapshot: dict, only=None) -> list:
    return [str(p) for p, data in snapshot.items()
            if (only is None or p in only) and (not p.exists() or p.read_bytes() != data)]


def _restore(snapshot: dict) -> None:
    for path in map(Path, _changed(snapshot)):
        path.write_bytes(snapshot[path])


class PamService:
    """/etc/pam.d/<prefix><random>, removed on exit."""

    def __init__(self, prefix: str, lines: list):
        self.name = prefix + secrets.token_hex(4)
        self.path = Path("/etc/pam.d") / self.name
        self.lines = lines

    def __enter__(self) -> "PamService":
        with open(self.path, "x") as f:
            f.write("".join(line + "\n" for line in self.lines))
        return self

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def pamtester(service: str, user: str, bed, feed=None, timeout: float = 30,
              operations=("authenticate",), password=None):
    """pamtester on a pseudo-terminal (a person at the reader), ``password`` typed at the
    password prompt if given; returns (status, transcript)."""
    child = pexpect.spawn("pamtester", [service, user, *operations], encoding="utf-8",
                          timeout=timeout, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    try:
        injection = bed.inject_async(feed) if feed else None
        before_prompt = ""
        if password is not None:
            child.expect("Password: ")
            before_prompt = child.before + child.after
            child.sendline(password)
        child.expect(pexpect.EOF)
        child.close()
        if injection is not None:
            injection.wait(10)
        return child.exitstatus, before_prompt + child.before
    finally:
        end_child(child)


@pytest.fixture
def machine_to_ourselves():
    """Runs of this test from the same checkout take turns (the lock is on scripts/package,
    so nothing is created for it): two installations at once would purge each other's."""
    with open(REPO / "scripts" / "package", "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.mark.alone("installs the package on this machine: its module, its files and pam-auth-update's "
                   "and debconf's records are the machine's while it runs")
def test_install_authenticate_and_purge(deb, bed, tmp_path, machine_to_ourselves):
    members = deb_members(deb)
    ours = [Path("/" + p) for p, (perms, _) in members.items() if perms.startswith("-")]
    # Nothing of ours may be on the machine already: it would be overwritten, then purged.
    assert not _installed(), f"{PKG} is already installed on this machine"
    present = [str(p) for p in ours + [STATE] + ENABLED if p.exists() or p.is_symlink()]
    assert not present, f"refusing to install over files that exist: {present}"

    snapshot = _snapshot()
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    bed_args = (f"dbus_address={bed.address} fprint_dir={bed.state_dir} state_dir={state}")
    try:
        proc = _dpkg("-i", str(deb))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert _installed()
        for path in ours:
            assert path.is_file(), path
        # As installed, too: nothing of ours is setuid or setgid, and no launcher.
        assert [(str(p), oct(p.stat().st_mode)) for p in ours if p.stat().st_mode & 0o6000] == []
        assert not Path(OLD_LAUNCHER).exists()
        st = STATE.stat()
        assert STATE.is_dir() and st.st_uid == 0, st
        assert (st.st_mode & 0o7777) == 0o700, oct(st.st_mode)
        # pam-auth-update notes the new profiles in /var/lib/pam/seen; the stacks stay.
        assert _changed(snapshot, PAM_SNAPSHOT) == [], "installing changed the PAM stacks"
        # The service and its socket are enabled (no systemd runs here to start them: no
        # socket file; below, the installed localauthd is started as an administrator starts
        # it without systemd, `localauthd --listen`, on a socket of the test's own).
        assert os.readlink(ENABLED[0]) == UNITS[0], os.readlink(ENABLED[0])
        assert os.readlink(ENABLED[1]) == UNITS[1], os.readlink(ENABLED[1])
        assert os.readlink(ENABLED[10]) == UNITS[2], os.readlink(ENABLED[10])
        assert not Path("/run/localauth/socket").exists()
        # dh_apparmor's place for site additions to each profile, made empty.
        assert [p.stat().st_size for p in APPARMOR_LOCAL] == [0] * len(APPARMOR_LOCAL)

        with ThrowawayAccount("la-pkg-") as account, \
                LocalService(HELPER, bed=bed, state=state, binary=Path(SERVICE)) as service:
            bed.enroll(account.name, "right-index-finger", "f1")
            args = f"{service.arg} {bed_args}"
            # The first sign-in after installing: the account's password, which the authsucc
            # line checks and records (the account phase has no PAM_AUTHTOK left to check a
            # local account's password against).
            with PamService("la-pkg-pw-", [f"auth sufficient pam_localauth.so {args}",
                                           "auth requisite pam_unix.so nodelay",
                                           f"auth optional pam_localauth.so authsucc {args}",
                                           "account required pam_permit.so",
                                           f"account required pam_localauth.so {args}"]) as setup, \
                 PamService("la-pkg-fp-", [f"auth sufficient pam_localauth.so {args}",
                                           "auth requisite pam_deny.so",
                                           f"auth optional pam_localauth.so authsucc {args}",
                                           "account required pam_permit.so"]) as finger:
                status, out = pamtester(setup.name, account.name, bed,
                                        operations=("authenticate", "acct_mgmt"),
                                        password=account.password)
                assert status == 0, out
                # pamtester as root for another account, like login: one line for every
                # refusal.
                assert "Fingerprint sign-in is not available - use the password" in out, out
                recorded = read_state(state, account.name)
                assert recorded["failures"] == 0 and "last_password" in recorded, recorded

                # Only a matching finger can pass the stack that denies the password.
                status, out = pamtester(finger.name, account.name, bed, feed=["SCAN f1"])
                assert status == 0 and "successfully authenticated" in out, out
                assert "Fingerprint recognized" in out, out
                assert "last_fingerprint" in read_state(state, account.name)

                status, out = pamtester(finger.name, account.name, bed, feed=["SCAN f2"] * 3)
                assert status != 0, out
                assert "Fingerprint not recognized" in out, out
                assert read_state(state, account.name)["failures"] == 3

            # The installed localauthctl reads the same state with the same rules.
            ctl = subprocess.run([CTL, "status", account.name, "--json", "--dbus-address",
                                  bed.address, "--fprint-dir", str(bed.state_dir), "--state-dir",
                                  str(state)], capture_output=True, text=True, timeout=30)
            assert ctl.returncode == 0, ctl.stderr
            s = json.loads(ctl.stdout)
            assert s["consecutive_failures"] == 3 and s["decision"] == "fingerprint", s
            doctor = subprocess.run([CTL, "doctor", account.name, "--dbus-address", bed.address,
                                     "--state-dir", str(state), "--pam-dir", str(tmp_path)],
                                    capture_output=True, text=True, timeout=30)
            assert f"ok       helper {HELPER}: root's, mode 0755" in doctor.stdout, doctor.stdout
            man = subprocess.run(["man", "-w", "localauthctl"], capture_output=True, text=True)
            assert man.stdout.strip() == "/usr/share/man/man8/localauthctl.8.gz", man

        proc = _dpkg("--purge", PKG)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert not _installed()
        left = [str(p) for p in ours + ENABLED + APPARMOR_LOCAL + [STATE, Path("/usr/libexec/localauth"),
                                                  Path("/usr/share/doc/localauth")]
                if p.exists() or p.is_symlink()]
        assert left == [], f"left behind after purge: {left}"
        assert _changed(snapshot) == [], "purging left the PAM configuration changed"
    finally:
        if _installed():
            _dpkg("--purge", PKG)
        _restore(snapshot)


# ---- release hygiene -----------------------------------------------------------------------

def test_licence_copyright_and_examples(deb, tmp_path):
    assert (REPO / "LICENSE").read_text() == Path("/usr/share/common-licenses/Apache-2.0").read_text()
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tmp_path)], check=True)
    copyright = (tmp_path / "usr/share/doc/localauth/copyright").read_text()
    assert "no-license-yet" not in copyright
    assert "\nLicense: Apache-2.0\n" in copyright
    # What each Swift binary holds from others' archives is named in its own stanza, and
    # every licence named there has its paragraph.
    stanzas = {p.split("\n", 1)[0]: p for p in copyright.split("\n\n")}
    helper = stanzas["Files: usr/libexec/localauth/localauth-helper"]
    ctl = stanzas["Files: usr/bin/localauthctl"]
    for part in ("Swift standard library", "libstdc++", "libaudit and libcap-ng", "libcrypt"):
        assert part in helper, part
    assert "libstdc++" in ctl and "libaudit" not in ctl
    assert helper.endswith("License: Apache-2.0 with Runtime Library Exception and "
                           "GPL-3+ with GCC-exception-3.1 and LGPL-2.1+")
    for licence in ("Apache-2.0 with Runtime Library Exception", "GPL-3+ with GCC-exception-3.1",
                    "LGPL-2.1+"):
        assert f"\nLicense: {licence}\n " in copyright, licence
    needed = subprocess.run(["readelf", "-d", "-W", str(tmp_path / HELPER[1:])], capture_output=True,
                            text=True, check=True).stdout
    for archived in ("libaudit", "libcap-ng", "libcrypt", "libstdc++"):
        assert archived not in needed, archived
    for name in ("sudo", "su", "login", "polkit-1", "screenlocker", "localauth", "gdm-fingerprint", "kde-fingerprint"):
        example = tmp_path / "usr/share/doc/localauth/examples/pam.d" / name
        assert example.read_text() == (REPO / "pam.d" / name).read_text(), name
    init = tmp_path / "usr/share/doc/localauth/examples/init.d/localauth"
    assert init.read_text() == (REPO / "etc/init.d/localauth").read_text()


def test_the_swift_binaries_are_bound_at_start(deb, tmp_path):
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tmp_path)], check=True)
    for path in (HELPER, CTL, SERVICE, MODULE):
        dynamic = subprocess.run(["readelf", "-d", "-W", str(tmp_path / path[1:])], capture_output=True,
                                 text=True, check=True).stdout
        assert "BIND_NOW" in dynamic or "Flags: NOW" in dynamic, (path, dynamic)
        headers = subprocess.run(["readelf", "-l", "-W", str(tmp_path / path[1:])], capture_output=True,
                                 text=True, check=True).stdout
        assert "GNU_RELRO" in headers, path


def test_swift_tools_version_matches_the_code():
    # The code uses typed throws (Swift 6): a 5.x tools version claims a compiler that
    # cannot build it.
    first = (REPO / "Package.swift").read_text().splitlines()[0]
    version = first.split(":", 1)[1].strip()
    assert int(version.split(".")[0]) >= 6, first
    assert "throws(" in (REPO / "Sources/LocalAuth/Store/FileStateStore.swift").read_text()


def test_the_message_catalogues_are_installed(deb, tmp_path):
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tmp_path)], check=True)
    for lang in ("en", "zh_CN", "zh_TW"):
        mo = tmp_path / f"usr/share/locale/{lang}/LC_MESSAGES/localauth.mo"
        assert mo.is_file(), mo
        # msgunfmt reads it back: the catalogue has the translations of po/LANG.po.
        text = subprocess.run(["msgunfmt", str(mo)], capture_output=True, text=True, check=True).stdout
        if lang == "zh_TW":
            assert "使用指紋前需要先輸入密碼" in text
