#!/usr/bin/python3
"""A stand-in for localauth-helper in the module's tests, started by a localauthd of the
test's own (`localauthd --listen SOCKET --helper FAKE`) as it starts the real one: either
for a request, with the module's connection on fd 0 and 1, the peer's pidfd on fd 3 and
`--service-peer-uid U --service-peer-pid P --service-accepted-at NANOS --config PATH`; or
ahead of the next request (`--service-spare`), waiting on fd 0 for one message carrying the
connection and the pidfd (SpareWait in the helper).

It speaks the frame protocol of docs/PROTOCOL.md on the connection and behaves as the
module argument `fake_mode=MODE` says (the module forwards every argument as an `arg=`
request line). With `fake_dir=DIR` it appends one JSON line per event to DIR/events.jsonl:
what it was started with (request, argv, environment, descriptors, ids, session) and every
frame it got. A mode that hangs waits for the module to close the connection, so nothing
outlives its request.

localauthd starts it with stderr on /dev/null, so nothing here prints.
"""
import json
import os
import select
import signal
import socket
import struct
import sys
import time

FRAME_MAX = 4096


class Peer:
    """The connection to the module (fd 0 and 1)."""

    def __init__(self):
        self.rfd = 0
        self.wfd = 1

    def read_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = os.read(self.rfd, n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def read_frame(self):
        """(type, payload) or None at end of file."""
        header = self.read_exact(4)
        if header is None:
            return None
        (length,) = struct.unpack(">I", header)
        if not 1 <= length <= FRAME_MAX:
            raise ValueError(f"bad length {length}")
        body = self.read_exact(length)
        if body is None:
            return None
        return chr(body[0]), body[1:]

    def raw(self, data):
        os.write(self.wfd, data)

    def frame(self, ftype, payload=b""):
        if isinstance(payload, str):
            payload = payload.encode()
        self.raw(struct.pack(">I", len(payload) + 1) + ftype.encode() + payload)

    def result(self, code, name, cause):
        self.frame("R", f"code={code}\nname={name}\ncause={cause}")


def parse_request(payload):
    fields, args = {}, []
    for line in payload.decode().split("\n"):
        key, _, value = line.partition("=")
        if key == "arg":
            args.append(value)
        else:
            fields[key] = value
    fields["arg"] = args
    return fields


class Recorder:
    def __init__(self, directory):
        self.path = os.path.join(directory, "events.jsonl") if directory else None

    def __call__(self, event, **data):
        if self.path is None:
            return
        data.update(event=event, pid=os.getpid(), time=time.monotonic())
        with open(self.path, "a") as f:
            f.write(json.dumps(data) + "\n")


def spare_wait(argv):
    """A spare's start: the request's connection and the peer's pidfd from localauthd, on
    fd 0 and 1 and fd 3 as a helper started for the request has them; the argv that one
    would have. None when localauthd let the spare go before any request."""
    control = socket.socket(fileno=os.dup(0))
    msg, fds, _flags, _addr = socket.recv_fds(control, 4096, 4)
    control.close()
    if not msg:
        return None
    connection, pidfd = fds
    os.dup2(connection, 0)
    os.dup2(connection, 1)
    os.dup2(pidfd, 3)
    os.close(connection)
    os.close(pidfd)
    uid, pid, nanos, config = msg.decode().split("\n")
    return [argv[0], "--service-peer-uid", uid, "--service-peer-pid", pid,
            "--service-accepted-at", nanos, "--config", config]


def process_facts():
    fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))

    def target(fd):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
    return dict(
        env=dict(os.environ),
        fd_3=target(3),
        fds=fds,
        fd_targets={fd: target(fd) for fd in (0, 1, 2, 3)},
        ids=list(os.getresuid()) + list(os.getresgid()),
        groups=os.getgroups(),
        sid=os.getsid(0),
        cwd=os.getcwd(),
        sigint=str(signal.getsignal(signal.SIGINT)),
        ppid=os.getppid(),
        parent_ignores=parent_ignored_signals(),
        scheduling=scheduling(),
    )


def scheduling():
    """What a caller could hand down: nice, class, CPUs, I/O priority, limits."""
    import ctypes
    import resource
    libc = ctypes.CDLL(None, use_errno=True)
    ioprio = libc.syscall(252, 1, 0)   # ioprio_get(IOPRIO_WHO_PROCESS, self) on x86_64
    return dict(nice=os.getpriority(os.PRIO_PROCESS, 0), policy=os.sched_getscheduler(0),
                cpus=sorted(os.sched_getaffinity(0)), ioprio_class=ioprio >> 13,
                fsize=resource.getrlimit(resource.RLIMIT_FSIZE)[0],
                nofile=resource.getrlimit(resource.RLIMIT_NOFILE)[0],
                core=resource.getrlimit(resource.RLIMIT_CORE)[0])


def parent_ignored_signals():
    """The signals the caller (our parent) ignores while we run, by name."""
    try:
        with open(f"/proc/{os.getppid()}/status") as f:
            mask = next(int(l.split()[1], 16) for l in f if l.startswith("SigIgn:"))
    except (OSError, StopIteration):
        return None
    return sorted(s.name for s in signal.Signals if s.value < 64 and mask & (1 << (s.value - 1)))


# --- modes: each gets the peer, the recorder and the request; returns the exit status ---

def mode_match(peer, rec, req):
    peer.result(0, "success", "fake match")


def mode_nomatch(peer, rec, req):
    peer.frame("I", "Place your finger on the reader")
    peer.result(-1, "authenticationFailed", "fake: 3 failed matches")


def mode_messages(peer, rec, req):
    peer.frame("I", "fake info message")
    peer.frame("E", "fake error message")
    peer.result(-6, "biometryNotAvailable", "fake: no reader")


def mode_notoptedin(peer, rec, req):
    peer.result(1, "notOptedIn", "fake: user has not turned it on")


def mode_code(peer, rec, req):
    """Ends with the code given as fake_code=N (any LAError)."""
    code = int(option(req, "fake_code", "-4"))
    peer.result(code, "fake", f"fake code {code}")


def mode_garbage(peer, rec, req):
    peer.raw(b"\x00\x00\x00\x05I\xff\xfe\x00x")  # invalid UTF-8 and a NUL


def mode_oversized(peer, rec, req):
    peer.raw(struct.pack(">I", FRAME_MAX + 1) + b"I" + b"x" * FRAME_MAX)


def mode_zero_length(peer, rec, req):
    peer.raw(struct.pack(">I", 0))


def mode_truncated(peer, rec, req):
    peer.raw(struct.pack(">I", 100) + b"Ishort")


def mode_unknown_type(peer, rec, req):
    peer.frame("Z", "what")


def mode_wrong_direction(peer, rec, req):
    peer.frame("Q", "version=1")


def mode_reader_unreachable(peer, rec, req):
    """fprintd frozen or gone, as the real helper reports it."""
    peer.frame("S")
    peer.frame("R", "code=-6\nname=biometryNotAvailable\nreason=reader-unreachable\n"
                    "cause=fake: fprintd did not answer GetDevices in time")


def wait_closed(peer, seconds=3600):
    """Until the module has closed the connection (a hang-up; its shutdown of its sending
    side alone is not one), reading nothing more."""
    poller = select.poll()
    poller.register(peer.rfd, 0)   # POLLHUP and POLLERR are always reported
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if poller.poll(1000 * (deadline - time.monotonic())):
            return


def mode_hang(peer, rec, req):
    wait_closed(peer)


def mode_hang_after_start(peer, rec, req):
    """Says it started, as the real helper does at once, then hangs."""
    peer.frame("S")
    wait_closed(peer)


def mode_crash(peer, rec, req):
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(10)


def mode_exit_without_result(peer, rec, req):
    return 0


def mode_exit_nonzero(peer, rec, req):
    """A result, then a bad exit: the module sees only the result and the connection's end
    (localauthd reaps the helper and logs how it ended)."""
    peer.result(0, "success", "fake match, then a bad exit")
    return 3


def mode_unknown_code(peer, rec, req):
    peer.result(-77, "madeUp", "fake unknown code")


def mode_bad_result(peer, rec, req):
    peer.frame("R", "name=success\ncause=no code at all")


def mode_frame_after_result(peer, rec, req):
    peer.result(0, "success", "fake match")
    peer.frame("I", "one more thing")


def mode_linger_after_result(peer, rec, req):
    peer.result(0, "success", "fake match")
    wait_closed(peer)


def mode_prompt(peer, rec, req):
    """Asks for a code (echo off, or on with fake_echo=1); 1234 is right."""
    kind = "p" if option(req, "fake_echo", "0") == "1" else "P"
    peer.frame(kind, "Fake code: ")
    reply = peer.read_frame()
    if reply is None:
        return 5
    ftype, payload = reply
    rec("reply", type=ftype, payload=payload.decode())
    if ftype == "N":
        peer.result(-9, "appCancel", "fake: no answer")
    elif payload == b"1234":
        peer.result(0, "success", "fake: right code")
    else:
        peer.result(-1, "authenticationFailed", "fake: wrong code")


def mode_prompt_then_exit(peer, rec, req):
    """Prompts and is gone before the answer comes: the module's write meets a closed pipe."""
    peer.frame("P", "Fake code: ")
    return 0


def wait_for_cancel(peer, rec, seconds):
    """True when a `C` arrived within seconds."""
    import select
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([peer.rfd], [], [], deadline - time.monotonic())
        if not ready:
            continue
        frame = peer.read_frame()
        if frame is None:
            rec("eof")
            return False
        rec("frame", type=frame[0], payload=frame[1].decode())
        if frame[0] == "C":
            return True
    return False


def mode_cancel(peer, rec, req):
    """Waits fake_wait seconds (default 30) for a `C`."""
    peer.frame("I", "Touch the reader, or press Ctrl-C for the password")
    if wait_for_cancel(peer, rec, float(option(req, "fake_wait", "30"))):
        peer.result(-3, "userFallback", "fake: cancelled with Ctrl-C")
    else:
        peer.result(-4, "systemCancel", "fake: nobody cancelled")


def mode_ignore_cancel(peer, rec, req):
    peer.frame("I", "Touch the reader, or press Ctrl-C for the password")
    wait_for_cancel(peer, rec, 30)
    wait_closed(peer)


def option(req, key, default):
    for arg in req["arg"]:
        k, sep, v = arg.partition("=")
        if sep and k == key:
            return v
    return default


def main():
    argv = sys.argv
    # localauthd's one way to start a helper: `--service-spare`, with the configuration a
    # spare may ready things from (`--config PATH`; the fake readies nothing).
    if argv[1:2] == ["--service-spare"] and (len(argv) == 2 or (len(argv) == 4 and argv[2] == "--config")):
        argv = spare_wait(argv)
        if argv is None:
            return 0
    peer = Peer()
    first = peer.read_frame()
    if first is None or first[0] != "Q":
        return 4
    req = parse_request(first[1])
    rec = Recorder(option(req, "fake_dir", None))
    rec("start", request=req, argv=argv[1:], **process_facts())
    if req.get("mode") == "authsucc":
        # The lines after the password send PAM_AUTHTOK (`A`) or `N` right after the
        # request; the real helper reads it before it answers.
        tok = peer.read_frame()
        if tok is not None:
            rec("authtok", type=tok[0], payload=tok[1].decode())
    mode = option(req, "fake_mode", "match")
    handler = globals().get("mode_" + mode.replace("-", "_"))
    if handler is None:
        peer.result(-4, "systemCancel", f"fake: unknown mode {mode}")
        return 0
    status = handler(peer, rec, req) or 0
    rec("end", status=status)
    return status


if __name__ == "__main__":
    sys.exit(main())
