"""polkit's side of the desktop tests (test_polkit.py, test_stock_stacks.py): the rule
polkitd runs with, pkexec with pkttyagent, and pkexec through a dialog-shaped agent.

* ``AUTH_SELF``: the rule for ``bed_factory(polkit_rules=...)``: pkexec asks for the
  subject's own password (a desktop whose user is an administrator; Debian's default rule
  would ask any member of the sudo group).
* ``PKEXEC``: a shell script that registers pkttyagent for itself (the subject pkexec names
  is its parent), then runs ``pkexec id -un``.
* ``dialog(case, fingers, answers, display)``: pkexec authorised through polkit_dialog.py
  as ``case.user`` in ``case.desktop`` (a desktop.UserDesktop), with no terminal; returns a
  ``DialogRun``. ``command=[...]``: that program instead of pkexec, the agent registered for
  it (``register=False``: none is); its exit status and output are ``DialogRun.subject``;
  ``kill_at_info``: the command is killed when the dialog shows its first message;
  ``dismiss``: the Cancel at the password prompt is reported to polkitd as a dismissal;
  ``at_prompt``: called at the first password prompt, before the answer is typed;
  ``helper_socket``: the agent helper is reached through that socket (polkit 127+'s shape);
  ``forge``: no pkexec, the dialog answers a BeginAuthentication it sent itself
  (``forge_from``: called with the dialog's unique bus name, it sends one instead); ``two``: two
  pkexec at once, the first answered while both are pending; ``at_start``: called once the
  dialog's process runs, before anything else is awaited.
"""
import io
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from messages import SWIPE  # noqa: E402

AUTH_SELF = """polkit.addRule(function(action, subject) {
    if (action.id == "org.freedesktop.policykit.exec") return polkit.Result.AUTH_SELF;
});
"""
PKEXEC = ('d=$(mktemp -d) && mkfifo "$d/ready" || exit 1\n'
          'pkttyagent --process $$ --notify-fd 3 3>"$d/ready" &\n'
          'agent=$!\n'
          'cat "$d/ready" >/dev/null; rm -r "$d"\n'
          'pkexec id -un; status=$?\n'
          'kill $agent 2>/dev/null; exit $status\n')


@dataclass
class DialogRun:
    events: list                    # (kind, text): INFO, ERROR, PROMPT, HELPER, PKEXEC
    results: list
    bed_events: list

    def texts(self, kind):
        return [t for k, t in self.events if k == kind]

    @property
    def subject(self):
        """(status, output lines) of the command run in place of pkexec."""
        [line] = self.texts("SUBJECT")
        status, _, output = line.partition(" ")
        return int(status), [l.strip() for l in output.split(" | ") if l.strip()]

    @property
    def authorized(self):
        pkexec = self.texts("PKEXEC")
        return len(pkexec) == 1 and pkexec[0].startswith("0 root")

    @property
    def verify_starts(self):
        return [e for e in self.bed_events if e.name == "VerifyFingerSelected"]


def dialog(case, fingers=(), answers=(), display=True, command=None, register=True,
           env=None, kill_at_info=False, dismiss=False, at_prompt=None,
           helper_socket=None, forge=False, forge_from=None, two=False, at_start=None) -> DialogRun:
    """pkexec authorised through polkit_dialog.py, a dialog-shaped agent run as the user
    without a terminal (setsid), with DISPLAY=:0 when ``display``: presents ``fingers`` as
    the dialog asks for them; ``answers`` are typed at its password prompts, then Cancel."""
    from pexpect.popen_spawn import PopenSpawn
    script = case.desktop.ns.root / "polkit_dialog.py"
    if not script.exists():
        script.write_text((Path(__file__).parent / "polkit_dialog.py").read_text())
        script.chmod(0o644)
    env = system.default_env(DISPLAY=":0" if display else None, **(env or {}))
    tail = ["--", *command] if command is not None else []
    argv = [*case.desktop.prefix(),
            *system.as_user(case.user, ["setsid", "/usr/bin/python3", str(script),
                                        *([] if register else ["--no-agent"]),
                                        *(["--kill-at-info"] if kill_at_info else []),
                                        *(["--dismiss"] if dismiss else []),
                                        *(["--wait-at-prompt"] if at_prompt else []),
                                        *(["--forge"] if forge else []),
                                        *(["--forge-wait"] if forge_from else []),
                                        *(["--two"] if two else []),
                                        *(["--helper-socket", str(helper_socket)] if helper_socket else []),
                                        case.user.name, *answers, *tail])]
    mark = case.bed.mark()
    agent = PopenSpawn(argv, env=env, timeout=60, encoding="utf-8")
    agent.logfile_read = log = io.StringIO()
    results = []
    try:
        if at_start is not None:
            at_start()
        if forge_from is not None:
            agent.expect("AGENT ([^\n]+)\n", timeout=20)
            forge_from(agent.match.group(1).strip())
        for p in fingers:
            agent.expect(f"INFO {SWIPE}", timeout=20)
            results.append(case.bed.reader.inject(f"SCAN {p}", timeout=15))
        if at_prompt is not None:
            agent.expect("PROMPT [^\n]*\n", timeout=20)
            at_prompt()
            for _ in answers:
                agent.sendline("")
        agent.expect("(PKEXEC|SUBJECT) [^\n]*\n", timeout=90)
    finally:
        if agent.proc.poll() is None:
            agent.kill(9)
        agent.wait()
    events = [tuple(l.split(" ", 1)) if " " in l else (l, "")
              for l in log.getvalue().splitlines() if l]
    run = DialogRun(events, results, case.bed.events(mark))
    if run.authorized:        # no success without a match in this run or the password
        assert any(e.name == "VerifyStatus" and e.args[0] == "verify-match"
                   for e in run.bed_events) or case.user.password in answers, run
    return run
