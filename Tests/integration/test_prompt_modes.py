"""No more waiting for the fingerprint to give up: the prompts shown while the reader waits,
with the real setuid sudo and su on a pseudo-terminal, the installed module and helper, and
the real fprintd with the virtual reader.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_prompt_modes.py

* default mode on a terminal: "(or press Enter to use your password)" while the reader
  waits; Enter skips at once, a finger ends the prompt by itself;
* `prompt=concurrent`: "Password or fingerprint: "; a typed password goes to pam_unix
  (try_first_pass) with no second prompt and the scan stops; a finger authenticates;
* nobody at the reader: `sudo -S` with the password from a pipe, a closed lid: no scan;
* sudo's password retries (the same PAM handle): no second scan;
* the reader busy with another client: one line, then the password at once.
"""
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from messages import ENROLLED, OTHER  # noqa: E402
from sudo_machine import SudoSetup, requisite_stack  # noqa: E402

SKIP_PROMPT = r"\(or press Enter to use your password\) "
BOTH_PROMPT = "Password or fingerprint: "
SUDO_PROMPT = r"\[sudo\] password for \S+: "
BUSY = "The fingerprint reader is in use by another session - use your password"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


class Stack(SudoSetup):
    """A sudo_machine.SudoSetup with `extra` module arguments and a 15 s scan timeout, where
    the user already entered the password once."""

    service_prefix = "la-prompt-"

    def __init__(self, extra=(), password_module="pam_unix.so nodelay try_first_pass"):
        super().__init__(scan_timeout=15, extra=extra,
                         stack=lambda module, args: requisite_stack(module, args, password_module))

    def _setup(self):
        super()._setup()
        self.password_once()

    def sudo(self, argv=("id", "-un"), shell=None):
        cmd = ["sh", "-c", shell] if shell else ["sudo", "-k", *argv]
        return system.run_on_pty(cmd, user=self.user)

    def sudo_at_the_reader(self, prompt=SKIP_PROMPT):
        """sudo, once it shows ``prompt`` and the reader waits for a finger."""
        run = self.sudo()
        run.expect(prompt)
        assert self.bed.wait_finger_needed(), "the reader never waited for a finger"
        return run

    def password_once(self):
        """A user never seen enters the password first; after it the finger is accepted."""
        run = self.sudo()
        run.expect(SUDO_PROMPT)
        run.sendline(self.user.password)
        result = run.finish()
        assert result.status == 0, result.output

    def scans_started(self, since):
        return [e for e in self.bed.events(since) if e.name == "VerifyFingerSelected"]

    def reader_free(self):
        """Whether another client can claim the reader now (our claim was released)."""
        try:
            with self.bed.hold_claim("root"):
                return True
        except Exception:
            return False

    def failures(self):
        text = (self.state / f"{self.user.name}.state").read_text()
        return int(text.split("failures=")[1].split("\n")[0])


def lines(output):
    return system.screen_lines(output)


# --- the default mode on a terminal -----------------------------------------------------

def test_a_finger_ends_the_enter_to_skip_prompt_by_itself():
    with Stack() as s:
        mark = s.bed.mark()
        run = s.sudo()
        run.expect(SKIP_PROMPT)
        s.bed.scan(ENROLLED)
        result = run.finish()
        assert result.status == 0, result.output
        assert "root" in lines(result.output)
        assert "password for" not in result.output
        assert len(s.scans_started(mark)) == 1
        # sudo passes PAM_SILENT: the instructions show, the chatter does not.
        assert "Swipe your right index finger across the fingerprint reader" in lines(result.output)
        assert "Fingerprint recognized" not in lines(result.output)


def test_enter_skips_to_the_password_at_once_and_stops_the_scan():
    with Stack() as s:
        mark = s.bed.mark()
        run = s.sudo_at_the_reader()
        run.sendline("")
        run.expect(SUDO_PROMPT)
        assert s.reader_free()  # the scan was stopped and the reader released
        assert s.failures() == 0  # skipping is not a failed match
        run.sendline(s.user.password)
        result = run.finish()
        assert result.status == 0, result.output
        assert "root" in lines(result.output)
        assert len(s.scans_started(mark)) == 1


def test_a_password_typed_at_the_enter_prompt_is_not_shown_and_is_taken_once():
    """Every sudo user's habit: the password typed at whatever prompt comes. It must not
    show on the screen (scrollback, screen shares), and it is the password: no second
    prompt."""
    with Stack() as s:
        run = s.sudo_at_the_reader()
        run.sendline(s.user.password)
        result = run.finish()
        assert result.status == 0, result.output
        assert "root" in lines(result.output)
        assert s.user.password not in result.output      # not echoed
        assert "password for" not in result.output      # pam_unix took PAM_AUTHTOK
        assert s.reader_free() and s.failures() == 0


def test_a_wrong_password_typed_at_the_enter_prompt_gets_sudos_own_retry():
    with Stack() as s:
        run = s.sudo_at_the_reader()
        run.sendline("not-the-password")
        run.expect(SUDO_PROMPT)
        run.sendline(s.user.password)
        result = run.finish()
        assert result.status == 0, result.output
        assert "not-the-password" not in result.output
        assert "Sorry, try again." in result.output


def test_a_wrong_finger_is_said_and_the_prompt_comes_back():
    with Stack() as s:
        run = s.sudo()
        run.expect(SKIP_PROMPT)
        s.bed.scan(OTHER)
        run.expect("Fingerprint not recognized - 2 tries left")
        run.expect(SKIP_PROMPT)
        s.bed.scan(ENROLLED)
        result = run.finish()
        assert result.status == 0, result.output
        assert s.failures() == 0


# --- prompt=concurrent --------------------------------------------------------------------

def test_a_password_typed_during_the_scan_is_taken_without_a_second_prompt():
    with Stack(extra=["prompt=concurrent"]) as s:
        run = s.sudo_at_the_reader(BOTH_PROMPT)
        run.sendline(s.user.password)
        result = run.finish()
        assert result.status == 0, result.output
        assert "root" in lines(result.output)
        assert "password for" not in result.output  # pam_unix took PAM_AUTHTOK
        assert result.output.count(BOTH_PROMPT) == 1
        assert s.reader_free()


def test_a_finger_touched_at_the_concurrent_prompt_authenticates():
    with Stack(extra=["prompt=concurrent"]) as s:
        run = s.sudo()
        run.expect(BOTH_PROMPT)
        s.bed.scan(ENROLLED)
        result = run.finish()
        assert result.status == 0, result.output
        assert "root" in lines(result.output)
        assert "password for" not in result.output


def test_wrong_fingers_at_the_concurrent_prompt_count_and_the_password_still_works():
    with Stack(extra=["prompt=concurrent"]) as s:
        run = s.sudo()
        run.expect(BOTH_PROMPT)
        for _ in range(3):
            s.bed.scan(OTHER)
        run.sendline(s.user.password)
        result = run.finish()
        assert result.status == 0, result.output
        assert "Fingerprint not recognized - use your password" in lines(result.output)
        assert s.failures() == 0  # three failures counted, then the authsucc line cleared them


def test_a_wrong_password_at_the_concurrent_prompt_is_refused():
    with Stack(extra=["prompt=concurrent"]) as s:
        run = s.sudo_at_the_reader(BOTH_PROMPT)
        run.sendline("not-the-password")
        # sudo tries again with a fresh stack run: the finger is not asked for again.
        run.expect(SUDO_PROMPT)
        run.sendline("still-wrong")
        run.expect(SUDO_PROMPT)
        run.sendline("wrong-thrice")
        result = run.finish()
        assert result.status != 0
        assert "root" not in lines(result.output)


# --- nobody at the reader -----------------------------------------------------------------

def test_sudo_dash_s_with_a_piped_password_never_starts_a_scan():
    with Stack() as s:
        mark = s.bed.mark()
        started = time.monotonic()
        run = s.sudo(shell=f"printf '%s\\n' '{s.user.password}' | sudo -k -S id -un")
        result = run.finish()
        assert result.status == 0, result.output
        assert lines(result.output)[-1].endswith("root")  # sudo -S prompts on stderr, no newline
        assert s.scans_started(mark) == []
        assert "Swipe" not in result.output
        assert time.monotonic() - started < 10


def test_a_closed_lid_skips_the_scan_and_an_open_one_does_not():
    with tempfile.NamedTemporaryFile("w", prefix="localauth-lid-", suffix=".state") as lid:
        lid.write("state:      closed\n")
        lid.flush()
        os.chmod(lid.name, 0o644)
        with Stack(extra=[f"lid_path={lid.name}"]) as s:
            mark = s.bed.mark()
            run = s.sudo()
            run.expect(SUDO_PROMPT)
            run.sendline(s.user.password)
            result = run.finish()
            assert result.status == 0, result.output
            assert s.scans_started(mark) == []
            assert "fingerprint" not in result.output.lower()  # silent

            Path(lid.name).write_text("state:      open\n")
            run = s.sudo()
            run.expect(SKIP_PROMPT)
            s.bed.scan(ENROLLED)
            assert run.finish().status == 0


def test_sudos_password_retries_do_not_scan_again():
    with Stack() as s:
        mark = s.bed.mark()
        run = s.sudo_at_the_reader()
        run.sendline("")
        run.expect(SUDO_PROMPT)
        run.sendline("wrong")
        run.expect("Sorry, try again")
        run.expect(SUDO_PROMPT)
        run.sendline(s.user.password)
        result = run.finish()
        assert result.status == 0, result.output
        assert len(s.scans_started(mark)) == 1
        assert result.output.count("(or press Enter") == 1


def test_a_busy_reader_is_one_line_and_the_password_comes_at_once():
    with Stack() as s:
        with s.bed.hold_claim("root"):
            mark = s.bed.mark()
            started = time.monotonic()
            run = s.sudo()
            run.expect(SUDO_PROMPT)
            waited = time.monotonic() - started
            run.sendline(s.user.password)
            result = run.finish()
        assert result.status == 0, result.output
        assert BUSY in lines(result.output)
        assert s.scans_started(mark) == []
        assert waited < 5  # not the scan timeout (15 s)


# --- su -----------------------------------------------------------------------------------

def test_su_takes_a_password_typed_at_the_concurrent_prompt():
    with Stack(extra=["prompt=concurrent"]) as s, system.ThrowawayUser() as caller:
        overlay = s.enter_context(system.PamServiceOverlay(
            "su", ["auth sufficient pam_rootok.so"] + s.lines))
        run = system.run_on_pty(["su", "-", s.user.name, "-c", "id -un"], user=caller,
                                prefix=overlay.prefix)
        run.expect(BOTH_PROMPT)
        assert s.bed.wait_finger_needed()
        run.sendline(s.user.password)
        result = run.finish()
        assert result.status == 0, result.output
        assert s.user.name in lines(result.output)
        assert "Password:" not in result.output


def test_su_authenticates_with_a_finger_at_the_skip_prompt():
    with Stack() as s, system.ThrowawayUser() as caller:
        overlay = s.enter_context(system.PamServiceOverlay(
            "su", ["auth sufficient pam_rootok.so"] + s.lines))
        run = system.run_on_pty(["su", "-", s.user.name, "-c", "id -un"], user=caller,
                                prefix=overlay.prefix)
        run.expect(SKIP_PROMPT)
        s.bed.scan(ENROLLED)
        result = run.finish()
        assert result.status == 0, result.output
        assert s.user.name in lines(result.output)


# --- the reuse window ----------------------------------------------------------------------

def test_a_finger_is_reused_only_in_the_same_terminal_session():
    """reuse_duration: a second sudo in the same login session on the same terminal needs no
    new scan; a new session needs one, even on a terminal with the same name (a later
    window or login gets the same pts number or tty). The new session here takes over the
    very terminal of the first (setsid --ctty, as root), so the name is the same whatever
    terminals other processes open meanwhile."""
    with Stack(extra=["reuse_duration=120"]) as s:
        def as_user(commands):
            return shlex.join(system.as_user(s.user, ["sh", "-c", commands]))
        mark = s.bed.mark()
        run = system.run_on_pty(["sh", "-c", (
            as_user("tty && sudo -k id -un && echo second && sudo -k id -un")
            + " && echo first-session-ended && read go && setsid --ctty "
            + as_user("tty && sudo -k id -un"))])
        run.expect(SKIP_PROMPT)
        s.bed.scan(ENROLLED)
        run.expect("first-session-ended")      # the new session waits for our line
        first = lines(run.output)
        assert first.count("root") == 2, first
        assert len(s.scans_started(mark)) == 1  # the second sudo reused the first finger
        assert run.output.count("(or press Enter") == 1
        first_tty = first[0]

        mark = s.bed.mark()
        run.sendline("go")
        run.expect(SKIP_PROMPT)
        s.bed.scan(ENROLLED)
        result = run.finish()
        assert result.status == 0, result.output
        again = lines(result.output.partition("first-session-ended")[2])
        assert [l for l in again if l.startswith("/dev/")] == [first_tty], again
        assert len(s.scans_started(mark)) == 1


# --- a sudo that is not reading its terminal ----------------------------------------------

SHELL_PROMPT = "la-shell> "


class Shell:
    """An interactive bash of the throwaway user on its own terminal (job control on), and
    a marker file that only a command run by that shell could create."""

    def __init__(self, stack):
        # Where the user can write (pytest's own tmp_path is root's alone).
        self.dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="la-shell-")))
        self.dir.chmod(0o777)
        self.marker = self.dir / "ran"
        env = system.default_env(PS1=SHELL_PROMPT, HOME=str(self.dir))
        self.pt = system.run_on_pty(["bash", "--norc", "--noprofile", "-i"], user=stack.user,
                                    env=env)
        # Hung up with the test, before its user is removed: bash passes the hang-up on to
        # its jobs (the suspended or background sudo), so nothing of the user outlives it.
        stack.callback(self.pt.kill)
        self.pt.expect(SHELL_PROMPT)
        # The marker is a command the shell can run: entered, it does leave the file.
        self.pt.sendline(f"touch {self.dir}/can-write")
        self.pt.expect(SHELL_PROMPT)
        assert (self.dir / "can-write").exists()

    def half_type(self):
        """A command typed but not entered: only an Enter from someone else would run it."""
        self.pt.child.send(f"touch {self.marker}")

    def clear_line_and(self, command):
        self.pt.child.send("\x15")     # Ctrl-U: the half-typed line is gone
        self.pt.sendline(command)


def enter_never_reached_the_shell(stack, shell):
    """The finger matches while sudo is not reading its terminal; the shell must get no
    Enter. Then `fg`. (sudo itself gives up a password prompt it was suspended at: on
    `fg` it says "a password is required", with or without this module; what matters here
    is that nothing ran in the shell and the reader was not held.)"""
    shell.half_type()
    assert stack.bed.scan(ENROLLED) == "verify-match"
    time.sleep(2)                       # the old helper pressed Enter 10 times in 3 s
    assert not shell.marker.exists()
    assert stack.reader_free()          # released before waiting for the prompt's end
    shell.clear_line_and("fg")
    shell.pt.expect(SHELL_PROMPT, timeout=15)
    time.sleep(0.5)
    assert not shell.marker.exists()


def test_a_suspended_sudo_gets_no_enter_in_the_shell():
    with Stack() as s:
        shell = Shell(s)
        shell.pt.sendline("sudo -k id -un")
        shell.pt.expect(SKIP_PROMPT)
        assert s.bed.wait_finger_needed()
        shell.pt.child.sendcontrol("z")  # Ctrl-Z: sudo stops, the shell reads the terminal
        shell.pt.expect(SHELL_PROMPT)
        enter_never_reached_the_shell(s, shell)


def test_a_background_sudo_gets_no_enter_in_the_shell():
    with Stack() as s:
        shell = Shell(s)
        shell.pt.sendline("sudo -k id -un &")
        assert s.bed.wait_finger_needed()
        shell.pt.expect(SHELL_PROMPT)
        enter_never_reached_the_shell(s, shell)
