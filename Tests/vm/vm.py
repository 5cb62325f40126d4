#!/usr/bin/env python3
"""vm.py: the VM tier's guest, by hand (root), for looking at a case the tests drive.

    Tests/vm/vm.py image [--desktop] [--deb FILE]   the cached image's directory (built if
                                                    missing)
    Tests/vm/vm.py shell [--desktop | --flavour plasma] [--deb FILE] [--prepare] [-- COMMAND]
        boots the image (-snapshot), copies the guest tools in, installs the .deb if given
        (--prepare: also enables the profiles and enrolls alice-rif and bob-rif, as the
        tests' fixture does), then runs root's shell in the guest (or COMMAND); the guest
        is powered off when it ends. Meanwhile, from another terminal:
          Tests/vm/qmp.py RUN_DIR/qmp.sock type 'la-run x sudo -k id\\n'   (tty1's keyboard)
          Tests/vm/qmp.py RUN_DIR/qmp.sock shot /tmp/screen.png        (the screen)
        and in the guest: la-screen 1, vscan.py needed | send alice-rif, la-observe ...
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guest import Guest  # noqa: E402
from images import ensure_image  # noqa: E402
from machine import Machine  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["image", "shell"])
    ap.add_argument("--desktop", action="store_true")
    ap.add_argument("--flavour", choices=("base", "desktop", "plasma"),
                    help="the image's flavour (plasma: SDDM and Plasma, booted graphical)")
    ap.add_argument("--deb", type=Path)
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("command", nargs="*")
    a = ap.parse_args()
    image = ensure_image(a.desktop, a.deb, flavour=a.flavour)
    graphical = a.desktop or a.flavour in ("desktop", "plasma")
    if a.what == "image":
        print(image)
        return 0
    with Machine(image, desktop=graphical) as m:
        print(f"guest up after {m.boot_seconds:.0f} s; port {m.port}; run directory {m.run_dir}",
              flush=True)
        g = Guest(m)
        if a.deb and a.prepare:
            g.prepare(a.deb, ("alice", "bob"))
        else:
            g.install_tools()
            if a.deb:
                m.put([a.deb], "/tmp/localauth.deb")
                g.sh("dpkg -i /tmp/localauth.deb")
        argv = m.ssh_argv("root", tty=True) + [" ".join(a.command)] if a.command else \
            m.ssh_argv("root", tty=True)
        return subprocess.call(argv)


if __name__ == "__main__":
    sys.exit(main())
