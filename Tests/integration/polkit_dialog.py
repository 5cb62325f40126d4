"""A polkit authentication agent shaped like a desktop's dialog, for the tests: no terminal,
its own process registered with polkitd as the agent for itself, and pkexec started as its
child (pkexec names its parent as the subject). When polkitd asks it to authenticate
(BeginAuthentication), it runs the setuid polkit-agent-helper-1 as every agent does: the
user name as argument, the cookie on stdin, then the helper's line protocol
(PAM_PROMPT_ECHO_OFF / PAM_PROMPT_ECHO_ON / PAM_ERROR_MSG / PAM_TEXT_INFO, then SUCCESS or
FAILURE). GNOME Shell's and KDE's agents do the same through libpolkit-agent-1.

    /usr/bin/python3 polkit_dialog.py USER ANSWER...   (as USER, under setsid)
    /usr/bin/python3 polkit_dialog.py USER ANSWER... -- COMMAND...
    /usr/bin/python3 polkit_dialog.py --no-agent USER -- COMMAND...

With ``-- COMMAND``, COMMAND is started instead of pkexec and the agent registers for it
(a program whose own authorization asks polkitd with itself as the subject, as a right of
a program without a terminal does); COMMAND waits for that registration before it runs
(a shell that reads one line, then execs it: the pid and start time stay the same).
``--no-agent``: COMMAND runs with no agent registered for it. ``--kill-at-info``: COMMAND
is killed (SIGKILL) when the dialog shows its first message (the program gone mid-dialog).
``--wait-at-prompt``: at a password prompt the dialog waits for a line on its own stdin
before it types the answer (the test does something else meanwhile).
``--helper-socket PATH``: the agent helper is reached by connecting to PATH, as polkit 127
and later do (polkit_helper_socket.py stands in for the service manager there), instead of
being started as the dialog's child.
``--forge``: no pkexec; the dialog sends itself a BeginAuthentication of its own making
(action ``org.localauth.test.forged``, a message and a ``program`` detail that name it,
a cookie polkitd never gave) and answers it as it would polkitd's: the agent helper runs
for a made-up request; then ``PKEXEC 1 forged``. ``--forge-wait``: the same, but the
dialog sends nothing: it says ``AGENT UNIQUE_NAME`` and waits for someone else's call.
``--two``: two pkexec at once, both asking this agent; the first authentication is run only
once polkitd has begun the second (two pending for one agent), the second is then
dismissed; ``PKEXEC`` once both ended (the first's status and output).
``--dismiss``: the dialog's Cancel is the dismissal desktop agents report (BeginAuthentication
answers org.freedesktop.PolicyKit1.Error.Cancelled, which polkitd calls dismissed).
polkitd's CancelAuthentication closes the dialog as a desktop's agent does: the event
``CANCELLED``, and the agent helper is killed.

Each line of its stdout is one event: ``BEGIN action_id message`` (polkitd's request to
authenticate, with the message the dialog shows), ``INFO text``, ``ERROR text``,
``PROMPT text`` (the next ANSWER is typed; when there is none, the dialog is cancelled:
the helper's stdin is closed), ``HELPER SUCCESS|FAILURE``, and last ``PKEXEC status
output`` (or ``SUBJECT status output`` for COMMAND; newlines as `` | ``). The bus is the
system bus (the test runs it in a namespace where that is the bed's).
"""
import os
import subprocess
import sys
import threading

import gi

gi.require_version("Gio", "2.0")
gi.require_version("GLib", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

AGENT_HELPER = "/usr/lib/polkit-1/polkit-agent-helper-1"
AGENT_PATH = "/org/localauth/test/Agent"
AGENT_XML = """<node><interface name="org.freedesktop.PolicyKit1.AuthenticationAgent">
<method name="BeginAuthentication"><arg type="s" direction="in"/><arg type="s" direction="in"/>
<arg type="s" direction="in"/><arg type="a{ss}" direction="in"/><arg type="s" direction="in"/>
<arg type="a(sa{sv})" direction="in"/></method>
<method name="CancelAuthentication"><arg type="s" direction="in"/></method>
</interface></node>"""


# The agent helper running now (CancelAuthentication kills it), and what --kill-at-info kills.
current = {"helper": None, "kill_at_info": None, "dismiss": False, "dismissed": False,
           "wait_at_prompt": False, "helper_socket": None}
# Set once an authentication has ended: with --kill-at-info the agent stays until then, so
# that a CancelAuthentication (or its absence) is seen before SUBJECT.
authentication_ended = threading.Event()


def say(*words):
    print(" ".join(words), flush=True)


def start_time(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[19])


class SocketHelper:
    """polkit 127's agent helper, reached through its socket (polkit_helper_socket.py): the
    user on the first line, then the same line protocol; the agent cannot kill it, only
    close the connection."""

    def __init__(self, path, user):
        import socket
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.sendall((user + "\n").encode())
        self.stdout = self.sock.makefile("r", encoding="utf-8")
        self.stdin = self.Input(self.sock)
        self.ended = False

    class Input:
        """The helper's stdin: closing it is the end of the agent's half of the connection."""

        def __init__(self, sock):
            self.sock, self.closed = sock, False

        def write(self, text):
            self.sock.sendall(text.encode())

        def flush(self):
            pass

        def close(self):
            import socket
            if not self.closed:
                self.closed = True
                with __import__("contextlib").suppress(OSError):
                    self.sock.shutdown(socket.SHUT_WR)

    def poll(self):
        return 0 if self.ended else None

    def kill(self):
        import socket
        self.sock.shutdown(socket.SHUT_RDWR)

    def wait(self):
        self.stdin.close()
        while self.stdout.readline():
            pass
        self.ended = True
        return 0


def authenticate(user, cookie, answers):
    """One run of the agent helper; True when it said SUCCESS."""
    if current["helper_socket"]:
        helper = SocketHelper(current["helper_socket"], user)
    else:
        helper = subprocess.Popen([AGENT_HELPER, user], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
    current["helper"] = helper
    helper.stdin.write(cookie + "\n")
    helper.stdin.flush()
    verdict = "FAILURE"
    for line in helper.stdout:
        kind, _, text = line.rstrip("\n").partition(" ")
        text = text.encode().decode("unicode_escape").encode("latin-1").decode()
        if kind in ("PAM_PROMPT_ECHO_OFF", "PAM_PROMPT_ECHO_ON"):
            say("PROMPT", text)
            if current["wait_at_prompt"] and answers:
                sys.stdin.readline()
            if not answers:
                helper.stdin.close()          # the dialog's Cancel
                current["dismissed"] = current["dismiss"]
                continue
            helper.stdin.write(answers.pop(0) + "\n")
            helper.stdin.flush()
        elif kind == "PAM_TEXT_INFO":
            say("INFO", text)
            victim, current["kill_at_info"] = current["kill_at_info"], None
            if victim is not None:
                victim.kill()
        elif kind == "PAM_ERROR_MSG":
            say("ERROR", text)
        elif kind in ("SUCCESS", "FAILURE"):
            verdict = kind
            break
    with_close = helper.stdin
    if not with_close.closed:
        with_close.close()
    helper.wait()
    say("HELPER", verdict)
    authentication_ended.set()
    return verdict == "SUCCESS"


def register(bus, pid):
    subject = ("unix-process", {"pid": GLib.Variant("u", pid),
                                "start-time": GLib.Variant("t", start_time(pid))})
    bus.call_sync("org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                  "org.freedesktop.PolicyKit1.Authority", "RegisterAuthenticationAgent",
                  GLib.Variant("((sa{sv})ss)", (subject, "C.UTF-8", AGENT_PATH)),
                  None, Gio.DBusCallFlags.NONE, 10000, None)


def main():
    args = sys.argv[1:]
    flags = ("--no-agent", "--kill-at-info", "--dismiss", "--wait-at-prompt", "--forge", "--forge-wait", "--two")
    given = set()
    while args and (args[0] in flags or args[0] == "--helper-socket"):
        if args[0] == "--helper-socket":
            current["helper_socket"] = args[1]
            args = args[2:]
            continue
        given.add(args.pop(0))
    agent = "--no-agent" not in given
    kill_at_info = "--kill-at-info" in given
    current["dismiss"] = "--dismiss" in given
    current["wait_at_prompt"] = "--wait-at-prompt" in given
    command = args[args.index("--") + 1:] if "--" in args else None
    if command is not None:
        args = args[:args.index("--")]
    user, answers = args[0], args[1:]
    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    loop = GLib.MainLoop()
    info = Gio.DBusNodeInfo.new_for_xml(AGENT_XML).interfaces[0]

    def on_call(conn, sender, path, iface, method, params, invocation):
        if method == "CancelAuthentication":
            say("CANCELLED")
            if current["helper"] is not None and current["helper"].poll() is None:
                current["helper"].kill()
            invocation.return_value(None)
            return
        action_id, message, _icon, _details, cookie, _identities = params.unpack()
        say("BEGIN", action_id, message)
        index = len(begins)
        begins.append(cookie)
        if index == 1:
            second_begun.set()

        def run():
            if "--two" in given:
                if index >= 1:
                    first_ended.wait(60)      # the second: dismissed once the first ended
                    GLib.idle_add(lambda: invocation.return_dbus_error(
                        "org.freedesktop.PolicyKit1.Error.Cancelled", "dismissed") and False)
                    return
                second_begun.wait(60)
            authenticate(user, cookie, answers)
            first_ended.set()
            if forging:
                say("PKEXEC", "1", "forged")
                GLib.idle_add(loop.quit)
            if current["dismissed"]:
                GLib.idle_add(lambda: invocation.return_dbus_error(
                    "org.freedesktop.PolicyKit1.Error.Cancelled", "dismissed") and False)
            else:
                GLib.idle_add(lambda: invocation.return_value(None) and False)
        threading.Thread(target=run, daemon=True).start()

    begins, second_begun, first_ended = [], threading.Event(), threading.Event()
    forging = "--forge" in given or "--forge-wait" in given
    bus.register_object(AGENT_PATH, info, on_call, None, None)
    if forging:
        say("AGENT", bus.get_unique_name())
        if "--forge" in given:
            details = {"program": "/usr/bin/forged-program"}
            bus.call(bus.get_unique_name(), AGENT_PATH, "org.freedesktop.PolicyKit1.AuthenticationAgent",
                     "BeginAuthentication",
                     GLib.Variant("(sssa{ss}sa(sa{sv}))", ("org.localauth.test.forged", "Forged message: approve nothing",
                                                           "", details, "forged-cookie", [])),
                     None, Gio.DBusCallFlags.NONE, 120000, None, None)
        loop.run()
        return
    if command is not None:
        child = subprocess.Popen(["/bin/sh", "-c", 'read _ && exec "$@"', "sh", *command],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        if agent:
            register(bus, child.pid)
        if kill_at_info:
            current["kill_at_info"] = child
        child.stdin.write("\n")
        child.stdin.close()

        def subject():
            output = child.stdout.read()
            status = child.wait()
            if kill_at_info:
                authentication_ended.wait(120)
            say("SUBJECT", str(status), output.replace("\n", " | "))
            GLib.idle_add(loop.quit)
        threading.Thread(target=subject, daemon=True).start()
        loop.run()
        return
    register(bus, os.getpid())
    runs = []

    def pkexec():
        p = subprocess.run(["pkexec", "id", "-un"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
        runs.append(p)
        if len(runs) < (2 if "--two" in given else 1):
            return
        first = runs[0] if runs[0].returncode == 0 else runs[-1]
        say("PKEXEC", str(first.returncode), (first.stdout + first.stderr).replace("\n", " | "))
        GLib.idle_add(loop.quit)
    for _ in range(2 if "--two" in given else 1):
        threading.Thread(target=pkexec, daemon=True).start()
    loop.run()


if __name__ == "__main__":
    main()
