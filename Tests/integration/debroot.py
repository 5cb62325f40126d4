"""A clean Debian 12 root for the package's life cycle (test_package_lifecycle.py).

``DebianRoot`` makes one with mmdebstrap (minbase, plus the packages asked for) in a fresh
directory under /var/tmp and removes it on every exit path. It refuses to remove a
directory that still has anything mounted under it: it says so and leaves it, rather than
reach through a mount. The machine's own /etc, users and packages are never touched:
everything runs in the root through chroot(8).

mmdebstrap and every command in the root run in a PID namespace of their own, with a /proc
of that namespace mounted only in a mount namespace of their own (``ISOLATED``): a
maintainer script that stops a daemon by its executable (polkitd's postinst does, with
start-stop-daemon, where no systemd runs) must not find this machine's processes, such as
the polkitd of the test beds running beside.

``repacked(deb, out, version, edit)`` makes another version of a built package (the
"earlier release" an upgrade starts from): its tree unpacked with dpkg-deb, ``edit``
applied to it, the version changed, packed again.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Optional, Sequence

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8", "HOME": "/root",
       "DEBIAN_FRONTEND": "noninteractive"}


ISOLATED = ["unshare", "--pid", "--fork", "--kill-child"]


def _mounts_under(path: Path) -> list:
    prefix = str(path.resolve())
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].replace("\\040", " ")
            if point == prefix or point.startswith(prefix + "/"):
                found.append(point)
    return found


class DebianRoot:
    def __init__(self, include: Sequence[str] = ()):
        self.include = list(include)
        self.base: Optional[Path] = None
        self.root: Optional[Path] = None

    def __enter__(self) -> "DebianRoot":
        self.base = Path(tempfile.mkdtemp(prefix="la-debroot-", dir="/var/tmp"))
        self.root = self.base / "root"
        try:
            argv = ISOLATED + ["--mount-proc", "mmdebstrap", "--mode=root", "--variant=minbase", "--quiet"]
            if self.include:
                argv.append("--include=" + ",".join(self.include))
            proc = subprocess.run(argv + [SUITE, str(self.root), MIRROR], stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                raise RuntimeError(f"mmdebstrap failed ({proc.returncode}): {proc.stderr[-3000:]}")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.base is None:
            return
        left = _mounts_under(self.base)
        if left:
            raise RuntimeError(f"{self.base} still has mounts ({left}); not removed")
        shutil.rmtree(self.base)
        self.base = None

    def path(self, inside: str) -> Path:
        return self.root / inside.lstrip("/")

    def run(self, script: str, user: Optional[str] = None, input: Optional[str] = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
        """``sh -c script`` in the root, as root or (``user``) as that account with its groups."""
        argv = ISOLATED + [f"--mount-proc={self.root / 'proc'}", "chroot", str(self.root)]
        if user is not None:
            argv += ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"]
        return subprocess.run(argv + ["/bin/sh", "-c", script], input=input, capture_output=True,
                              text=True, timeout=timeout, env=ENV)

    def copy_in(self, source: Path, inside: str) -> str:
        target = self.path(inside)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        return inside


def repacked(deb: Path, out: Path, version: str, edit: Callable[[Path], None]) -> Path:
    tree = out / "tree"
    subprocess.run(["dpkg-deb", "-R", str(deb), str(tree)], check=True)
    control = tree / "DEBIAN" / "control"
    lines = [f"Version: {version}" if l.startswith("Version: ") else l
             for l in control.read_text().splitlines()]
    control.write_text("\n".join(lines) + "\n")
    edit(tree)
    # md5sums must match what the edit changed.
    sums = subprocess.run(["sh", "-c", "find . -path ./DEBIAN -prune -o -type f -printf '%P\\0' "
                           "| LC_ALL=C sort -z | xargs -0 md5sum"], cwd=tree, capture_output=True,
                          text=True, check=True).stdout
    (tree / "DEBIAN" / "md5sums").write_text(sums)
    target = out / f"{deb.name.split('_')[0]}_{version}_{deb.name.rsplit('_', 1)[1]}"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(tree), str(target)],
                   check=True, capture_output=True)
    shutil.rmtree(tree)
    return target
