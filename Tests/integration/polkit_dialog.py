"""A polkit authentication agent shaped like a desktop's dialog, for the tests: no terminal,
its own process registered with polkitd as the agent for itself, and pkexec started as its
child (pkexec names its parent as the subject). When polkitd asks it to authenticate
(BeginAuthentication), it runs the setuid polkit-agent-helper-1 as every agent does: the
user name as argument, the cookie on stdin, then the helper's line protocol
(PAM_PROMPT_ECHO_OFF / PAM_PROMPT_ECHO_ON / PAM_ERROR_MSG / PAM_TEXT_INFO, then SUCCESS or
FAILURE). GNOME Shell's and KDE's agents do the same through libpolkit-agent-1.

    /usr/bin/python3 polkit_dialog.py USER ANSWER...   (as USER, under setsid)

Each line of its stdout is one event: ``INFO text``, ``ERROR text``, ``PROMPT text`` (the
next ANSWER is typed; when there is none, the dialog is cancelled: the helper's stdin is
closed), ``HELPER SUCCESS|FAILURE``, and last ``PKEXEC status output``. The bus is the
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


def say(*words):
    print(" ".join(words), flush=True)


def start_time(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[19])


def authenticate(user, cookie, answers):
    """One run of the agent helper; True when it said SUCCESS."""
    helper = subprocess.Popen([AGENT_HELPER, user], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    helper.stdin.write(cookie + "\n")
    helper.stdin.flush()
    verdict = "FAILURE"
    for line in helper.stdout:
        kind, _, text = line.rstrip("\n").partition(" ")
        text = text.encode().decode("unicode_escape").encode("latin-1").decode()
        if kind in ("PAM_PROMPT_ECHO_OFF", "PAM_PROMPT_ECHO_ON"):
            say("PROMPT", text)
            if not answers:
                helper.stdin.close()          # the dialog's Cancel
                continue
            helper.stdin.write(answers.pop(0) + "\n")
            helper.stdin.flush()
        elif kind == "PAM_TEXT_INFO":
            say("INFO", text)
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
    return verdict == "SUCCESS"


def main():
    user, answers = sys.argv[1], sys.argv[2:]
    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    loop = GLib.MainLoop()
    info = Gio.DBusNodeInfo.new_for_xml(AGENT_XML).interfaces[0]

    def on_call(conn, sender, path, iface, method, params, invocation):
        if method == "CancelAuthentication":
            invocation.return_value(None)
            return
        cookie = params.unpack()[4]

        def run():
            authenticate(user, cookie, answers)
            GLib.idle_add(lambda: invocation.return_value(None) and False)
        threading.Thread(target=run, daemon=True).start()

    bus.register_object(AGENT_PATH, info, on_call, None, None)
    pid = os.getpid()
    subject = ("unix-process", {"pid": GLib.Variant("u", pid),
                                "start-time": GLib.Variant("t", start_time(pid))})
    bus.call_sync("org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                  "org.freedesktop.PolicyKit1.Authority", "RegisterAuthenticationAgent",
                  GLib.Variant("((sa{sv})ss)", (subject, "C.UTF-8", AGENT_PATH)),
                  None, Gio.DBusCallFlags.NONE, 10000, None)

    def pkexec():
        p = subprocess.run(["pkexec", "id", "-un"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
        say("PKEXEC", str(p.returncode), (p.stdout + p.stderr).replace("\n", " | "))
        GLib.idle_add(loop.quit)
    threading.Thread(target=pkexec, daemon=True).start()
    loop.run()


if __name__ == "__main__":
    main()
