"""A finger presented the way a person at a terminal presents it, for the end-to-end tests
that drive pamtester, sudo, su or login on a pseudo-terminal (pexpect).

* ``ASK_FINGER``: the line naming the finger (English or Chinese); ``SKIP_PROMPT``: the
  prompt after it that says how to skip to the password;
* ``is_hint(line)``: whether a screen line is that skip hint;
* ``present(pt, bed, print_id)``: the scan, once both are on the terminal.
"""
import re


def is_hint(line):
    """The line that tells how to skip to the password while the reader waits (its
    wording and how often it shows are the helper's business, not these tests')."""
    return re.fullmatch(r"[(（].*[)）]", line) is not None


# On a terminal the helper asks for the finger with a line naming it, then a prompt that
# says how to skip to the password (the application then reads the terminal).
ASK_FINGER = re.compile(r"(Swipe|Place) your [a-z ]+ (across|on) the fingerprint reader"
                        r"|请在指纹读取器上划动|请将\S+放在指纹读取器上")
SKIP_PROMPT = re.compile(r"[(（][^\r\n]*[)）] ?")


def present(pt, bed, print_id, timeout=15):
    """Puts a finger on the reader the way a person does: once the terminal asks for it
    (the line naming the finger and the skip prompt after it are shown), not merely once
    fprintd waits. Returns the result (verify-match, verify-no-match, ...)."""
    pt.expect(ASK_FINGER, timeout=timeout)
    pt.expect(SKIP_PROMPT, timeout=timeout)
    return bed.reader.inject(f"SCAN {print_id}", timeout=timeout)
