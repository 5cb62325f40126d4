"""git commit signing with the finger: the real git and ssh-keygen against localauthd's
ssh-agent socket (sshbed.py), the virtual reader.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_git_signing.py

* ``git -c gpg.format=ssh -c user.signingkey=key::LINE commit -S``: one matching finger,
  the prompt on git's terminal says it signs a git commit, names the key and the program
  chain from git; then ``git verify-commit`` with the ``allowed_signers`` line localauthctl
  printed: ``Good "git" signature``; ``localauthctl ssh log`` has the use.
* A wrong finger three times: no commit is made, nothing signed.
"""
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from sshbed import AgentMachine  # noqa: E402
from messages import ENROLLED, OTHER  # noqa: E402
from installations import shared_inst  # noqa: E402,F401  (the inst fixture)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")

SIGN_A_GIT_COMMIT = "sign a git commit"
PRINCIPAL = "tester@example.org"    # sshbed's git user.email


def flat(output: str) -> str:
    return " ".join(system.screen_lines(output))


@pytest.fixture
def m(inst, bed):
    with AgentMachine(inst, bed) as machine:
        yield machine


def commit_argv(m, repo, line, message):
    return m.home.git_signing_argv(repo, f"key::{line}", "commit", "-q", "-S", "--allow-empty", "-m", message)


def test_a_commit_signed_by_finger_verifies_with_the_printed_allowed_signers(m):
    line = m.create_key("git-signing", authorize=False)
    repo = m.home.git_repo()
    mark = m.bed.mark()
    pt = m.home.on_pty(commit_argv(m, repo, line, "signed by finger"))
    result = m.present(pt, ENROLLED)
    res = pt.finish(30)
    screen = flat(res.output)
    assert (result, res.status) == ("verify-match", 0), screen
    assert [e.args[0] for e in m.bed.events(mark) if e.name == "VerifyStatus"] == ["verify-match"]
    # The prompt, built by root: what is signed, which key, and who asks (git, then below it).
    assert f"SSH key git-signing: {SIGN_A_GIT_COMMIT}" in screen, screen
    assert re.search(r"requested by ssh-keygen \u2190 git\b", screen), f"no program chain from git: {screen}"
    signers_line = m.allowed_signers("git-signing", PRINCIPAL)
    assert signers_line.startswith(f"{PRINCIPAL} ") and " ".join(line.split()[:2]) in signers_line, signers_line
    signers = m.home.write(m.home.home / "allowed_signers", signers_line + "\n", 0o644)
    verified = m.home.git(repo, "verify-commit", "HEAD", allowed_signers=signers)
    assert verified.returncode == 0, verified.stderr
    assert f'Good "git" signature for {PRINCIPAL}' in verified.stderr, verified.stderr
    assert m.uses()[-1] == ("signed", f"SSH key git-signing: {SIGN_A_GIT_COMMIT}"), m.uses()


def test_three_wrong_fingers_make_no_commit(m):
    line = m.create_key("git-signing", authorize=False)
    repo = m.home.git_repo()
    pt = m.home.on_pty(commit_argv(m, repo, line, "never signed"))
    results = [m.present(pt, OTHER) for _ in range(3)]
    res = pt.finish(30)
    log = m.home.git(repo, "log", "--oneline")
    assert results == ["verify-no-match"] * 3
    assert res.status != 0, flat(res.output)
    assert log.returncode != 0 and "never signed" not in log.stdout, log   # no commit at all
