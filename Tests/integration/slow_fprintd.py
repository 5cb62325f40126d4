"""An fprintd that answers every call, each after the same delay: the deterministic form of "a
daemon in trouble", for the bound on the helper's start-up as a whole.

Owns net.reactivated.Fprint on the bed's bus with the Manager and one Device, enough of the
API (docs/ARCHITECTURE.md §8) for the helper's start-up: GetDevices, GetDefaultDevice,
ListEnrolledFingers, Properties.Get of `name` and `scan-type`, Claim, Release, VerifyStart,
VerifyStop. Each answer comes `delay` seconds after its call, one call at a time, as a
single-threaded daemon answers. A test chooses a delay under the helper's `bus_timeout`
whose sum over the start-up is over it: every call would be answered in time, the whole
start-up is not, on a fast machine or a slow one.

Run as a script by SlowFprintd (``/usr/bin/python3 slow_fprintd.py DELAY``), with
DBUS_SYSTEM_BUS_ADDRESS set to the bed's bus.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bus_fake import FakeProcess  # noqa: E402

NAME = "net.reactivated.Fprint"
MANAGER_PATH = "/net/reactivated/Fprint/Manager"
DEVICE_PATH = "/net/reactivated/Fprint/Device/0"
MANAGER = "net.reactivated.Fprint.Manager"
DEVICE = "net.reactivated.Fprint.Device"
PROPS = "org.freedesktop.DBus.Properties"


def _serve(delay: float) -> None:
    import dbus
    import dbus.service
    from dbus.mainloop.glib import DBusGMainLoop
    from gi.repository import GLib

    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])

    def slow():
        time.sleep(delay)

    class Manager(dbus.service.Object):
        @dbus.service.method(MANAGER, out_signature="ao")
        def GetDevices(self):
            slow()
            return [dbus.ObjectPath(DEVICE_PATH)]

        @dbus.service.method(MANAGER, out_signature="o")
        def GetDefaultDevice(self):
            slow()
            return dbus.ObjectPath(DEVICE_PATH)

    class Device(dbus.service.Object):
        @dbus.service.method(DEVICE, in_signature="s", out_signature="as")
        def ListEnrolledFingers(self, user):
            slow()
            return ["right-index-finger"]

        @dbus.service.method(DEVICE, in_signature="s")
        def Claim(self, user):
            slow()

        @dbus.service.method(DEVICE)
        def Release(self):
            slow()

        @dbus.service.method(DEVICE, in_signature="s")
        def VerifyStart(self, finger):
            slow()

        @dbus.service.method(DEVICE)
        def VerifyStop(self):
            slow()

        @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
        def Get(self, interface, name):
            slow()
            values = {"name": "Slow device for tests", "scan-type": "press",
                      "num-enroll-stages": dbus.Int32(5), "finger-present": False, "finger-needed": False}
            if interface != DEVICE or name not in values:
                raise dbus.exceptions.DBusException(f"no property {name}",
                                                    name="org.freedesktop.DBus.Error.UnknownProperty")
            return values[name]

    name = dbus.service.BusName(NAME, bus)  # noqa: F841  (held for the process's life)
    Manager(bus, MANAGER_PATH)
    Device(bus, DEVICE_PATH)
    print("ready", flush=True)
    GLib.MainLoop().run()


class SlowFprintd(FakeProcess):
    """The fake on ``address`` (bus_fake.FakeProcess); ``stop()`` ends exactly the process
    it started."""

    def __init__(self, address: str, delay: float):
        super().__init__(Path(__file__), address, str(delay), what="the slow fprintd")
        self.delay = delay


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: slow_fprintd.py DELAY  (with DBUS_SYSTEM_BUS_ADDRESS set)")
    _serve(float(sys.argv[1]))
