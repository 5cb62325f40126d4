"""README's first command, `scripts/demo`, as a new user runs it: every scene as expected
and nothing left behind. The demo drives the same sudo machine as the end-to-end tests but
checks the terminal's lines itself, so a changed message or a moved test helper breaks it
where no other test looks (both happened once)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ctl_support import REPO  # noqa: E402


def test_the_demo_plays_every_scene_and_leaves_nothing():
    r = subprocess.run([str(REPO / "scripts" / "demo")], capture_output=True, text=True,
                       timeout=600, stdin=subprocess.DEVNULL)
    tail = "\n".join(r.stdout.splitlines()[-40:]) + "\n" + r.stderr[-2000:]
    assert r.returncode == 0, tail
    assert "5/5 scenes as expected" in r.stdout, tail
    assert "left behind" not in r.stdout, tail
