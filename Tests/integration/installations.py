"""The product installed for a test file: the ``inst`` fixture, in the form the file needs.
A file imports one of them (the fixture's name is ``inst`` either way):

* ``shared_inst``: ``system.shared_installation()``, one installation for the whole process
  (root callers: a test starts a localauthd of its own with the installation's helper,
  real_helper.LocalService, and names it in the module's arguments, ``service=SOCKET``);
* ``service_inst``: a ``servicebed.ServiceInstallation`` of the file's own (a module that
  names the installation's own localauthd socket, which a test starts when it needs it,
  and a root configuration that its tests write), removed at the file's end.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from servicebed import ServiceInstallation  # noqa: E402


@pytest.fixture(scope="module", name="inst")
def shared_inst():
    return system.shared_installation()


@pytest.fixture(scope="module", name="inst")
def service_inst():
    with ServiceInstallation() as i:
        yield i
