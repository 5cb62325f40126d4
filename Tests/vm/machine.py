"""One booted guest: qemu started and stopped by its own PID, sshd, QMP.

    with Machine(image_dir) as m:          # boots with -snapshot; waits for sshd
        m.ssh("loginctl list-sessions").stdout
        m.put(local_file, "/usr/local/bin/")
        m.qmp.type("id\\n")
        m.reboot()                         # the guest's own reboot; the snapshot survives it
    # stopped: QEMU's quit, then SIGTERM/SIGKILL to the recorded PID only

* The disk is opened with ``-snapshot``: every boot starts from the built image and nothing
  is written back to it (two runs may share one image).
* qemu is this process's child, started with PR_SET_PDEATHSIG, so it dies with the test run
  even when that is killed outright; its PID is also in ``run_dir/qemu.pid`` (for a person).
* Networking is QEMU's user network with ``restrict=on`` and one forward, 127.0.0.1:PORT to
  the guest's sshd; PORT is the first free one of ``LOCALAUTH_VM_PORTS`` (default 2230-2239).
* Root's commands go through one ssh master connection (its PID recorded and stopped the
  same way): under TCG a fresh ssh handshake costs about half a second. Other users' logins
  (``ssh(..., user="alice")``) are each a new connection, so each is a new logind session.
* ``LOCALAUTH_VM_ACCEL``: ``tcg`` (default: QEMU's emulator, which boots a stock kernel in
  about 20 s on 2 cores) or ``kvm`` (where /dev/kvm runs a guest kernel at native speed; a
  nested KVM may be a thousand times slower in ring 0, see Tests/vm/README.md).
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qmp import QMP, QMPError  # noqa: E402

SSH_WAIT = 300   # seconds a boot may take until sshd answers (TCG on a busy 2-core host)
QUIT_WAIT = 10     # seconds qemu may take to exit after quit (or a signal)
# Boots (or resets) more when the guest's kernel oopsed in its boot (kernel_oopsed). Two
# loaded CI runs of six met the oops twice in a row (sched_clock_idle_wakeup_event at 3.5 s:
# an instruction half rewritten as the kernel patched a static key while the other vCPU ran
# it; `tsc=unstable` below takes that patching away). An oops is seen within seconds of the
# boot, so booting again is cheap.
BOOTS_AFTER_AN_OOPS = 4
PR_SET_PDEATHSIG = 1


class MachineError(RuntimeError):
    pass


def _ports() -> range:
    spec = os.environ.get("LOCALAUTH_VM_PORTS", "2230-2239")
    first, _, last = spec.partition("-")
    return range(int(first), int(last or first) + 1)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Machine:
    def __init__(self, image: Path, *, desktop: bool = False, memory: Optional[int] = None,
                 accel: Optional[str] = None):
        self.image = Path(image)
        self.desktop = desktop
        self.memory = memory or (4096 if desktop else 2048)
        self.accel = accel or os.environ.get("LOCALAUTH_VM_ACCEL", "tcg")
        self.run_dir: Optional[Path] = None
        self.port: Optional[int] = None
        self.proc: Optional[subprocess.Popen] = None
        self.master: Optional[subprocess.Popen] = None
        self.qmp: Optional[QMP] = None
        self.boot_seconds: Optional[float] = None

    # --- life cycle -------------------------------------------------------------------

    def __enter__(self) -> "Machine":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        if shutil.which("qemu-system-x86_64") is None:
            raise MachineError("qemu-system-x86_64 not found: scripts/install-deps installs "
                               "qemu-system-x86")
        for f in ("disk.img", "initrd.img", "ssh/id_ed25519"):
            if not (self.image / f).exists():
                raise MachineError(f"image {self.image} has no {f} (Tests/vm/images.py builds it)")
        self.run_dir = Path(tempfile.mkdtemp(prefix="la-vm-run-"))
        key = self.run_dir / "id_ed25519"
        shutil.copy(self.image / "ssh/id_ed25519", key)
        key.chmod(0o600)
        started = time.monotonic()
        tried = []
        for port in _ports():
            if not _port_free(port):
                tried.append(f"{port} busy")
                continue
            self.port = port
            self._spawn()
            up = self._wait_ssh(started)
            for _ in range(BOOTS_AFTER_AN_OOPS):
                if up or not self.kernel_oopsed():
                    break
                # The emulator's fault, not the product's (see kernel_oopsed): once more.
                tried.append("the guest's kernel oopsed while booting; booted again")
                self._quit_qemu()
                self._spawn()
                up = self._wait_ssh(time.monotonic())
            if up:
                self.boot_seconds = time.monotonic() - started
                self.qmp = QMP(str(self.run_dir / "qmp.sock"))
                return
            if self.proc.poll() is None:
                break  # qemu runs but sshd never answered: no other port will help
            tried.append(f"{port}: qemu exited {self.proc.returncode}")
        log = self.serial_tail()
        self.stop()
        raise MachineError(f"the guest did not come up ({'; '.join(tried) or 'sshd silent'}); "
                           f"serial console:\n{log}")

    def _qemu_argv(self) -> list[str]:
        img, run = self.image, self.run_dir
        kernel = img / "vmlinux" if (img / "vmlinux").exists() else img / "vmlinuz"
        # console=ttyS0 only: the kernel's messages go to the serial log, not onto tty1,
        # whose text the tests read.
        # tsc=unstable: the guest's kernel never marks its sched_clock stable (it runs on
        # HPET instead), so it never patches that static key's branches in place while the
        # other vCPU runs them: not at 3.5 s into the boot (the oops above), nor later, when
        # a clocksource watchdog under a loaded host would mark the TSC unstable. Under
        # QEMU's multi-threaded emulator such patching can leave a vCPU half an instruction.
        append = "root=LABEL=localauth-vm rw console=ttyS0,115200 net.ifnames=1 tsc=unstable"
        if self.desktop:
            append += " systemd.unit=graphical.target"
        if self.accel == "kvm":
            accel = ["-enable-kvm", "-cpu", os.environ.get("QEMU_CPU", "host,-arch-capabilities")]
        else:
            # No AVX2: llvmpipe (GNOME Shell's renderer here) JITs AVX2 gathers, which
            # QEMU 7.2's emulator got wrong (seen on Debian 13: gnome-shell killed by a
            # SEGV in its llvmpipe threads at a vpgatherdd, minutes into the first login).
            # No VAES or BMI2 either: every real CPU with them has AVX2, and libgcrypt 1.11
            # relies on it (its SHA-1 for AVX with BMI2 has AVX2's vpbroadcastd), so
            # without AVX2 gnome-keyring-daemon died of SIGILL at the first login.
            accel = ["-accel", "tcg,thread=multi,tb-size=512", "-cpu", "max,-avx2,-vaes,-bmi2"]
        return ["qemu-system-x86_64", *accel, "-m", str(self.memory), "-smp", "2",
                "-name", "localauth-vm", "-kernel", str(kernel), "-initrd", str(img / "initrd.img"),
                "-append", append,
                "-drive", f"file={img / 'disk.img'},format=raw,if=virtio,cache=unsafe", "-snapshot",
                "-nic", f"user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:{self.port}-:22",
                "-vga", "virtio" if self.desktop else "std", "-display", "none",
                "-serial", f"file:{run / 'serial.log'}",
                "-qmp", f"unix:{run / 'qmp.sock'},server=on,wait=off",
                "-usb", "-device", "usb-tablet"]

    def _spawn(self) -> None:
        log = open(self.run_dir / "qemu.log", "ab")
        self.proc = subprocess.Popen(self._qemu_argv(), stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        log.close()
        (self.run_dir / "qemu.pid").write_text(f"{self.proc.pid}\n")

    def _wait_ssh(self, started: float) -> bool:
        while time.monotonic() - started < SSH_WAIT:
            if self.proc.poll() is not None or self.kernel_oopsed():
                return False
            r = subprocess.run(self._ssh_base("root", connect_timeout=3) + ["true"],
                               stdin=subprocess.DEVNULL, capture_output=True)
            if r.returncode == 0:
                self._start_master()
                return True
            time.sleep(1)
        return False

    def _start_master(self) -> None:
        self._stop_master()
        sock = self.run_dir / "root.ctl"
        self.master = subprocess.Popen(
            self._ssh_base("root") + ["-M", "-N", "-o", f"ControlPath={sock}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent)
        for _ in range(100):
            if sock.exists():
                return
            if self.master.poll() is not None:
                break
            time.sleep(0.1)
        raise MachineError("root's ssh master connection did not start")

    def _stop_master(self) -> None:
        if self.master is not None and self.master.poll() is None:
            self.master.terminate()
            try:
                self.master.wait(10)
            except subprocess.TimeoutExpired:
                self.master.kill()
                self.master.wait()
        self.master = None
        if self.run_dir is not None:
            (self.run_dir / "root.ctl").unlink(missing_ok=True)

    def stop(self) -> None:
        """QEMU's own quit, then the recorded qemu PID only (SIGTERM, then SIGKILL). No
        power-off in the guest: the disk is a -snapshot, nothing of the guest is kept, and
        GNOME's power-off alone took the whole minute it was given."""
        self._stop_master()
        self._quit_qemu()
        if self.run_dir is not None and os.environ.get("LOCALAUTH_VM_KEEP_RUN") != "1":
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def reboot(self) -> None:
        """The guest's own reboot (systemctl reboot): the same qemu, the same snapshot."""
        old = self.boot_id()
        self.ssh("systemctl reboot", check=False, timeout=30)
        self._stop_master()
        started = time.monotonic()
        resets = 0
        while time.monotonic() - started < SSH_WAIT:
            if self.proc.poll() is not None:
                raise MachineError(f"qemu exited during the reboot:\n{self.serial_tail()}")
            if resets < BOOTS_AFTER_AN_OOPS and self.kernel_oopsed():
                # The emulator's fault, not the product's (see kernel_oopsed): a reset.
                self.qmp.cmd({"execute": "system_reset"})
                resets, started = resets + 1, time.monotonic()
                time.sleep(2)           # the new boot's "Linux version" line first
                continue
            r = subprocess.run(self._ssh_base("root", connect_timeout=3)
                               + ["cat /proc/sys/kernel/random/boot_id"],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True)
            if r.returncode == 0 and r.stdout.strip() not in ("", old):
                self._start_master()
                return
            time.sleep(1)
        raise MachineError(f"no sshd after the reboot within {SSH_WAIT} s:\n{self.serial_tail()}")

    # --- talking to the guest ---------------------------------------------------------

    def _ssh_base(self, user: str, connect_timeout: int = 10) -> list[str]:
        return ["ssh", "-q", "-i", str(self.run_dir / "id_ed25519"), "-o", "BatchMode=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", "-o", f"ConnectTimeout={connect_timeout}",
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=6",
                "-p", str(self.port), f"{user}@127.0.0.1"]

    def ssh_argv(self, user: str = "root", *, tty: bool = False) -> list[str]:
        """The ssh command line for user (root: through the master connection)."""
        argv = self._ssh_base(user)
        if user == "root" and self.master is not None:
            argv[1:1] = ["-o", f"ControlPath={self.run_dir / 'root.ctl'}"]
        if tty:
            argv.insert(1, "-tt")
        return argv

    def ssh(self, command: str, *, user: str = "root", input: Optional[str] = None,
            timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run(self.ssh_argv(user) + [command], input=input, capture_output=True,
                           text=True, timeout=timeout,
                           stdin=None if input is not None else subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise MachineError(f"guest command failed ({r.returncode}) as {user}: {command}\n"
                               f"{r.stdout}{r.stderr}")
        return r

    def put(self, sources: Sequence[Path], dest: str) -> None:
        argv = ["scp", "-q", "-o", f"ControlPath={self.run_dir / 'root.ctl'}",
                "-i", str(self.run_dir / "id_ed25519"), "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                "-P", str(self.port), *map(str, sources), f"root@127.0.0.1:{dest}"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise MachineError(f"scp to {dest} failed: {r.stderr}")

    def boot_id(self) -> str:
        return self.ssh("cat /proc/sys/kernel/random/boot_id").stdout.strip()

    def _quit_qemu(self) -> None:
        """QEMU's own quit, then the recorded qemu PID only (SIGTERM, then SIGKILL)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                if self.qmp is None:
                    self.qmp = QMP(str(self.run_dir / "qmp.sock"), timeout=5)
                self.qmp.cmd({"execute": "quit"})
            except (OSError, QMPError):     # qemu may close the socket before it answers
                pass
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    self.proc.send_signal(sig)
                try:
                    self.proc.wait(QUIT_WAIT)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.qmp is not None:
            try:
                self.qmp.close()
            except OSError:
                pass
            self.qmp = None

    def kernel_oopsed(self) -> bool:
        """The guest's kernel reported an oops or a panic in its current boot (after the
        serial log's last "Linux version" line). Seen twice under QEMU's multi-threaded
        emulator, within 4 s of boot, in the kernel's own code being patched as it ran
        (int3 at a NOP: sched_clock_cpu, enqueue_task_fair): the emulator's fault, before
        anything of the product runs, which one more boot does not meet."""
        try:
            text = (self.run_dir / "serial.log").read_text(errors="replace")
        except (OSError, TypeError):
            return False
        boot = text.rfind("Linux version")
        current = text[boot:] if boot >= 0 else text
        return "Oops:" in current or "Kernel panic" in current

    def serial_tail(self, lines: int = 40) -> str:
        try:
            text = (self.run_dir / "serial.log").read_text(errors="replace")
        except (OSError, TypeError):
            return "(no serial log)"
        return "\n".join(text.splitlines()[-lines:])
