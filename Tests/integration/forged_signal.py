"""A local user's forged signals: what any uid can address to another connection of the
system bus (the bus daemon delivers a signal with a destination whatever the receiver's match
rules say). Run as that user (``setpriv --reuid``) by ``forge()``; the sender field is the
bus daemon's to write, so each signal goes out under this process's own unique name.

    /usr/bin/python3 forged_signal.py ADDRESS PID[,PID...] KIND...

KIND (each sent to every connection of the processes PID, in the order given):
  sleep                logind's Manager.PrepareForSleep(true)
  session-new:ID       logind's Manager.SessionNew(ID, its path)
  locked:ID            PropertiesChanged of session ID: LockedHint true
  logind-moved         the bus daemon's NameOwnerChanged: logind's name now ours
  fprintd-gone         NameOwnerChanged: fprintd's owner left
  fprintd-moved        NameOwnerChanged: fprintd's name now ours
  verify:RESULT        fprintd's Device.VerifyStatus(RESULT, done) on /net/reactivated/Fprint/Device/0

Then a call to the bus daemon: it handles a connection's messages in order, so once it has
answered, every signal above is in its receivers' queues, ahead of anything sent later by
anyone. Prints the unique names the signals went to, one line.
"""
from __future__ import annotations

import sys

LOGIND = "org.freedesktop.login1"
FPRINTD = "net.reactivated.Fprint"
DRIVER = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")


def session_path(sid: str) -> str:
    from logind_bus import SESSION_PREFIX, _label
    return f"{SESSION_PREFIX}/{_label(sid)}"


def main(address: str, pids: str, kinds: list) -> None:
    import dbus
    import dbus.lowlevel

    bus = dbus.bus.BusConnection(address)
    driver = bus.get_object(DRIVER[0], DRIVER[1])
    wanted = {int(p) for p in pids.split(",")}
    targets = []
    for name in driver.ListNames(dbus_interface=DRIVER[2]):
        if not name.startswith(":") or name == bus.get_unique_name():
            continue
        try:
            if driver.GetConnectionUnixProcessID(name, dbus_interface=DRIVER[2]) in wanted:
                targets.append(str(name))
        except dbus.exceptions.DBusException:
            continue                       # gone meanwhile

    def owner(name: str) -> str:
        try:
            return str(driver.GetNameOwner(name, dbus_interface=DRIVER[2]))
        except dbus.exceptions.DBusException:
            return ""

    def signal(path, interface, member, signature, *args):
        for target in targets:
            m = dbus.lowlevel.SignalMessage(path, interface, member)
            m.append(*args, signature=signature)
            m.set_destination(target)
            bus.send_message(m)

    me = bus.get_unique_name()
    for kind in kinds:
        what, _, arg = kind.partition(":")
        if what == "sleep":
            signal("/org/freedesktop/login1", LOGIND + ".Manager", "PrepareForSleep", "b", True)
        elif what == "session-new":
            signal("/org/freedesktop/login1", LOGIND + ".Manager", "SessionNew", "so", arg,
                   dbus.ObjectPath(session_path(arg)))
        elif what == "locked":
            signal(session_path(arg), "org.freedesktop.DBus.Properties", "PropertiesChanged", "sa{sv}as",
                   LOGIND + ".Session", {"LockedHint": dbus.Boolean(True, variant_level=1)},
                   dbus.Array([], signature="s"))
        elif what in ("logind-moved", "fprintd-gone", "fprintd-moved"):
            name = LOGIND if what == "logind-moved" else FPRINTD
            new = "" if what == "fprintd-gone" else me
            signal(DRIVER[1], DRIVER[2], "NameOwnerChanged", "sss", name, owner(name), new)
        elif what == "verify":
            signal("/net/reactivated/Fprint/Device/0", FPRINTD + ".Device", "VerifyStatus", "sb", arg, True)
        else:
            sys.exit(f"unknown kind {kind}")
    driver.GetId(dbus_interface=DRIVER[2])    # every signal above is routed by now
    print(" ".join(targets), flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
