"""The guest images, built once and kept in a cache keyed on what they are built from.

    image = ensure_image(desktop=False, deb=Path("build/vm/deb/localauth_0.1.0_amd64.deb"))
    image = ensure_image(desktop=False, deb=..., suite="bookworm")
    image = ensure_image(flavour="plasma", deb=...)

Three flavours: ``base`` (consoles, sshd, sudo, polkit, fprintd), ``desktop`` (base and
packages-desktop: GDM 48, GNOME 48) and ``plasma`` (base and image/plasma/packages: Plasma 6,
SDDM, Konsole, polkit-kde-agent-1). A flavour's own files live in ``image/FLAVOUR/`` and only
that flavour's key hashes them: the plasma flavour came without a change to the files every
key hashes, so the cached base and desktop images kept their keys. It is built by the same
build.sh and setup.sh as base (its packages through ``--include``); what its Plasma needs set
for the tests (no splash, no key repeat, no idle lock) is per user and written by
Tests/vm/plasma.py before each login.

The guest is Debian 13 (``SUITE``) unless a test file asks for another suite (Debian 12 for
test_bookworm.py): its sources are the host's apt sources with every suite renamed
(``bookworm-security`` becomes ``trixie-security``; the identity for the host's own suite),
so the guest comes from the mirror the host uses. The key is a hash of Tests/vm/image/ (build.sh, setup.sh,
unpack-kernel.py, the package lists), the suite, those derived sources, the flavour, and the
product's Depends (read from the .deb's control file, so a new library dependency brings a
new image, while a code change does not: the .deb itself is installed into each boot). A
cached image is used only when its ``built`` file names the suite (an image from older
inputs, whose key might collide, is never booted); a missing one is built (about 4 min on
2 cores with the desktop) into a temporary
directory and renamed into place when complete, under a lock, so two runs never build the
same key at once nor see half an image. Images of the same flavour and suite with another
key are removed after a build (one image per flavour and suite on disk, about 1 GB each):
a Debian 12 image and a Debian 13 one of the same flavour are both kept.

``LOCALAUTH_VM_CACHE`` names the cache (default /var/cache/localauth-vm; keep it outside
every repository). ``LOCALAUTH_VM_SOURCES``: the apt sources the guest's are derived from
(default the host's).
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
IMAGE_SRC = HERE / "image"
# Debian 13: systemd 257, polkit 126, GNOME 48, OpenSSH 10. Debian 12 is what the host-side
# integration tests run on; the guest covers the release users install now (README.md).
# LOCALAUTH_VM_SUITE=sid: Debian's next release (polkit 128's socket-activated agent helper,
# systemd 262), for a run by hand; it has no -security or -updates suites, and the mirror's
# sid may be a snapshot whose Release has expired.
SUITE = os.environ.get("LOCALAUTH_VM_SUITE", "trixie")
if not re.fullmatch(r"[a-z]+", SUITE):
    raise SystemExit(f"LOCALAUTH_VM_SUITE: a Debian suite name, not {SUITE!r}")
SOURCES_DEFAULTS = (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))


class ImageError(RuntimeError):
    pass


def cache_root() -> Path:
    return Path(os.environ.get("LOCALAUTH_VM_CACHE", "/var/cache/localauth-vm"))


def apt_sources() -> Path:
    named = os.environ.get("LOCALAUTH_VM_SOURCES")
    if named:
        return Path(named)
    for p in SOURCES_DEFAULTS:
        if p.is_file() and p.stat().st_size > 0:
            return p
    raise ImageError("no apt sources for the guest (LOCALAUTH_VM_SOURCES=FILE)")


def guest_sources(suite: str = SUITE) -> str:
    """The apt sources' text with each suite renamed to suite's: the deb822 ``Suites:``
    fields and a one-line entry's third word ("bookworm-updates" -> "trixie-updates"). For
    sid, only the release itself (no -security, -updates), without Valid-Until checks."""
    def rename(word: str) -> str:
        return re.sub(r"^[a-z]+", suite, word)
    out = []
    for stanza in re.split(r"\n\s*\n", apt_sources().read_text()):
        lines = []
        for line in stanza.splitlines():
            m = re.match(r"(\s*Suites:\s*)(.*)$", line, re.I)
            if m:
                words = [w for w in m[2].split() if suite != "sid" or "-" not in w]
                if not words:
                    lines = None          # a -security stanza: sid has none
                    break
                line = m[1] + " ".join(rename(w) for w in words)
                if suite == "sid":
                    line += "\nCheck-Valid-Until: no"
            elif re.match(r"\s*deb(-src)?\s", line):
                words = line.split()
                uri = 1     # after "deb", or after its options ("[signed-by=... arch=...]")
                if words[1].startswith("["):
                    uri = next(i for i, w in enumerate(words) if w.endswith("]")) + 1
                if suite == "sid" and "-" in words[uri + 1]:
                    continue
                words[uri + 1] = rename(words[uri + 1])
                if suite == "sid":
                    words.insert(1, "[check-valid-until=no]") if uri == 1 else None
                line = " ".join(words)
            lines.append(line)
        if lines:
            out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def deb_depends(deb: Path) -> list[str]:
    """The package names of the .deb's Depends (the first of each set of alternatives)."""
    r = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True)
    if r.returncode != 0:
        raise ImageError(f"cannot read the control file of {deb}: {r.stderr.strip()}")
    names = []
    for item in r.stdout.split(","):
        name = item.split("|")[0].split("(")[0].strip().split(":")[0]
        if name:
            names.append(name)
    return sorted(set(names))


FLAVOURS = ("base", "desktop", "plasma")


def flavour_files(flavour: str) -> list[Path]:
    """The files of image/FLAVOUR/ (none for base and desktop, whose files are image/'s)."""
    own = IMAGE_SRC / flavour
    return sorted(f for f in own.iterdir() if f.is_file()) if own.is_dir() else []


def flavour_packages(flavour: str) -> list[str]:
    """The flavour's own package list (image/FLAVOUR/packages), comments left out."""
    own = IMAGE_SRC / flavour / "packages"
    if not own.is_file():
        return []
    return [w for line in own.read_text().splitlines() for w in line.split("#")[0].split()]


def image_key(flavour: str, include: list[str], suite: str = SUITE) -> str:
    """The hash of what the image is built from. Its first part is the same bytes as
    before flavours had files of their own (so base's and desktop's keys stayed)."""
    h = hashlib.sha256()
    h.update(flavour.encode())
    h.update(b"suite " + suite.encode() + b"\0")
    for f in sorted(IMAGE_SRC.iterdir()):
        if f.is_file():
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    for f in flavour_files(flavour):
        h.update(f"{flavour}/{f.name}".encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(guest_sources(suite).encode())
    h.update(",".join(include).encode())
    return h.hexdigest()[:16]


def ensure_image(desktop: bool = False, deb: Optional[Path] = None,
                 log=sys.stderr, suite: str = SUITE, flavour: Optional[str] = None) -> Path:
    if not re.fullmatch(r"[a-z]+", suite):
        raise ImageError(f"a Debian suite name, not {suite!r}")
    include = deb_depends(deb) if deb is not None else []
    flavour = flavour or ("desktop" if desktop else "base")
    if flavour not in FLAVOURS:
        raise ImageError(f"no image flavour {flavour!r} ({', '.join(FLAVOURS)})")
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{flavour}-{image_key(flavour, include, suite)}"
    with open(root / f".{flavour}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _built_suite(final) == suite:
            return final
        _build(final, flavour == "desktop", include + flavour_packages(flavour), log, suite)
        _prune(root, flavour, suite, keep=final)
    return final


def _built_suite(image: Path) -> Optional[str]:
    """The suite a complete image says it was built from (its ``built`` file); None for an
    image not complete, or built before the file named its suite (Debian 12)."""
    try:
        fields = dict(line.split(" ", 1) for line in (image / "built").read_text().splitlines()
                      if " " in line)
    except OSError:
        return None
    return fields.get("suite")


def _build(final: Path, desktop: bool, include: list[str], log, suite: str) -> None:
    tmp = final.with_name(f".{final.name}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    # Beside the image, not in it: build.sh wants an empty output directory.
    sources = final.with_name(f".{final.name}.{os.getpid()}.sources")
    sources.write_text(guest_sources(suite))
    argv = ["bash", str(IMAGE_SRC / "build.sh"), str(tmp), "--suite", suite,
            "--sources", str(sources)]
    if desktop:
        argv.append("--desktop")
    if include:
        argv += ["--include", ",".join(include)]
    print(f"images: building {final.name} (no cached image for this key); log: "
          f"{final}.build.log", file=log, flush=True)
    started = time.monotonic()
    build_log = final.with_name(final.name + ".build.log")
    try:
        with open(build_log, "w") as out:
            r = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        sources.unlink(missing_ok=True)
    if r.returncode != 0 or _built_suite(tmp) != suite:
        shutil.rmtree(tmp, ignore_errors=True)
        tail = "\n".join(build_log.read_text(errors="replace").splitlines()[-30:])
        raise ImageError(f"building the {final.name} image failed ({r.returncode}); "
                         f"{build_log}:\n{tail}")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    print(f"images: built {final} in {time.monotonic() - started:.0f} s", file=log, flush=True)


def _prune(root: Path, flavour: str, suite: str, keep: Path) -> None:
    """The flavour's other images of this suite, and those that name none (built before
    ``built`` named the suite): another suite's image is another test file's guest."""
    for old in root.glob(f"{flavour}-*"):
        if old != keep and old.is_dir() and _built_suite(old) in (suite, None):
            shutil.rmtree(old, ignore_errors=True)
            old.with_name(old.name + ".build.log").unlink(missing_ok=True)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="print the cached image's directory, building it if missing")
    ap.add_argument("--desktop", action="store_true")
    ap.add_argument("--flavour", choices=FLAVOURS, help="base, desktop (as --desktop) or plasma")
    ap.add_argument("--deb", type=Path, help="the product's .deb (its Depends go into the image)")
    ap.add_argument("--suite", default=SUITE, help=f"the Debian suite (default {SUITE})")
    a = ap.parse_args()
    try:
        print(ensure_image(a.desktop, a.deb, suite=a.suite, flavour=a.flavour))
    except ImageError as e:
        sys.exit(f"images: {e}")
