"""Who is at the reader, decided by the real logind (issue 19, docs: the presence rule).

One Debian 13 guest (systemd 257, logind, OpenSSH 10's sshd, sudo, polkit 126, tmux, fprintd
1.94 with the virtual reader) with the product's .deb installed and its pam-auth-update profiles enabled;
alice is logged in on tty1 (getty autologin: local, seat0, active). Each case drives a real
caller and compares what was observed, all at once, with what the rule says:

* whether fprintd's finger-needed turned true (a D-Bus monitor of the device: a scan was
  offered) and which fingers were then scanned (alice's enrolled one, as the person at the
  reader would);
* how many password prompts came and whether the command succeeded with the password;
* the module's line (``result=``, ``reason=``, ``pam=``) and, where counting matters,
  ``localauthctl status`` (failed matches, the last password).

The guest is booted once for this file; the reboot case is last.
"""
from __future__ import annotations

import contextlib
import json
import re
import shlex
import time
from pathlib import Path

import pexpect
import pytest

from conftest import console_ready
from guest import (AUDIT_LOG, PASSWORDS, POLL, PRINTS, PROVOKE, WAIT, Console, GuestError, SshTerminal,
                   TmuxPane, attempt, built_app, built_vault, flat, wait_for)

PW = PASSWORDS["alice"]
SUDO_PROMPT = r"\[sudo\] password for alice:"
PASSWORD_PROMPT = r"Password:"
# The contract's words (its table ends the sentence with a period; the product's messages
# end without one, as the issue writes this one).
REMOTE_MESSAGE = "You are also signed in remotely - use your password"
SINCE_UNLOCK_MESSAGE = "You signed in remotely since this computer was last unlocked here - use your password"
NOBODYS_FINGER = "la-vm-nobody"   # a print id nobody enrolled: a finger that never matches

TOOK_THE_FINGER = {"finger_offered": True, "scans": [PRINTS["alice"]], "password_prompts": 0,
                   "rc": 0, "result": "success", "reason": None, "pam": "PAM_SUCCESS"}


def took_the_password(reason: str, result: str = "notInteractive",
                      pam: str = "PAM_AUTHINFO_UNAVAIL") -> dict:
    return {"finger_offered": False, "scans": [], "password_prompts": 1, "rc": 0,
            "result": result, "reason": reason, "pam": pam}


@contextlib.contextmanager
def remote_login(guest, user="alice"):
    """An SSH login of user held open (a remote logind session) for the block."""
    argv = guest.m.ssh_argv(user, tty=True) + ["echo la-vm-remote-ready; exec sleep 3600"]
    child = pexpect.spawn(argv[0], argv[1:], encoding="utf-8", timeout=WAIT)
    try:
        child.expect("la-vm-remote-ready")
        wait_for(f"{user}'s remote session in logind", lambda: guest.remote_sessions(user))
        yield child
    finally:
        child.terminate(force=True)
        guest.wait_no_remote_session(user)


def gnome_terminal(guest, con: Console, cleanup) -> str:
    """A GNOME-shaped terminal on con (la-term: a shell on a pseudo-terminal in
    app-org.gnome.Terminal-N.scope of alice's manager); its unit name."""
    n = guest.unique("")
    unit = f"app-org.gnome.Terminal-{n}.scope"

    def stop():
        if terminal_runs(guest, unit):   # left already (leave_gnome_terminal): no typing
            con.key("ctrl-c")
            con.type_line("exit")
        cgroup = terminal_cgroup(unit)
        # The scope may end between a test and the write (its shell exited after the keys
        # above, and systemd removed it, as seen in run M): only a write that fails while it
        # is still there is an error.
        guest.sh(f"echo 1 > {cgroup}/cgroup.kill 2>/dev/null || [ ! -e {cgroup} ]")
    cleanup(stop)
    con.type_line(f"la-term {n}")
    wait_for(f"a shell in {unit}", lambda: terminal_runs(guest, unit))
    wait_for("the new shell's prompt", lambda: con.text().rstrip().endswith("$"))
    return unit


def terminal_cgroup(unit: str) -> str:
    return f"/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/{unit}"


def terminal_runs(guest, unit: str) -> bool:
    # (a process may leave the scope between the two reads: hence "|| true")
    return "bash" in guest.sh(
        f"for p in $(cat {terminal_cgroup(unit)}/cgroup.procs 2>/dev/null); do "
        f"cat /proc/$p/comm 2>/dev/null || true; done").split()


def leave_gnome_terminal(guest, con: Console, unit: str) -> None:
    """Back to the console's own shell: the terminal's shell exits."""
    con.key("ctrl-c")
    con.type_line("exit")
    wait_for(f"the shell in {unit} to end", lambda: not terminal_runs(guest, unit))
    wait_for("the console's prompt", lambda: con.text().rstrip().endswith("$"))


def in_a_tmux_pane(out) -> bool:
    """The caller ran in a pane of tmux: tmux 3.5 (Debian 13) starts each pane's process in
    a scope of its own in the user's manager, tmux-spawn-UUID.scope, in no logind session
    (tmux 3.3 on Debian 12 left it in the session of the terminal that started the server)."""
    return (out.line.get("unit"), out.line.get("user_unit", "")[:11]) == (
        "user@1000.service", "tmux-spawn-")


def sudo(guest, term, **kw):
    kw.setdefault("password", PW)
    return attempt(guest, term, "sudo -k id", ident="sudo", prompt=SUDO_PROMPT, **kw)


# --- a person at the machine gets the finger --------------------------------------------

def test_console_sudo_takes_the_finger(guest, tty1):
    out = sudo(guest, tty1)
    assert out.facts() == TOOK_THE_FINGER, out.evidence()
    assert "uid=0(root)" in out.text


def test_sudo_in_a_gnome_shaped_terminal_takes_the_finger(guest, tty1, cleanup):
    unit = gnome_terminal(guest, tty1, cleanup)
    out = sudo(guest, tty1)
    assert out.line["user_unit"] == unit, "sudo did not run in the terminal's scope"
    assert out.facts() == TOOK_THE_FINGER, out.evidence()
    assert "uid=0(root)" in out.text


def test_pkexec_with_pkttyagent_in_the_local_session_takes_the_finger(guest, tty1):
    """Where polkit starts its agent helper from polkit-agent-helper.socket (polkit 127+,
    LOCALAUTH_VM_SUITE=sid), the service finds pkttyagent as the peer of that helper's
    stdin; where the helper is setuid (Debian 13's polkit 126), as its parent."""
    socket_activated = guest.sh("systemctl is-active polkit-agent-helper.socket", check=False).strip() == "active"
    started = next_guest_second(guest)
    mark = guest.mark()
    out = attempt(guest, tty1, "la-pkexec id", ident="polkit-agent-helper-1",
                  prompt=PASSWORD_PROMPT, password=PW)
    on_socket = any("the peer of its stdin" in e.get("MESSAGE", "") for e in guest.journal(mark)
                    if e.get("SYSLOG_IDENTIFIER") == "localauth-helper")
    # The match is written into root's state file (in sid's sandboxed agent helper a helper
    # of its own could not write it: a read-only file system).
    recorded = (guest.status("alice").get("last_fingerprint") or 0) >= started
    facts = {**out.facts(), "agent_found_on_the_helpers_socket": on_socket, "match_in_roots_state": recorded}
    assert facts == {**TOOK_THE_FINGER, "agent_found_on_the_helpers_socket": socket_activated,
                     "match_in_roots_state": True}, out.evidence(facts)
    assert "uid=0(root)" in out.text


def next_guest_second(guest) -> int:
    """The guest's clock once a new second has begun: a record stamped at or after it was
    written after this call (the state's times are whole seconds)."""
    first = int(guest.sh("date +%s"))
    while (now := int(guest.sh("date +%s"))) == first:
        time.sleep(0.1)
    return now


# --- a remote person, or nobody at the session, gets the password -----------------------

def test_gnome_shaped_terminal_while_alice_is_signed_in_over_ssh_takes_the_password(
        guest, tty1, cleanup):
    unit = gnome_terminal(guest, tty1, cleanup)
    with remote_login(guest):
        out = sudo(guest, tty1)
    assert out.line["user_unit"] == unit, "sudo did not run in the terminal's scope"
    assert out.facts() == took_the_password("remote-session-open"), out.evidence()
    assert REMOTE_MESSAGE in flat(out.text)
    assert "uid=0(root)" in out.text


def test_gnome_shaped_terminal_after_alice_s_ssh_login_ended_takes_the_password_until_a_local_unlock(
        guest, tty1, cleanup):
    """An SSH login that has ended is no remote session open (logind has removed it), but
    root's record of it stays: until alice unlocks at the machine itself (here a finger at her
    console's sudo), her terminal gets the password; then the finger again."""
    guest.m.ssh("true", user="alice")
    guest.wait_no_remote_session("alice")
    unit = gnome_terminal(guest, tty1, cleanup)
    out = sudo(guest, tty1)
    assert out.line["user_unit"] == unit, "sudo did not run in the terminal's scope"
    assert out.facts() == took_the_password("remote-login-since-unlock"), \
        f"{out.evidence()}\nlogind: {guest.sessions('alice')}\nstatus: {guest.status('alice')}"
    assert SINCE_UNLOCK_MESSAGE in flat(out.text)
    leave_gnome_terminal(guest, tty1, unit)
    owner_unlocks_at_the_console_then_the_terminal_takes_the_finger(guest, tty1, cleanup)


def test_a_remote_login_through_a_stack_without_localauth_is_recorded_by_the_service(guest, tty1, cleanup):
    """A remote login whose PAM stack has no line of ours (xrdp's, a remote desktop's, an
    sshd with its own stack): pam_systemd opens a remote logind session for it, which then
    ends. No account phase of the module ran, and logind keeps nothing of it once it ended;
    localauthd, running since boot, recorded it as logind announced it. So alice's terminal
    gets the password until she unlocks at the machine itself."""
    service = guest.unique("la-remote-desk")
    cleanup(lambda: guest.sh(f"rm -f /etc/pam.d/{service}"))
    guest.sh(f"printf '%s\\n' 'auth required pam_permit.so' 'account required pam_permit.so' "
             f"'session required pam_systemd.so' > /etc/pam.d/{service}")
    mark = guest.mark()
    # Held open until the record is in (a login that runs anything lasts longer than the
    # service takes to read it), then ended: what counts is that the record outlives it.
    release = f"/tmp/la-vm/{service}.release"
    cleanup(lambda: guest.sh(f"touch {release}", check=False))
    guest.sh(f"systemd-run --quiet --collect --unit={service} la-remote-login {service} alice 192.0.2.7 {release}")
    remote = wait_for("the remote session in logind", lambda: [
        s for s in guest.remote_sessions("alice") if s.get("RemoteHost") == "192.0.2.7"])
    recorded = f"remote login of alice recorded (logind session {remote[0]['Id']}, from 192.0.2.7)"
    wait_for("localauthd's record of the remote login", lambda: any(
        e.get("SYSLOG_IDENTIFIER") == "localauthd" and e.get("MESSAGE") == recorded for e in guest.journal(mark)))
    guest.sh(f"touch {release}")
    guest.wait_no_remote_session("alice")
    assert guest.status("alice")["remote_login_since_unlock"] is True, guest.status("alice")
    unit = gnome_terminal(guest, tty1, cleanup)
    out = sudo(guest, tty1)
    assert out.facts() == took_the_password("remote-login-since-unlock"), \
        f"{out.evidence()}\nstatus: {guest.status('alice')}"
    leave_gnome_terminal(guest, tty1, unit)
    owner_unlocks_at_the_console_then_the_terminal_takes_the_finger(guest, tty1, cleanup)


def owner_unlocks_at_the_console_then_the_terminal_takes_the_finger(guest, tty1, cleanup):
    """The owner back at the machine: sudo at the console by finger (a local unlock), then
    sudo in a new terminal on tty1 by finger too."""
    console = sudo(guest, tty1)
    assert console.facts() == TOOK_THE_FINGER, console.evidence()
    assert guest.status("alice")["remote_login_since_unlock"] is False, guest.status("alice")
    gnome_terminal(guest, tty1, cleanup)
    out = sudo(guest, tty1)
    assert out.facts() == TOOK_THE_FINGER, out.evidence()


def test_tmux_keys_sent_from_an_ssh_login_take_the_password(guest, tty1, cleanup):
    """The owner started tmux on the console; a remote login of the same user sends the
    command into its pane (and the password, which the remote person would have to know)."""
    cleanup(lambda: guest.m.ssh("runuser -u alice -- tmux kill-server", check=False))
    tty1.type_line("tmux new -s la")
    wait_for("tmux on tty1", lambda: guest.m.ssh("runuser -u alice -- tmux has-session -t la",
                                                 check=False).returncode == 0)
    with remote_login(guest):
        pane = TmuxPane(guest, "la", sender=lambda cmd: guest.sh(cmd, user="alice"))
        out = sudo(guest, pane)
    assert in_a_tmux_pane(out), f"sudo did not run in a pane of alice's tmux{out.evidence()}"
    assert out.facts() == took_the_password("remote-session-open"), out.evidence()
    assert REMOTE_MESSAGE in flat(out.text)


def test_sudo_while_the_session_is_locked_takes_the_password(guest, tty1, cleanup):
    session = guest.console_session()["Id"]
    cleanup(lambda: guest.sh(f"la-locked false {session}"))
    tty1.type_line("la-locked true")
    wait_for("LockedHint=yes", lambda: guest.console_session()["LockedHint"] == "yes")
    out = sudo(guest, tty1)
    assert out.facts() == took_the_password("session-locked"), out.evidence()


def test_sudo_while_another_session_is_the_seats_active_one_takes_the_password(
        guest, tty1, cleanup):
    """bob's console login on tty2 is seat0's active session; alice's sudo runs in a tmux
    server started from her tty1 session (keys from root: tty1 is not in front)."""
    cleanup(lambda: guest.m.ssh("runuser -u alice -- tmux kill-server", check=False))
    tty1.type_line("tmux new -d -s la")
    wait_for("tmux started from tty1", lambda: guest.m.ssh(
        "runuser -u alice -- tmux has-session -t la", check=False).returncode == 0)
    alice = guest.console_session()["Id"]

    def undo():
        # logind ends bob's session itself (SIGHUP to the scope): the new getty's hangup of
        # tty2 alone once left it open past the wait in a loaded run.
        guest.sh("chvt 1; la-vt-login 2 off; loginctl terminate-user bob || true")  # gone already: fine
        wait_for("bob's tty2 session to end", lambda: not [
            s for s in guest.sessions("bob") if s.get("State") != "closing"])
    cleanup(undo)
    guest.sh("la-vt-login 2 bob && chvt 2")
    wait_for("bob's session active on seat0", lambda: [
        s for s in guest.sessions("bob") if s.get("TTY") == "tty2" and s.get("Active") == "yes"])
    assert [s["Active"] for s in guest.sessions("alice") if s["Id"] == alice] == ["no"]
    pane = TmuxPane(guest, "la", sender=lambda cmd: guest.sh(f"runuser -u alice -- {cmd}"))
    out = sudo(guest, pane)
    assert in_a_tmux_pane(out), f"sudo did not run in a pane of alice's tmux{out.evidence()}"
    assert out.facts() == took_the_password("not-active"), out.evidence()


def test_pkexec_with_pkttyagent_over_ssh_takes_the_password(guest, tty1, cleanup):
    term = SshTerminal(guest, "alice")
    cleanup(lambda: (term.close(), guest.wait_no_remote_session("alice")))
    out = attempt(guest, term, "la-pkexec id", ident="polkit-agent-helper-1",
                  prompt=PASSWORD_PROMPT, password=PW)
    assert out.facts() == took_the_password("remote"), out.evidence()
    assert "uid=0(root)" in out.text


# --- what a remote login leaves behind gets no finger (PresenceRule, rule 5) -------------
#
# Each as an attacker with alice's SSH key (not her password) would do it: something started
# from an SSH login that has ended, run later in alice's manager, while alice's console
# session is local, active and in front of seat0. On a build without rule 5 each was offered
# the finger, and the owner's next touch (the scan below) ran a command as root.

def left_by_ssh(guest, cleanup, command: str, options: str = "") -> tuple[str, str]:
    """`command` as a transient unit of alice's manager (systemd-run --user), started from an
    SSH login of alice's that then ends; the command waits for a file the test writes once
    logind shows no remote session of alice's (so the order is the test's, not a guess).
    Returns the unit and that file."""
    name = guest.unique("la-left-")
    go = f"/tmp/la-vm/{name}.go"
    unit = f"{name}.service"
    cleanup(lambda: guest.m.ssh(f"runuser -u alice -- env XDG_RUNTIME_DIR=/run/user/1000 "
                                f"systemctl --user stop {name}.timer {unit}", check=False))
    wait = f"while [ ! -e {go} ]; do sleep 0.2; done; {command}"
    guest.m.ssh(f"systemd-run --user --quiet --collect --unit={name} {options} "
                f"sh -c {shlex.quote(wait)}", user="alice")
    guest.wait_no_remote_session("alice")
    return unit, go


def owners_touch_until(guest, mark, ident: str, ended) -> tuple[dict, list]:
    """Waits for the module's first line from ident; meanwhile each new finger-needed true
    gets one scan of alice's finger (the owner touching the reader for something of hers).
    Returns the line and the scans."""
    scans: list[str] = []
    end = time.monotonic() + WAIT
    while True:
        values = guest.finger(mark)
        if values and values[-1] and values.count(True) > len(scans) and len(scans) < 3:
            guest.scan(PRINTS["alice"])
            scans.append(PRINTS["alice"])
            continue
        line = next((f for f in guest.module_lines(mark, ident) if f["phase"] == "auth"), None)
        if line is not None and ended():
            return line, scans
        if time.monotonic() > end:
            raise GuestError(f"no verdict from {ident} within {WAIT} s: finger-needed {values}, "
                             f"scans {scans}, line {line}")
        time.sleep(POLL)


def verdict(guest, mark, line, scans, marker) -> dict:
    return {"finger_offered": True in guest.finger(mark), "scans": scans,
            "result": line.get("result"), "reason": line.get("reason"),
            "ran_as_root": guest.m.ssh(f"test -e {marker}", check=False).returncode == 0}


NO_FINGER_AFTER_REMOTE_LOGIN = {"finger_offered": False, "scans": [], "result": "notInteractive",
                                "reason": "remote-login-since-unlock", "ran_as_root": False}


def sudo_left_by_ssh_gets_no_finger(guest, cleanup, options: str = "") -> None:
    """`sudo -k touch MARKER` on a pseudo-terminal nobody sees (script, its input held open
    so that sudo waits there), left by SSH (left_by_ssh), while the owner touches the reader
    whenever it asks."""
    marker = f"/tmp/la-vm/{guest.unique('owned')}"
    job = f"sleep 600 | script -qfec {shlex.quote(f'sudo -k touch {marker}')} /dev/null"
    unit, go = left_by_ssh(guest, cleanup, job, options=options)
    mark = guest.mark()
    guest.sh(f"touch {go}")
    line, scans = owners_touch_until(guest, mark, "sudo", lambda: True)
    facts = verdict(guest, mark, line, scans, marker)
    assert facts == NO_FINGER_AFTER_REMOTE_LOGIN, f"{facts}\nmodule: {line.get('message')}"
    assert line["user_unit"] == unit, line


def test_a_polkit_agent_of_its_own_started_from_ssh_gets_no_finger(guest, tty1, cleanup):
    """Attack 1: a polkit agent with no terminal in a transient unit of alice's manager,
    registered for its own process, runs pkexec; polkitd asks that agent, whose agent
    helper runs the polkit-1 stack."""
    log, marker = f"/tmp/la-vm/{guest.unique('rogue')}.log", f"/tmp/la-vm/{guest.unique('owned')}"
    unit, go = left_by_ssh(guest, cleanup, f"la-rogue-agent {log} {marker}")
    mark = guest.mark()
    guest.sh(f"touch {go}")
    line, scans = owners_touch_until(guest, mark, "polkit-agent-helper-1",
                                     lambda: "pkexec rc=" in guest.sh(f"cat {log} 2>/dev/null || true"))
    facts = verdict(guest, mark, line, scans, marker)
    assert facts == NO_FINGER_AFTER_REMOTE_LOGIN, \
        f"{facts}\nmodule: {line.get('message')}\nagent: {guest.sh(f'cat {log}')}"
    owner_unlocks_at_the_console_then_the_terminal_takes_the_finger(guest, tty1, cleanup)


def test_lock_hints_cleared_from_a_remote_login_do_not_unlock(guest, tty1, cleanup):
    """Attack 2: alice's console is locked (LockedHint set at the console); from SSH she
    clears the hint (logind lets a session's user set it) and leaves a job whose sudo runs on
    a pseudo-terminal nobody sees."""
    session = guest.console_session()["Id"]
    cleanup(lambda: guest.sh(f"la-locked false {session}"))
    tty1.type_line("la-locked true")
    wait_for("LockedHint=yes", lambda: guest.console_session()["LockedHint"] == "yes")
    guest.m.ssh(f"la-locked false {session}", user="alice")   # as alice, from SSH
    assert guest.console_session()["LockedHint"] == "no"
    sudo_left_by_ssh_gets_no_finger(guest, cleanup)


def test_a_job_left_behind_by_an_ssh_login_gets_no_finger(guest, tty1, cleanup):
    """Attack 3: `systemd-run --user --on-active=…` from SSH, then exit: later, sudo on a
    pseudo-terminal nobody sees. Then the owner's own sudo, after a local unlock, takes the
    finger again."""
    sudo_left_by_ssh_gets_no_finger(guest, cleanup, options="--on-active=1")
    owner_unlocks_at_the_console_then_the_terminal_takes_the_finger(guest, tty1, cleanup)


# --- another user's lockout is nobody's business at alice's session ----------------------

def bobs_failures(guest) -> int:
    return guest.status("bob")["consecutive_failures"]


def counted_on_bob(guest, out) -> dict:
    """The outcome's facts with bob's failed matches when his password was asked (before it
    clears them) and at the end."""
    return {**out.facts(), "bob_failures_at_prompt": out.seen.get("bob_failures"),
            "bob_failures_after": bobs_failures(guest)}


NOTHING_ON_BOB = {**took_the_password("other-user"), "bob_failures_at_prompt": 0,
                  "bob_failures_after": 0}


def test_su_bob_offers_no_finger_and_counts_nothing_on_bob(guest, tty1):
    assert bobs_failures(guest) == 0
    out = attempt(guest, tty1, "su bob -c id", ident="su", prompt=PASSWORD_PROMPT,
                  password=PASSWORDS["bob"], at_prompt=lambda: {"bob_failures": bobs_failures(guest)})
    facts = counted_on_bob(guest, out)
    assert facts == NOTHING_ON_BOB, out.evidence(facts)
    assert "uid=1001(bob)" in out.text


def test_polkit_agent_helper_for_bob_offers_no_finger_and_counts_nothing_on_bob(guest, tty1):
    assert bobs_failures(guest) == 0
    log = f"/tmp/la-vm/{guest.unique('agent')}.log"
    out = attempt(guest, tty1, f"la-agent bob {log}", ident="polkit-agent-helper-1",
                  prompt=PASSWORD_PROMPT, password=PASSWORDS["bob"],
                  at_prompt=lambda: {"bob_failures": bobs_failures(guest)})
    facts = counted_on_bob(guest, out)
    assert facts == NOTHING_ON_BOB, out.evidence(facts)
    # The helper answers polkitd (which refuses the made-up cookie) only after PAM said yes.
    transcript = guest.sh(f"cat {log}")
    assert "error response to PolicyKit daemon" in transcript, transcript


# --- a right saved under an AppArmor profile (docs/API.md, "Rights") -----------------------

def test_a_right_saved_under_an_apparmor_profile_is_not_the_same_program_s_unconfined(guest, cleanup):
    """The vault, root's in /usr/local/bin, saves a right as alice under a profile of its
    own (loaded here, entered with aa-exec). The same file run unconfined is another
    program: it finds no such right, and a right it saves under the same name is another
    record. Under the profile again, the first right is there."""
    profile = guest.unique("la-vault-profile")
    name = guest.unique("aa-notes")
    policy = f"/etc/apparmor.d/{profile}"
    cleanup(lambda: guest.sh(f"apparmor_parser -R {policy}; rm -f {policy}", check=False))
    guest.m.put([built_vault()], "/usr/local/bin/secret-vault")
    guest.sh("chown root:root /usr/local/bin/secret-vault && chmod 755 /usr/local/bin/secret-vault")
    # complain mode: the profile is a label that allows everything (it logs), so what the
    # test shows is the binding, not a denial.
    guest.sh(f"printf '%s\\n' 'abi <abi/4.0>,' 'include <tunables/global>' "
             f"'profile {profile} flags=(complain) {{' '  include <abstractions/base>' '}}' > {policy} "
             f"&& apparmor_parser -r {policy}")
    vault = "/usr/local/bin/secret-vault"
    confined = f"runuser -u alice -- aa-exec -p {profile} -- {vault}"
    unconfined = f"runuser -u alice -- {vault}"
    label = guest.sh(f"runuser -u alice -- aa-exec -p {profile} -- cat /proc/self/attr/apparmor/current")
    assert label.strip() == f"{profile} (complain)", label
    mark = guest.mark()
    saved = guest.m.ssh(f"{confined} save {name} confined-secret biometry", check=False)
    outside = guest.m.ssh(f"{unconfined} check {name}", check=False)
    inside = guest.m.ssh(f"{confined} check {name}", check=False)
    helper = [e.get("MESSAGE", "") for e in guest.journal(mark)
              if e.get("SYSLOG_IDENTIFIER") == "localauth-helper" and name in e.get("MESSAGE", "")]
    facts = {"saved": "OK saved" in saved.stdout, "unconfined_finds_it": "OK can authorize" in outside.stdout,
             "unconfined_rc": outside.returncode != 0, "confined_finds_it": "OK can authorize" in inside.stdout,
             "bound_to_the_profile": any(f"apparmor:{profile}:{vault}" in m for m in helper)}
    assert facts == {"saved": True, "unconfined_finds_it": False, "unconfined_rc": True,
                     "confined_finds_it": True, "bound_to_the_profile": True}, \
        f"save: {saved.stdout}{saved.stderr}\nunconfined: {outside.stdout}{outside.stderr}\n" \
        f"confined: {inside.stdout}{inside.stderr}\nhelper: {helper}"


# --- an application's preflight, answered by the packaged service (docs/SERVICE.md) ----------

def test_an_applications_preflights_are_answered_by_the_packaged_service(guest, cleanup):
    """la-probe as alice asks fifty times whether the finger can be used. The packaged
    localauthd, in its unit's sandbox, answers from root's state and the enrolled set a
    helper recorded: every answer is yes with one domain state, and at most one helper
    answered (the first, when no current record was there). A service that cannot read
    what it needs there (the state, the shadow file, fprintd's storage) gives a no, or
    leaves each call to a helper."""
    guest.m.put([built_app("la-probe")], "/usr/local/bin/la-probe")
    guest.sh("chown root:root /usr/local/bin/la-probe && chmod 755 /usr/local/bin/la-probe")
    mark = guest.mark()
    out = guest.sh("runuser -u alice -- /usr/local/bin/la-probe can biometrics --repeat 50")
    results = [dict(p.split("=", 1) for p in line.split(" desc=")[0].split()[1:])
               for line in out.splitlines() if line.startswith("RESULT ")]
    helpers = [e.get("MESSAGE", "") for e in guest.journal(mark)
               if e.get("SYSLOG_IDENTIFIER") == "localauth-helper" and " preflight biometrics: " in e.get("MESSAGE", "")]
    facts = {"answers": len(results), "all_yes": all(r.get("success") == "1" for r in results),
             "one_state": len({r.get("state") for r in results}) == 1,
             "at_most_one_helper": len(helpers) <= 1}
    assert facts == {"answers": 50, "all_yes": True, "one_state": True, "at_most_one_helper": True}, \
        f"{out}\nhelpers: {helpers}"


# --- an SSH login to the machine itself lifts no lockout ----------------------------------

def lock_out(guest, con) -> None:
    """Five failed matches in a row at alice's console (a finger nobody enrolled)."""
    for _ in range(3):
        attempt(guest, con, "sudo -k true", ident="sudo", prompt=SUDO_PROMPT, password=None,
                finger=NOBODYS_FINGER)
        if guest.status("alice")["locked_out"]:
            return
    raise GuestError(f"alice is not locked out after three sudo prompts: {guest.status('alice')}")


def test_loopback_ssh_wrong_password_then_a_key_keeps_the_lockout(guest, tty1, cleanup):
    cleanup(lambda: (guest.sh("localauthctl reset alice"), guest.wait_no_remote_session("alice")))
    lock_out(guest, tty1)
    before = guest.status("alice")
    assert (before["consecutive_failures"], before["locked_out"]) == (5, True)
    mark = guest.mark()
    # One sshd handle: the password method first (SSH_ASKPASS: a wrong password), then the
    # public key, after which sshd runs the account phase on the same PAM handle.
    r = guest.m.ssh("runuser -u alice -- env SSH_ASKPASS=/usr/local/bin/la-askpass "
                    "SSH_ASKPASS_REQUIRE=force ssh -o PreferredAuthentications=password,publickey "
                    "-o NumberOfPasswordPrompts=1 -o StrictHostKeyChecking=no "
                    "-o UserKnownHostsFile=/dev/null alice@127.0.0.1 true < /dev/null",
                    check=False)
    # OpenSSH 10 logs a connection's lines (and its PAM modules') as sshd-session.
    sshd = [e["MESSAGE"] for e in guest.journal(mark) if e.get("SYSLOG_IDENTIFIER") == "sshd-session"]
    assert r.returncode == 0, r.stderr
    assert any(re.match(r"Failed password for alice from 127\.0\.0\.1", m) for m in sshd), sshd
    assert any(re.match(r"Accepted publickey for alice from 127\.0\.0\.1", m) for m in sshd), sshd
    after = guest.status("alice")
    got = {k: after[k] for k in ("consecutive_failures", "locked_out", "last_password")}
    assert got == {"consecutive_failures": 5, "locked_out": True,
                   "last_password": before["last_password"]}, \
        "\n".join(["sshd's lines of the module:"] + [m for m in sshd if "pam_localauth" in m])


# --- localauthd under the real systemd (docs/SERVICE.md) -----------------------------------

def test_console_sudo_goes_through_the_packaged_localauthd_which_its_socket_restarts(guest, tty1, cleanup):
    """The package enabled and started localauth.socket (every case of this tier runs
    through the service): console sudo's request goes to it, its helper runs in
    localauth.service (not in sudo's session) and takes the finger; doctor says the socket
    answers. The service runs from boot (it follows logind's sessions); stopped, the next
    sudo starts it again through the socket."""
    state = guest.sh("systemctl is-enabled localauth.socket localauth.service; "
                     "systemctl is-active localauth.socket localauth.service; "
                     "stat -c '%U %F' /run/localauth/socket").split("\n")[:5]
    assert state == ["enabled", "enabled", "active", "active", "root socket"], state
    # The unit's sandbox, as systemd scores it ("OK" is below 4.0 on its scale).
    security = guest.sh("systemd-analyze security --no-pager localauth.service", check=False)
    exposure = re.search(r"Overall exposure level for localauth\.service: ([0-9.]+)", security)
    assert exposure and float(exposure[1]) < 4.0, security
    doctor = guest.sh("localauthctl doctor alice --json", check=False)
    service_findings = [f["code"] for f in json.loads(doctor)["findings"] if f["code"].startswith("service.")]
    assert service_findings == ["service.ok"], doctor

    pinned_by = peer_source(guest)
    mark = guest.mark()
    out = sudo(guest, tty1)
    # The service's helper reaches the console (the unit's device policy): Enter skips.
    facts = {**out.facts(), **service_facts(guest.journal(mark)),
             "enter_to_skip": "press Enter to use your password" in flat(out.text)}
    assert facts == {**TOOK_THE_FINGER, "peer_pinned_by": [pinned_by],
                     "success_from_the_services_helper": True, "enter_to_skip": True}, out.evidence(facts)

    cleanup(lambda: guest.sh("systemctl start localauth.service", check=False))
    guest.sh("systemctl stop localauth.service")
    assert guest.sh("systemctl is-active localauth.service", check=False).strip() == "inactive"
    assert guest.sh("systemctl is-active localauth.socket").strip() == "active"
    tty1.clear()
    mark = guest.mark()
    again = sudo(guest, tty1)
    facts = {**again.facts(), **service_facts(guest.journal(mark))}
    assert facts == {**TOOK_THE_FINGER, "peer_pinned_by": [pinned_by],
                     "success_from_the_services_helper": True}, again.evidence(facts)


def peer_source(guest) -> str:
    """How localauthd must have pinned its peer on the guest's kernel: by the kernel's
    SO_PEERPIDFD since Linux 6.5 (Debian 13's 6.12), by pid before it (Debian 12's 6.1:
    pidfd_open, with Peer.swift's proofs that the process is the peer)."""
    release = guest.sh("uname -r").strip()
    version = tuple(int(n) for n in re.match(r"(\d+)\.(\d+)", release).groups())
    return "SO_PEERPIDFD" if version >= (6, 5) else "pidfd_open"


# --- the package's AppArmor profiles and the audit log (docs/SECURITY.md) -----------------

def label_of(guest, pid: str) -> str:
    return guest.sh(f"cat /proc/{pid}/attr/current").strip()


def test_the_packaged_service_and_its_helpers_run_under_the_packages_apparmor_profiles(guest):
    """The package loaded its profiles in enforce mode, localauthd runs under its own and
    its helpers under the service's (the unit's NoNewPrivileges= allows no other), and
    nothing since the guest booted was denied to them."""
    status = json.loads(guest.sh("aa-status --json"))
    profiles = {p: status["profiles"].get(p) for p in ("localauthd", "localauth-helper")}
    main = guest.sh("systemctl show -P MainPID localauth.service").strip()
    # The spare helper the service keeps started ahead (a helper may end between the
    # listing and the read: its label is then not there).
    labels = f"for p in $(pgrep -P {main} -x localauth-helpe); do cat /proc/$p/attr/current; done 2>/dev/null"
    helpers = wait_for("a helper of the service", lambda: guest.sh(labels, check=False).split("\n")[:-1])
    facts = {"profiles": profiles, "service": label_of(guest, main), "helpers": sorted(set(helpers)),
             "denied_since_boot": guest.apparmor_denials(("", 0))}
    assert facts == {"profiles": {"localauthd": "enforce", "localauth-helper": "enforce"},
                     "service": "localauthd (enforce)", "helpers": ["localauthd (enforce)"],
                     "denied_since_boot": []}, facts


def test_the_services_profile_denies_another_process_s_memory_which_root_could_write(guest, cleanup):
    """What the capability set cannot take away: root (CAP_SYS_PTRACE) opens another
    process's memory for writing; under the service's profile the same open is refused,
    and the refusal is in the audit log."""
    target = guest.sh("setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $!").strip()
    cleanup(lambda: guest.sh(f"kill {target}", check=False))
    probe = f"/tmp/la-vm/{PROVOKE}"
    guest.sh(f"cp /bin/dash {probe}")
    cleanup(lambda: guest.sh(f"rm -f {probe}", check=False))
    opens = f"{probe} -c 'exec 3<>/proc/{target}/mem && echo opened'"
    before = guest.sh(f"stat -c %s {AUDIT_LOG}").strip()
    unconfined = guest.m.ssh(opens, check=False)
    confined = guest.m.ssh(f"aa-exec -p localauthd -- {opens}", check=False)
    records = guest.sh(f"tail -c +{int(before) + 1} {AUDIT_LOG} | grep 'apparmor=\"DENIED\"' "
                       f"| grep 'profile=\"localauthd\"' | grep -c '/proc/{target}/mem'; true").strip()
    facts = {"unconfined": unconfined.stdout.strip(), "confined": confined.stdout.strip(),
             "confined_refused": "Permission denied" in confined.stderr, "audit_records": int(records or 0) > 0}
    assert facts == {"unconfined": "opened", "confined": "", "confined_refused": True,
                     "audit_records": True}, f"{facts}\n{confined.stderr}"


def test_a_lockout_is_in_the_audit_log_as_pam_faillock_writes_it(guest, tty1, cleanup):
    """The unit lets the helper reach the audit netlink socket (AF_NETLINK) and the
    profile lets it write: a lockout that begins under the packaged service is found by
    `ausearch -m RESP_ACCT_LOCK`, for alice, from the helper's executable."""
    cleanup(lambda: guest.sh("localauthctl reset alice"))

    def records() -> list[str]:
        out = guest.sh("ausearch --input-logs -m RESP_ACCT_LOCK --raw 2>/dev/null; true")
        return [line for line in out.splitlines() if 'acct="alice"' in line]

    before = records()
    lock_out(guest, tty1)
    new = records()[len(before):]
    facts = {"records": len(new),
             "from_the_helper": all('exe="/usr/libexec/localauth/localauth-helper"' in r for r in new),
             "success": all("res=success" in r for r in new)}
    assert facts == {"records": 1, "from_the_helper": True, "success": True}, new


def test_without_the_service_sudo_gets_the_password_at_once_and_nothing_starts(guest, tty1, cleanup):
    """One door: where localauthd does not run (its socket and service stopped), the module
    inside sudo starts nothing (no helper process appears while sudo runs), the password
    prompt comes at once, and the module's one line says why."""
    cleanup(lambda: guest.sh("systemctl start localauth.socket localauth.service"))
    guest.sh("systemctl stop localauth.socket localauth.service")
    seen = "/tmp/la-vm/helpers-seen"
    watch = f"while :; do pgrep -x localauth-helpe; sleep 0.1; done"
    watcher = guest.sh(f"setsid sh -c {shlex.quote(watch)} > {seen} 2>/dev/null < /dev/null & echo $!").strip()
    cleanup(lambda: guest.sh(f"kill {watcher}; rm -f {seen}", check=False))
    out = sudo(guest, tty1)
    facts = {**out.facts(), "helpers": guest.sh(f"cat {seen}").split(),
             "says_why": "localauthd is not running" in out.line.get("message", "")}
    assert facts == {**took_the_password(None, result="helperFailure"), "helpers": [], "says_why": True}, \
        out.evidence(facts)
    assert "uid=0(root)" in out.text


def service_facts(entries: list[dict]) -> dict:
    """Whether the request went through the service: localauthd's line for it ("helper pid
    M", with how the peer was pinned) and the helper's success line from that pid M.
    (Not the helper line's _SYSTEMD_UNIT: journald cannot say it when the helper has
    already exited as it reads the line, as seen in a run.)"""
    lines = [m for e in entries if e.get("SYSLOG_IDENTIFIER") == "localauthd"
             for m in [re.match(r"uid 0 pid \d+ \(([^)]+)\): helper pid (\d+)", e.get("MESSAGE", ""))] if m]
    started = {int(m[2]) for m in lines}
    succeeded = {int(e["_PID"]) for e in entries if e.get("SYSLOG_IDENTIFIER") == "localauth-helper"
                 and "result=success" in e.get("MESSAGE", "") and e.get("_PID", "").isdigit()}
    return {"peer_pinned_by": sorted({m[1] for m in lines}),
            "success_from_the_services_helper": bool(succeeded) and succeeded <= started}


# --- localauthd as alice's ssh-agent: a remote login's request gets no scan --------------------

AGENT_SOCKET = "/run/localauth/ssh-agent"


def agent_signs(guest, term, pub: str, name: str) -> dict:
    """``ssh-keygen -Y sign`` on ``term`` with the packaged agent (the socket's unit), its
    key named by ``pub``; whenever fprintd wants a finger, alice's (at most one). The facts:
    whether a scan was offered, the scans, whether it succeeded, whether a signature was written,
    and whether the helper's line says presence refused it (its lines, localauthd's and
    ssh-keygen's own are printed: a failure shows them)."""
    data, err = f"/tmp/la-vm/{name}.txt", f"/tmp/la-vm/{name}.err"
    guest.sh(f"echo {name} > {data} && chown alice: {data}")
    # ssh-keygen's own messages into a file (the agent's prompt goes to the terminal itself).
    command = f"env SSH_AUTH_SOCK={AGENT_SOCKET} ssh-keygen -Y sign -n file -f {pub} {data} 2> {err}"
    mark = guest.mark()
    if isinstance(term, SshTerminal):
        term.run(command)
    else:
        term.clear()
        term.run(f"la-run {name} {command}")
    scans: list[str] = []
    end = time.monotonic() + WAIT
    while True:
        obs = guest.observe(mark, rc=None if isinstance(term, SshTerminal) else name, vt=getattr(term, "vt", None))
        rc = term.done() if isinstance(term, SshTerminal) else obs["rc"]
        if rc is not None:
            break
        if obs["finger"] and obs["finger"][-1] and not scans:
            guest.scan(PRINTS["alice"])
            scans.append(PRINTS["alice"])
        if time.monotonic() > end:
            raise GuestError(f"{command!r} did not finish within {WAIT} s; the terminal:\n{term.text()}")
        time.sleep(POLL)
    signed = guest.sh(f"test -s {data}.sig && echo yes || echo no").strip() == "yes"
    lines = [f"{e.get('SYSLOG_IDENTIFIER')}: {e.get('MESSAGE', '')}" for e in guest.journal(mark)
             if e.get("SYSLOG_IDENTIFIER") in ("localauthd", "localauth-helper")]
    print(f"--- {command!r} on {term.kind}: rc {rc}, scans {scans}\nlocalauthd and its helper:\n"
          + "\n".join(lines) + f"\nssh-keygen said: {guest.sh(f'cat {err}', check=False)}\nterminal:\n{term.text()}")
    return {"finger_offered": True in guest.finger(mark), "scans": scans, "succeeded": int(rc) == 0, "signed": signed,
            "refused_by_presence": any(l.startswith("localauth-helper: ") and "presence:" in l for l in lines)}


def test_an_agent_request_from_alice_s_ssh_session_gets_no_scan_and_her_next_local_one_does(guest, tty1, cleanup):
    """alice's key in the packaged agent (its own socket unit). From her SSH login into the
    machine (a remote logind session) ssh-keygen asks for a signature: no scan is offered and
    nothing is signed. Back at the console (her local session on seat0), the same request
    takes her finger."""
    state = guest.sh("systemctl is-enabled localauth-ssh-agent.socket; systemctl is-active localauth-ssh-agent.socket; "
                     f"stat -c '%U %a %F' {AGENT_SOCKET}").split("\n")[:3]
    assert state == ["enabled", "active", "root 666 socket"], state
    key = guest.unique("vm-key-")
    pub = f"/tmp/la-vm/{key}.pub"
    guest.sh(f"runuser -u alice -- localauthctl ssh create {key} && "
             f"runuser -u alice -- localauthctl ssh public-key {key} > {pub} && chmod 644 {pub}")
    term = SshTerminal(guest, "alice")
    cleanup(lambda: (term.close(), guest.wait_no_remote_session("alice")))
    remote = agent_signs(guest, term, pub, guest.unique("remote-sign-"))
    term.close()
    guest.wait_no_remote_session("alice")
    local = agent_signs(guest, tty1, pub, guest.unique("local-sign-"))
    assert {"remote": remote, "local": local} == {
        "remote": {"finger_offered": False, "scans": [], "succeeded": False, "signed": False,
                   "refused_by_presence": True},
        "local": {"finger_offered": True, "scans": [PRINTS["alice"]], "succeeded": True, "signed": True,
                  "refused_by_presence": False}}, (remote, local)


# --- last: a reboot, then the password first ---------------------------------------------

def test_after_a_reboot_the_password_comes_first_then_the_finger(guest, machine):
    machine.reboot()
    guest.install_tools()          # /run is new; the tools in /usr/local/bin stayed
    guest.start_fingerwatch()
    con = console_ready(guest)
    # Up from boot, before any request (nothing has connected to its socket yet): it follows
    # logind's sessions from the first login on.
    assert guest.sh("systemctl is-active localauth.service", check=False).strip() == "active"
    first = sudo(guest, con)
    assert first.facts() == took_the_password("reboot", result="biometryLockout"), first.evidence()
    con.clear()
    second = sudo(guest, con)
    assert second.facts() == TOOK_THE_FINGER, second.evidence()
