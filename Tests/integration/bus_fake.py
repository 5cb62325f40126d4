"""A fake daemon of the tests on a bed's private bus: a Python script of this folder run as
its own process with DBUS_SYSTEM_BUS_ADDRESS set, which prints ``ready`` once it owns its
name (slow_fprintd.SlowFprintd, logind_bus.LogindBus).

``FakeProcess(script, address, *args, what=...)``: ``start()`` returns once the fake said
``ready`` (and raises, the process stopped, when it did not); ``stop()`` ends exactly the
process it started (SIGTERM, SIGKILL after 5 s); a context manager too.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

PYTHON = "/usr/bin/python3"


class FakeProcess:
    def __init__(self, script: Path, address: str, *args: str, what: str = "the fake"):
        self.script, self.address, self.args, self.what = Path(script), address, args, what
        self.proc: subprocess.Popen | None = None

    def start(self):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address)
        self.proc = subprocess.Popen([PYTHON, str(self.script.resolve()), *self.args], env=env,
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        if self.proc.stdout.readline().decode().strip() != "ready":
            self.stop()
            raise RuntimeError(f"{self.what} did not start")
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
