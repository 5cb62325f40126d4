"""The product installed for a test file: the ``inst`` fixture, in the form the file needs.
A file imports one of them (the fixture's name is ``inst`` either way):

* ``shared_inst``: ``system.shared_installation()``, one installation for the whole process
  (root callers: the module runs the helper itself);
* ``launcher_inst``: a ``launcherbed.LauncherInstallation`` of the file's own (the setuid
  launcher, and a root configuration that its tests write), removed at the file's end.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from launcherbed import LauncherInstallation  # noqa: E402


@pytest.fixture(scope="module", name="inst")
def shared_inst():
    return system.shared_installation()


@pytest.fixture(scope="module", name="inst")
def launcher_inst():
    with LauncherInstallation() as i:
        yield i
