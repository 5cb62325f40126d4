"""logind's bus API, for the test bed's private bus on a machine where logind cannot run.

sd-login's records are faked in a mount namespace (test_never_remote.FakeLogind,
desktop.LoginSession); what the helper asks logind over the bus (a session's `LockedHint`
and `IdleHint`, the Manager's `LidClosed`) comes from this: a process that owns
org.freedesktop.login1 on the bed's bus and answers `Properties.Get` for every session path
(unlocked and not idle unless told otherwise) and for the Manager (the lid open unless
told). Tests change a hint with `LogindBus.set_hint(session, name, value)`, which emits
`PropertiesChanged` as logind does, the lid with `set_lid(closed)`, announce a suspend
with `prepare_for_sleep()` (the Manager's `PrepareForSleep` signal), and open and end sessions
the way localauthd sees them (`new_session`: `SessionNew`, the session's `GetAll`, the
Manager's `ListSessions`; `end_session`). The real logind is
tested in the Debian guest (Tests/vm); this is the bus-level fake for the rule's edge cases.

Run as a script by LogindBus (``/usr/bin/python3 logind_bus.py``), with
DBUS_SYSTEM_BUS_ADDRESS set to the bed's bus.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bus_fake import FakeProcess  # noqa: E402

NAME = "org.freedesktop.login1"
MANAGER_PATH = "/org/freedesktop/login1"
SESSION_PREFIX = "/org/freedesktop/login1/session"
MANAGER = "org.freedesktop.login1.Manager"
SESSION = "org.freedesktop.login1.Session"
PROPS = "org.freedesktop.DBus.Properties"
CONTROL = "org.localauth.Test.Logind"


def _serve() -> None:
    import dbus
    import dbus.lowlevel
    import dbus.service
    from dbus.mainloop.glib import DBusGMainLoop
    from gi.repository import GLib

    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
    hints: dict[tuple[str, str], bool] = {}
    lid = {"closed": False}
    frozen = {"on": False}
    # Sessions announced with NewSession: label -> (id, properties of GetAll).
    announced: dict[str, tuple[str, dict]] = {}

    class Sessions(dbus.service.FallbackObject):
        @dbus.service.method(PROPS, in_signature="ss", out_signature="v", rel_path_keyword="path")
        def Get(self, interface, name, path=""):
            if frozen["on"]:
                time.sleep(30)  # a logind that does not answer within the helper's bound
            if interface != SESSION or name not in ("LockedHint", "IdleHint", "Active"):
                raise dbus.exceptions.DBusException(f"no property {name}",
                                                    name="org.freedesktop.DBus.Error.UnknownProperty")
            default = name == "Active"
            return dbus.Boolean(hints.get((path.lstrip("/"), name), default), variant_level=1)

        @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}", rel_path_keyword="path")
        def GetAll(self, interface, path=""):
            label = path.rsplit("/", 1)[-1]
            if interface != SESSION or label not in announced:
                raise dbus.exceptions.DBusException(f"no session {label}",
                                                    name="org.freedesktop.login1.NoSuchSession")
            return announced[label][1]

        @dbus.service.signal(PROPS, signature="sa{sv}as", rel_path_keyword="path")
        def PropertiesChanged(self, interface, changed, invalidated, path=""):
            pass

    class Manager(dbus.service.Object):
        @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
        def Get(self, interface, name):
            if frozen["on"]:
                time.sleep(30)
            if interface != MANAGER or name != "LidClosed":
                raise dbus.exceptions.DBusException(f"no property {name}",
                                                    name="org.freedesktop.DBus.Error.UnknownProperty")
            return dbus.Boolean(lid["closed"], variant_level=1)

        @dbus.service.method(CONTROL, in_signature="ssb")
        def SetHint(self, session, name, value):
            hints[(session, name)] = bool(value)
            sessions.PropertiesChanged(SESSION, {name: dbus.Boolean(value)}, [], path="/" + session)

        @dbus.service.method(MANAGER, in_signature="", out_signature="a(susso)")
        def ListSessions(self):
            return [(sid, dbus.UInt32(props["User"][0]), props["Name"], props["Seat"][0],
                     dbus.ObjectPath(f"{SESSION_PREFIX}/{label}"))
                    for label, (sid, props) in announced.items()]

        @dbus.service.method(CONTROL, in_signature="susbss")
        def NewSession(self, sid, uid, user, remote, host, seat):
            """A session as logind announces it: its properties (what GetAll gives of the
            ones the service reads, and Seat/User as logind's structs), then SessionNew."""
            label = _label(sid)
            path = dbus.ObjectPath(f"{SESSION_PREFIX}/{label}")
            announced[label] = (sid, dbus.Dictionary({
                "Id": dbus.String(sid, variant_level=1), "Name": dbus.String(user, variant_level=1),
                "User": dbus.Struct((dbus.UInt32(uid), dbus.ObjectPath(f"/org/freedesktop/login1/user/_{uid}")),
                                    variant_level=1),
                "Remote": dbus.Boolean(remote, variant_level=1),
                "RemoteHost": dbus.String(host, variant_level=1),
                "Seat": dbus.Struct((seat, dbus.ObjectPath(f"/org/freedesktop/login1/seat/{seat}" if seat else "/")),
                                    variant_level=1),
                "Class": dbus.String("user", variant_level=1),
                "Type": dbus.String("tty", variant_level=1)}, signature="sv"))
            self.SessionNew(sid, path)

        @dbus.service.method(CONTROL, in_signature="s")
        def EndSession(self, sid):
            label = _label(sid)
            if label in announced:
                del announced[label]
                self.SessionRemoved(sid, dbus.ObjectPath(f"{SESSION_PREFIX}/{label}"))

        @dbus.service.signal(MANAGER, signature="so")
        def SessionNew(self, sid, path):
            pass

        @dbus.service.signal(MANAGER, signature="so")
        def SessionRemoved(self, sid, path):
            pass

        @dbus.service.method(CONTROL, in_signature="b")
        def SetLid(self, closed):
            lid["closed"] = bool(closed)

        @dbus.service.method(CONTROL, in_signature="b")
        def Freeze(self, on):
            frozen["on"] = bool(on)

        @dbus.service.method(CONTROL, in_signature="bu")
        def Sleep(self, start, pid):
            """PrepareForSleep(start): to everyone, or (pid != 0) only to the connections of
            that process, so that fprintd, which follows the signal too, does not race it."""
            if pid == 0:
                self.PrepareForSleep(bool(start))
                return
            driver = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
            for name in driver.ListNames(dbus_interface="org.freedesktop.DBus"):
                if not name.startswith(":"):
                    continue
                try:
                    owner = driver.GetConnectionUnixProcessID(name, dbus_interface="org.freedesktop.DBus")
                except dbus.exceptions.DBusException:
                    continue
                if owner == pid:
                    msg = dbus.lowlevel.SignalMessage(MANAGER_PATH, MANAGER, "PrepareForSleep")
                    msg.append(dbus.Boolean(start))
                    msg.set_destination(name)
                    bus.send_message(msg)

        @dbus.service.signal(MANAGER, signature="b")
        def PrepareForSleep(self, start):
            pass

    name = dbus.service.BusName(NAME, bus)  # noqa: F841  (held for the process's life)
    sessions = Sessions(bus, SESSION_PREFIX)
    Manager(bus, MANAGER_PATH)
    print("ready", flush=True)
    GLib.MainLoop().run()


class LogindBus(FakeProcess):
    """The fake on ``address`` (bus_fake.FakeProcess): ``start()`` returns once it owns the
    name; ``stop()`` ends exactly the process it started."""

    def __init__(self, address: str):
        super().__init__(Path(__file__), address, what="the logind fake")

    def _control(self, method: str, *args: str) -> None:
        subprocess.run(["busctl", f"--address={self.address}", "call", NAME, MANAGER_PATH, CONTROL,
                        method, *args], check=True, capture_output=True, timeout=10)

    def set_hint(self, session: str, name: str, value: bool) -> None:
        self._control("SetHint", "ssb", _label(session), name, "true" if value else "false")

    def new_session(self, sid: str, uid: int, user: str, *, remote: bool, host: str = "",
                    seat: str = "") -> None:
        """A session of ``user`` opens: SessionNew, its properties answered by GetAll and
        listed by ListSessions until ``end_session``."""
        self._control("NewSession", "susbss", sid, str(uid), user, "true" if remote else "false", host, seat)

    def end_session(self, sid: str) -> None:
        self._control("EndSession", "s", sid)

    def set_lid(self, closed: bool) -> None:
        self._control("SetLid", "b", "true" if closed else "false")

    def freeze(self, on: bool = True) -> None:
        self._control("Freeze", "b", "true" if on else "false")

    def prepare_for_sleep(self, start: bool = True, only_pid: int = 0) -> None:
        """Manager.PrepareForSleep(start), as logind sends it before a suspend and after; to
        the bus connections of ``only_pid`` alone when given."""
        self._control("Sleep", "bu", "true" if start else "false", str(only_pid))


def _label(session: str) -> str:
    """A session id as logind (sd_bus_path_encode) spells it in an object path."""
    out = []
    for i, c in enumerate(session):
        if c.isascii() and (c.isalpha() or (c.isdigit() and i > 0)):
            out.append(c)
        else:
            out.append("_%02x" % ord(c))
    return "".join(out)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit("usage: logind_bus.py  (with DBUS_SYSTEM_BUS_ADDRESS set)")
    _serve()
