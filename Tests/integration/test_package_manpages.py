"""The man pages (man/*.scd, scdoc): they build, groff and man find nothing to warn about,
and they document what the tool and the configuration really have."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ctl_support import REPO, localauthctl_binary  # noqa: E402

SOURCES = sorted((REPO / "man").glob("*.scd"))
ENV = {**os.environ, "LC_ALL": "C.UTF-8", "MANWIDTH": "80"}


def test_the_four_pages_are_there():
    assert [p.name for p in SOURCES] == ["localauth.conf.5.scd", "localauthctl.8.scd",
                                         "localauthd.8.scd", "pam_localauth.8.scd"]


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("man")
    built = {}
    for src in SOURCES:
        page = out / src.stem  # localauthctl.8
        with open(src, "rb") as fin, open(page, "wb") as fout:
            subprocess.run(["scdoc"], stdin=fin, stdout=fout, check=True)
        built[src.stem] = page
    return built


@pytest.mark.parametrize("name", [p.stem for p in SOURCES])
def test_groff_has_no_warning(pages, name):
    proc = subprocess.run(["groff", "-ww", "-man", "-z", "-Tutf8", str(pages[name])],
                          capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("name", [p.stem for p in SOURCES])
def test_man_has_no_warning(pages, name):
    proc = subprocess.run(["man", "--warnings", "-l", str(pages[name])],
                          capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    title, section = name.rsplit(".", 1)
    assert proc.stdout.startswith(f"{title}({section})"), proc.stdout[:200]
    assert "NAME" in proc.stdout and "SEE ALSO" in proc.stdout


def test_localauthctl_page_has_every_command_and_exit_code():
    text = (REPO / "man" / "localauthctl.8.scd").read_text()
    usage = subprocess.run([localauthctl_binary(), "--help"], capture_output=True, text=True,
                           check=True).stdout
    commands = re.findall(r"^  (\w+) ", usage, re.M)
    codes = re.findall(r"^  (\d+) ", usage, re.M)
    assert commands and codes
    # Each under COMMANDS, as the entry that starts a paragraph there (not just named).
    section = text.split("# COMMANDS", 1)[1].split("\n# ", 1)[0]
    for command in [c for c in commands if not c.isdigit()]:
        assert re.search(rf"^\*{command}\*", section, re.M), command
    exit_section = text.split("# EXIT STATUS", 1)[1].split("\n# ", 1)[0]
    assert re.findall(r"^\*(\d+)\*$", exit_section, re.M) == codes


def test_config_page_has_every_option_of_the_shipped_file():
    text = (REPO / "man" / "localauth.conf.5.scd").read_text()
    keys = re.findall(r"^#(\w+) =", (REPO / "etc" / "localauth.conf").read_text(), re.M)
    assert len(keys) >= 20, keys
    for key in keys:
        assert f"*{key}*" in text, key


@pytest.mark.parametrize("name,sections", [
    ("pam_localauth.8", ["MODULE TYPES PROVIDED", "RETURN VALUES", "FILES", "ENVIRONMENT", "LOGGING"]),
    ("localauthctl.8", ["EXIT STATUS", "FILES", "ENVIRONMENT"]),
    ("localauth.conf.5", ["FILES"]),
    ("localauthd.8", ["FILES", "LOGGING", "EXIT STATUS"]),
])
def test_pages_have_the_sections_an_administrator_looks_for(pages, name, sections):
    text = subprocess.run(["man", "-l", str(pages[name])], capture_output=True, text=True, env=ENV).stdout
    headings = [l.strip() for l in text.splitlines() if l and not l[0].isspace()]
    for section in sections:
        assert section in headings, (name, section, headings)


def test_return_values_are_the_result_tables():
    """Every PAM code the module's table and its account phase can return is documented, and no
    other."""
    table = (REPO / "Sources/pam_localauth/result_map.c").read_text()
    returned = set(re.findall(r"\b(PAM_[A-Z_]+)\b", table.split("la_result_table[]", 1)[1].split("};", 1)[0]))
    returned |= {"PAM_AUTHINFO_UNAVAIL"}  # LA_UNAVAIL
    # The account phase's one answer, whatever happened (pam_localauth.c).
    entry = (REPO / "Sources/pam_localauth/pam_localauth.c").read_text()
    returned |= set(re.findall(r"la_account_answer = (PAM_[A-Z_]+);", entry))
    text = (REPO / "man" / "pam_localauth.8.scd").read_text()
    section = text.split("# RETURN VALUES", 1)[1].split("\n# ", 1)[0]
    documented = set(re.findall(r"^\*(PAM_[A-Z_]+)\*$", section, re.M))
    assert documented == returned, (documented, returned)


def _code_blocks(text: str) -> list:
    blocks, current = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_every_service_file_example_has_the_lines_the_product_needs():
    """The README's and pam_localauth(8)'s examples of a service that clears lockouts: the
    module line, the authsucc line, the account line, and none that fails the stack
    without the module."""
    readme = (REPO / "README.md").read_text()
    man = (REPO / "man" / "pam_localauth.8.scd").read_text()
    blocks = [b for b in _code_blocks(readme) + _code_blocks(man) if "pam_localauth.so" in b
              and "authsucc" in b and ("@include common-auth" in b or "pam_unix.so" in b)]
    assert len(blocks) >= 3, blocks
    for block in blocks:
        lines = [l.split() for l in block.splitlines() if l.strip()]
        ours = [l for l in lines if len(l) >= 3 and l[2] == "pam_localauth.so"]
        assert ["auth", "sufficient"] in [l[:2] for l in ours if len(l) == 3], block
        assert ["auth", "optional", "pam_localauth.so", "authsucc"] in [l[:4] for l in ours], block
        assert ["account", "optional"] in [l[:2] for l in ours], block
        assert not [l for l in ours if l[1] in ("required", "requisite")], block
