"""The fixtures of the localauthctl tests (test_localauthctl, _switch, _doctor), imported by
each of them:

* ``ctl_binary``: the tool under test (ctl_support.localauthctl_binary), once per run;
* ``account``: a ctl_support.ThrowawayAccount, removed after the test;
* ``ctl_on(ctl_binary, bed, account, tmp_path, config)``: the tool on the bed, with the
  account's right index finger enrolled as print f1, a root-only state directory and a
  configuration file holding ``config`` (what a file's own ``ctl`` fixture returns).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ctl_support import Ctl, ThrowawayAccount, localauthctl_binary  # noqa: E402


@pytest.fixture(scope="session")
def ctl_binary() -> str:
    return localauthctl_binary()


@pytest.fixture
def account():
    with ThrowawayAccount() as a:
        yield a


def ctl_on(ctl_binary, bed, account, tmp_path, config: str = "") -> Ctl:
    bed.enroll(account.name, "right-index-finger", "f1")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    path = tmp_path / "localauth.conf"
    path.write_text(config)
    path.chmod(0o644)
    return Ctl(ctl_binary, bed, state, path)
