"""scripts/install and its --uninstall: what the uninstall removes is exactly what the install
put there, as its manifest lists it, and nothing else.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_install.py

Both scripts run from a private copy of the sources (system.source_copy) with the Swift
executables of this tree in its build/ and the module built there for the layout
(`scripts/build --c-only`). Nothing on the machine is edited:

* the self-contained layout (`--prefix`) goes into a throwaway directory that already holds
  files of someone else's, which must be there, unchanged, afterwards;
* the system layout goes into /usr, /etc and /var/lib as a private mount namespace sees
  them: each an overlay of the real one whose upper layer is the test's, so that what the
  install wrote and what the uninstall removed are read from the upper layers afterwards (a
  file of the machine's removed would be a whiteout there). `/run/systemd/system` exists in
  that namespace and `systemctl`, `aa-enabled` and `apparmor_parser` are recorders of the
  test's, so the units' stop and the profiles' unloading are seen, never done.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

REPO = system.REPO


@pytest.fixture(scope="module")
def work():
    """A throwaway directory (0755) holding the sources' copy ``work/src``."""
    top = Path(tempfile.mkdtemp(prefix="localauth-install-test-"))
    top.chmod(0o755)
    try:
        src = system.source_copy(REPO, top / "src")
        prebuilt = os.environ.get("LOCALAUTH_SKIP_BUILD") == "1"
        for rel, built in system.swift_executables(REPO, build=not prebuilt).items():
            if not built.is_file():
                raise RuntimeError(f"{built} is missing (run scripts/build)")
            (src / "build" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, src / "build" / rel)
        if (REPO / "build" / "debug").is_dir():
            shutil.copytree(REPO / "build" / "debug", src / "build" / "debug", dirs_exist_ok=True)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run(argv, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                       env=system.default_env(), **kw)
    assert p.returncode == 0, (argv, p.stdout, p.stderr)
    return p


def snapshot(top: Path) -> dict:
    """Every entry under ``top``: relative path -> (kind, mode, uid, gid, content hash)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            if stat.S_ISREG(st.st_mode):
                what = hashlib.sha256(p.read_bytes()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                what = os.readlink(p)
            else:
                what = ""
            out[str(p.relative_to(top))] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                                            st.st_uid, st.st_gid, what)
    return out


def someone_elses(top: Path) -> None:
    """Files and directories of someone else's where the product goes."""
    for rel, text in {"bin/other-tool": "#!/bin/sh\n", "etc/security/site.conf": "x = 1\n",
                      "libexec/other/helper": "other\n", "share/man/man8/other.8": ".TH OTHER 8\n",
                      "lib/security/pam_other.so": "not ours\n"}.items():
        p = top / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def manifest_entries(manifest: Path) -> tuple:
    files, dirs = set(), set()
    for line in manifest.read_text().splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "f":
            files.add(rest.partition(" ")[2])
        elif kind == "d":
            dirs.add(rest)
    return files, dirs


def install_prefix(work: Path, prefix: Path) -> subprocess.CompletedProcess:
    src = work / "src"
    run([src / "scripts" / "build", "--prefix", prefix, "--c-only"])
    return run([src / "scripts" / "install", "--prefix", prefix, "--no-build"])


def test_uninstall_removes_what_a_prefix_install_put_there_and_nothing_else(work):
    top = work / "opt"
    prefix = top / "localauth"
    someone_elses(prefix)
    before = snapshot(top)
    install_prefix(work, prefix)
    # Installed twice (an upgrade): the manifest still has what the first one made.
    install_prefix(work, prefix)
    manifest = prefix / "libexec/localauth/install-manifest"
    files, dirs = manifest_entries(manifest)
    for rel in ("lib/security/pam_localauth.so", "libexec/localauth/localauth-helper",
                "libexec/localauth/localauthd", "bin/localauthctl", "etc/security/localauth.conf",
                "share/polkit-1/actions/org.localauth.right.policy"):
        assert str(prefix / rel) in files, (rel, manifest.read_text())
    assert str(prefix / "libexec/localauth") in dirs and str(prefix / "etc/security/localauth.conf.d") in dirs
    assert any("/lib/debug/.build-id/" in f for f in files), files
    # Nothing of someone else's is listed, nor a directory that was there before.
    assert not any("other" in f or "site.conf" in f for f in files), files
    assert str(prefix / "bin") not in dirs and str(prefix) not in dirs, dirs
    out = run([work / "src/scripts/install", "--uninstall", "--prefix", prefix]).stdout
    assert "kept:" not in out, out
    assert snapshot(top) == before
    # Once more: nothing is left to remove, and it says so.
    again = subprocess.run([work / "src/scripts/install", "--uninstall", "--prefix", prefix],
                           capture_output=True, text=True, env=system.default_env())
    assert again.returncode == 1 and "nothing here was installed by scripts/install" in again.stderr


def test_what_the_administrator_changed_or_added_is_kept(work):
    top = work / "opt2"
    prefix = top / "localauth"
    top.mkdir()
    before = snapshot(top)
    install_prefix(work, prefix)
    conf = prefix / "etc/security/localauth.conf"
    conf.write_text(conf.read_text() + "scan_timeout = 20\n")
    dropin = prefix / "etc/security/localauth.conf.d/10-site.conf"
    dropin.write_text("debug = yes\n")
    out = run([work / "src/scripts/install", "--uninstall", "--prefix", prefix]).stdout
    assert f"kept:    {conf}" in out and f"kept:    {dropin.parent}/ (not empty)" in out, out
    left = set(snapshot(top)) - set(before)
    assert left == {"localauth", "localauth/etc", "localauth/etc/security",
                    "localauth/etc/security/localauth.conf", "localauth/etc/security/localauth.conf.d",
                    "localauth/etc/security/localauth.conf.d/10-site.conf"}, sorted(left)


def test_a_manifest_naming_a_file_elsewhere_or_open_to_others_is_not_used(work):
    """The manifest says what root removes: one that names a file outside the prefix, or
    that someone else could have written, is refused whole, and nothing is removed."""
    top = work / "opt3"
    prefix = top / "localauth"
    top.mkdir()
    install_prefix(work, prefix)
    victim = work / "victim"
    victim.write_text("someone else's\n")
    manifest = prefix / "libexec/localauth/install-manifest"
    original = manifest.read_text()
    digest = hashlib.sha256(victim.read_bytes()).hexdigest()
    for text, mode, said in ((original + f"f {digest} {victim}\n", 0o644, f"names {victim}, outside"),
                             (original + f"f {digest} {prefix}/../victim\n", 0o644, "outside"),
                             (original, 0o666, "not root's alone")):
        manifest.write_text(text)
        manifest.chmod(mode)
        before = snapshot(work / "opt3")
        p = subprocess.run([work / "src/scripts/install", "--uninstall", "--prefix", prefix],
                           capture_output=True, text=True, env=system.default_env())
        assert p.returncode == 1 and said in p.stderr, (p.stdout, p.stderr)
        assert victim.is_file() and snapshot(work / "opt3") == before
    manifest.write_text(original)
    manifest.chmod(0o644)
    run([work / "src/scripts/install", "--uninstall", "--prefix", prefix])
    assert not prefix.exists() and victim.is_file()


# The system layout's install and uninstall in a private mount namespace: /usr, /etc and
# /var/lib overlays whose upper layers are the test's, /run a tmpfs where systemd seems to
# run, the recorders first on PATH.
IN_NAMESPACE = r"""
set -eu
w=$1
for t in usr etc var/lib; do
    n=$(echo "$t" | tr / _)
    mkdir -p "$w/layers/$n/upper" "$w/layers/$n/work"
    mount -t overlay overlay -o "lowerdir=/$t,upperdir=$w/layers/$n/upper,workdir=$w/layers/$n/work" "/$t"
done
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/system
export PATH="$w/fake:$PATH"
"$w/src/scripts/install" --no-build > "$w/install.out"
{ find /usr/libexec/localauth; find /etc/apparmor.d /usr/lib/systemd/system -name '*localauth*'; } > "$w/installed.list"
"$w/src/scripts/install" --uninstall > "$w/uninstall.out"
"""

RECORDER = """#!/bin/sh
# what the test sees of {name}: its arguments, and whether the unit files and the
# profiles were still there
echo "{name} $* units=$([ -e /usr/lib/systemd/system/localauth.socket ] && echo there || echo gone)" \
  "profiles=$([ -e /etc/apparmor.d/usr.libexec.localauth.localauthd ] && echo there || echo gone)" >> {log}
exit 0
"""


def upper_leftovers(layers: Path) -> tuple:
    """What the overlays' upper layers hold: (files, whiteouts); a directory copied up from
    the machine's is neither."""
    files, whiteouts = [], []
    for dirpath, _, filenames in os.walk(layers):
        if "/work" in dirpath[len(str(layers)):]:
            continue
        for name in filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                whiteouts.append(str(p))
            else:
                files.append(str(p))
    return files, whiteouts


def test_the_system_layouts_uninstall_stops_the_units_unloads_the_profiles_and_removes_only_its_own(work):
    ours = ["/usr/libexec/localauth", "/usr/bin/localauthctl", "/etc/security/localauth.conf",
            "/etc/pam.d/localauthctl", "/var/lib/localauth", "/usr/lib/systemd/system/localauth.socket"]
    if any(os.path.lexists(p) for p in ours):
        pytest.skip("the product is installed on this machine: an uninstall would rightly remove it")
    ns = work / "ns"
    ns.mkdir()
    (ns / "src").symlink_to(work / "src")
    fake = ns / "fake"
    fake.mkdir()
    log = ns / "calls.log"
    for name in ("systemctl", "aa-enabled", "apparmor_parser"):
        (fake / name).write_text(RECORDER.format(name=name, log=log))
        (fake / name).chmod(0o755)
    run([work / "src/scripts/build", "--c-only"])
    run(["unshare", "--mount", "--propagation", "private", "sh", "-c", IN_NAMESPACE, "sh", ns])
    installed = (ns / "installed.list").read_text().split()
    for path in ("/usr/libexec/localauth/localauth-helper", "/usr/libexec/localauth/install-manifest",
                 "/usr/lib/systemd/system/localauth.socket", "/usr/lib/systemd/system/localauth.service",
                 "/etc/apparmor.d/usr.libexec.localauth.localauthd",
                 "/etc/apparmor.d/usr.libexec.localauth.localauth-helper"):
        assert path in installed, installed
    calls = log.read_text().splitlines()
    # The install loaded the profiles; the uninstall stopped and disabled the units and
    # unloaded the profiles while their files were there, then reloaded systemd.
    assert calls[0].startswith("aa-enabled --quiet") and calls[1].startswith("apparmor_parser -r -T -W"), calls
    rest = calls[2:]
    assert rest[0] == ("systemctl disable --now localauth.socket localauth.service localauth-ssh-agent.socket"
                       " units=there profiles=there"), rest
    assert rest[1].startswith("aa-enabled --quiet")
    unloads = [c for c in rest if c.startswith("apparmor_parser -R")]
    assert sorted(c.split()[2] for c in unloads) == ["/etc/apparmor.d/usr.libexec.localauth.localauth-helper",
                                                     "/etc/apparmor.d/usr.libexec.localauth.localauthd"], rest
    assert all(c.endswith("profiles=there") for c in unloads), rest
    assert rest[-1] == "systemctl daemon-reload units=gone profiles=gone", rest
    # Nothing is left in the upper layers, and nothing of the machine's was removed.
    files, whiteouts = upper_leftovers(ns / "layers")
    assert files == [] and whiteouts == [], (files, whiteouts, (ns / "uninstall.out").read_text())
    out = (ns / "uninstall.out").read_text()
    assert "kept:" not in out and "removed: /var/lib/localauth/" in out, out
