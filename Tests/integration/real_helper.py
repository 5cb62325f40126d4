"""The real helper against a test bed through a pam_wrapper world, one transaction at a time:
the driver of the fault matrix (test_faults.py) and of the logind cases
(test_never_remote.py).

The module reaches root's side one way: localauthd's socket. Where no systemd runs (here),
the service is started as an administrator starts it from their init, ``localauthd
--listen SOCKET --helper PATH --config PATH``, and the module is pointed at it with the
root-only argument ``service=SOCKET``:

* ``LocalService(helper_path, bed=..., syslog=...)``: one localauthd of the test's own on a
  socket in a fresh directory under /run, its helper ``helper_path`` (the real one, or a fake
  behind it), its own configuration naming ``bed``'s bus (so that its answer for an absent
  fprintd asks the bed's bus, not the machine's), run in ``servicebed.namespace_prefix`` so
  that its lines and its helpers' reach ``syslog``; started with its PID recorded, stopped
  by that PID and its directory (the socket with it) removed on every exit path
  (``close()``, the world's close, or the end of the process). ``arg`` is the module
  argument ``service=SOCKET``; ``helpers()`` the helpers it runs now.
* ``Real(world, bed)``: a made-up user with a password, a state directory, a
  ``LocalService`` of the real helper (``service``; its syslog ``syslog``, stopped when the
  world closes), and ``stack(*args)``, the module (then the password module) with
  arguments that name the bed and the service; ``attempt(fault, service)`` drives one
  transaction with someone at the reader; ``match_works(service)``; ``in_background(...)``.
* ``attempt(...)``, ``Tally``: a transaction, counted in a tally when one is given (tried,
  wrongful successes, host crashes); ``check(r, result, pam, cause)``: the first line's
  outcome, its log line and the password after it; ``prompts(r)``,
  ``password_prompt_at(r)``;
* ``bed_args(world, bed, state, *extra, service=...)``: the module arguments that point a
  service's helper at a bed, a state directory and no configuration file, without
  password-age rules (the service, by default, one of the real helper for that world and
  bed: ``service_for(world, bed)``);
* ``helper_pids_below(pid)``: the real helpers started below a process; ``parent_of(pid)``.
"""
import atexit
import concurrent.futures
import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pamenv  # noqa: E402
from pamenv import MODULE, outcomes  # noqa: E402
import servicebed  # noqa: E402

REAL_HELPER = pamenv.REPO / "build" / "libexec" / "localauth" / "localauth-helper"
LOCALAUTHD = pamenv.REPO / "build" / servicebed.SERVICE_REL
USER = "la-fault-user"          # made up: pam_matrix knows its password, fprintd any name
PASSWORD = "fault-pw-7"
ENROLLED, STRANGER = "f1", "f-stranger"   # virtual prints: the user's and someone else's
# Someone can be at the reader: the driver reads its script from a pipe, so a graphical
# display says so instead of a terminal.
PRESENT = {"DISPLAY": ":0"}
NOBODY = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}
RECOGNIZED = "Fingerprint recognized"

needs_helper = pytest.mark.skipif(not (REAL_HELPER.is_file() and LOCALAUTHD.is_file()),
                                  reason="localauth-helper or localauthd not built (scripts/build)")


class LocalService:
    """See the module docstring: ``localauthd --listen`` with ``helper`` behind it.

    ``bed``: the bed whose bus the service's own configuration names (its answer for an
    absent fprintd and its watch of logind ask that bus); without one the service answers
    nothing itself (``--absent-answer no``: a fake helper behind it gets every request).
    ``state``: the state directory of that configuration. ``more``: localauthd's further
    options (``--spare no`` for a helper that cannot wait as a spare, as the fake cannot).
    ``syslog``: where its lines and its helpers' go (default: one of its own, closed with
    it). ``binary``: the localauthd to run (default: build/'s). ``prefix``: an argv prefix
    to run it under (default: ``servicebed.namespace_prefix(syslog)``). ``agent``: it also
    serves the ssh-agent protocol on ``agent_socket`` (``--agent-listen``, beside the socket;
    None without it)."""

    def __init__(self, helper_path=REAL_HELPER, *more, bed=None, state=None, syslog=None, binary=LOCALAUTHD,
                 prefix=None, agent=False):
        self.helper = Path(helper_path)
        self.own_syslog = syslog is None
        self.syslog = syslog or servicebed.Syslog()
        self.service = None
        self.dir = Path(tempfile.mkdtemp(prefix="localauth-bed-service-", dir="/run"))
        atexit.register(self.close)
        try:
            self.dir.chmod(0o755)
            self.socket = self.dir / "socket"
            self.agent_socket = self.dir / "ssh-agent" if agent else None
            if agent:
                more = (*more, "--agent-listen", str(self.agent_socket))
            self.config = self.dir / "localauth.conf"
            options = {}
            if bed is not None:
                options["dbus_address"] = bed.address
                if bed.state_dir is not None:
                    options["fprint_dir"] = str(bed.state_dir)
            if state is not None:
                options["state_dir"] = str(state)
            self.config.write_text("".join(f"{k} = {v}\n" for k, v in options.items()))
            self.config.chmod(0o644)
            if bed is None and "--absent-answer" not in more:
                more = (*more, "--absent-answer", "no")
            self.service = servicebed.Service(_Installed(self.helper, self.config), self.syslog, *more,
                                              socket_path=self.socket, binary=binary, prefix=prefix)
        except BaseException:
            self.close()
            raise

    @property
    def arg(self):
        """The module argument that sends its requests here."""
        return f"service={self.socket}"

    @property
    def pid(self):
        return self.service.proc.pid

    def helpers(self):
        """The service's helpers serving a request now (pids), not a spare waiting for one."""
        return [int(pid) for pid in self.service.helpers()]

    def lines(self, ident=None, since=0):
        """Messages after the syslog mark ``since``, of programs named ``ident`` if given."""
        return self.syslog.since(since, ident)

    def close(self):
        if self.service is not None:
            self.service.stop()            # by its PID; it removes the socket it bound
            self.service = None
        shutil.rmtree(self.dir, ignore_errors=True)   # the socket too, whatever happened
        if self.own_syslog:
            self.syslog.close()
        atexit.unregister(self.close)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Installed:
    """What servicebed.Service reads of an installation: the helper and the configuration."""

    def __init__(self, helper_path, config):
        self.helper, self.config = helper_path, config


def close_with(world, closable):
    """``closable.close()`` when ``world`` closes (before its directory goes)."""
    before = world.close

    def close():
        try:
            closable.close()
        finally:
            before()
    world.close = close


@dataclasses.dataclass
class Tally:
    """The faults tried, those that ended in a wrongful success, those that killed the host."""

    tried: list = dataclasses.field(default_factory=list)
    wrongful: list = dataclasses.field(default_factory=list)
    crashed: list = dataclasses.field(default_factory=list)


def prompts(result):
    return [text for style, text in result.messages if style.startswith("PAM_PROMPT")]


def attempt(fault, world, service, user=USER, *, tally=None, answers=(PASSWORD,), **kw):
    """One transaction under a fault, counted in ``tally`` when given. A host that dies is
    a failure of this test; a success without a matched finger and without the password is
    noted (in a run where no finger is meant to match)."""
    if tally is not None:
        tally.tried.append(fault)
    try:
        r = world.drive(service, user, answers=list(answers), **kw)
    except RuntimeError as exc:  # the driver died: the application would have
        if tally is not None:
            tally.crashed.append(fault)
        pytest.fail(f"{fault}: the host process did not survive: {exc}")
    ours = outcomes(r.logs)
    if tally is not None and ((ours and ours[0]["pam"] == "PAM_SUCCESS") or (
            r.rv == "PAM_SUCCESS" and "Password: " not in prompts(r))):
        tally.wrongful.append(fault)
    return r


def check(r, result, pam, cause, *, password=True):
    """The first line's outcome, its log line, and the password after it."""
    ours = outcomes(r.logs)
    assert ours, f"no outcome line: {[l.message for l in r.logs]}"
    first = ours[0]
    assert (first["result"], first["pam"]) == (result, pam), first
    assert cause in first["cause"], first
    assert r.children == [], "the host has a child left: the module started a process"
    if password:
        assert r.rv == "PAM_SUCCESS", r.stderr[-2000:]
        assert prompts(r)[-1] == "Password: "
    return first


def password_prompt_at(r):
    """When the password prompt came (the driver's clock)."""
    for (style, text), at in zip(reversed(r.messages), reversed(r.times["messages"])):
        if style == "PAM_PROMPT_ECHO_OFF" and text == "Password: ":
            return at
    raise AssertionError(f"no password prompt: {r.messages}")


def service_for(world, bed):
    """A ``LocalService`` of the real helper for ``bed``, one per world and bed, stopped
    when the world closes."""
    made = world.__dict__.setdefault("_localauthd_for_beds", {})
    if id(bed) not in made:
        made[id(bed)] = LocalService(REAL_HELPER, bed=bed)
        close_with(world, made[id(bed)])
    return made[id(bed)]


def bed_args(world, bed, state, *extra, service=None):
    """The helper of ``service`` (a ``LocalService``; default: ``service_for(world, bed)``)
    with ``bed``'s bus and prints and the state directory ``state``; a configuration file
    that does not exist; no password-age rules (a user the product has never seen reaches
    the reader); ``extra`` arguments last."""
    service = service or service_for(world, bed)
    return [service.arg, f"state_dir={state}", f"config={world.root}/absent.conf",
            f"dbus_address={bed.address}", f"fprint_dir={bed.state_dir}",
            "password_after_reboot=no", "password_after_idle=0", "password_stale=0", *extra]


class Real:
    """The real helper behind a localauthd of the test's own in a pam_wrapper world,
    pointed at a bed. The password is not required first (that rule has its own tests):
    every run reaches the reader. Its attempts are counted in ``tally`` (a class attribute;
    None: not counted). ``syslog``: where the service and its helpers log (default: one
    of the service's own, ``self.syslog``); the service stops when the world closes."""

    tally = None

    def __init__(self, world, bed, *, syslog=None):
        self.world, self.bed = world, bed
        self.state = world.root / "state"
        self.state.mkdir(mode=0o700)
        world.add_user(USER, PASSWORD)
        self.own_syslog = syslog is None
        self.syslog = syslog or servicebed.Syslog()
        self.service = None
        self.namespace = None
        self.more = ()
        close_with(world, self)
        self.service = LocalService(REAL_HELPER, bed=bed, state=self.state, syslog=self.syslog)

    def restart_service(self):
        """A fresh service on a fresh socket, the same syslog: its mount namespace is made
        now, so it sees what the test mounted since (a private namespace takes no later
        mounts). Stacks made before name the old socket: make them again."""
        old = self.service
        self.service = LocalService(REAL_HELPER, bed=self.bed, state=self.state, syslog=self.syslog)
        self.namespace = None
        old.close()

    def in_namespace(self, prefix, syslog=None, more=None):
        """The service again (once for each ``prefix`` and ``syslog``), run under ``prefix``
        (a mount namespace the test made, e.g. its own /run/systemd) and then in one whose
        /dev/log is ``syslog`` (default: ``self.syslog``): its helpers read what the test
        put there, as the caller it serves would. Stacks made before name the old socket.
        ``more``: localauthd's further options (default: those it was last given here)."""
        syslog = syslog or self.syslog
        more = self.more if more is None else tuple(more)
        self.more = more
        key = (tuple(prefix), id(syslog), tuple(more))
        if self.namespace == key:
            return
        old = self.service
        self.service = LocalService(REAL_HELPER, *more, bed=self.bed, state=self.state, syslog=syslog,
                                    prefix=[*prefix, *servicebed.namespace_prefix(syslog)])
        self.namespace = key
        old.close()

    def close(self):
        if self.service is not None:
            self.service.close()
        if self.own_syslog:
            self.syslog.close()

    def args(self, *extra, state=None):
        return bed_args(self.world, self.bed, state or self.state, *extra, service=self.service)

    def stack(self, *extra, authsucc=False, name="la-fault", **kw):
        args = " ".join(self.args(*extra, **kw))
        lines = [f"auth sufficient {MODULE} {args}", f"auth required {self.world.matrix}"]
        if authsucc:
            lines.append(f"auth optional {MODULE} authsucc {args}")
            lines.append(f"account required {MODULE} {args}")
            lines.append("account required pam_permit.so")   # ours answers PAM_IGNORE
        return self.world.service(name, lines)

    def attempt(self, fault, service, user=USER, **kw):
        kw.setdefault("env", PRESENT)
        kw.setdefault("account", True)   # the account phase after success, as sudo runs it
        return attempt(fault, self.world, service, user, tally=self.tally, **kw)

    def in_background(self, fault, service, **kw):
        pool = concurrent.futures.ThreadPoolExecutor(1)
        future = pool.submit(self.attempt, fault, service, **kw)
        pool.shutdown(wait=False)
        return future

    def match_works(self, service):
        """After the fault is gone, the finger works again (nothing left claimed)."""
        inj = self.bed.scan_when_ready(ENROLLED)
        r = self.world.drive(service, USER, answers=[PASSWORD], env=PRESENT)
        assert inj.wait(15) == ["verify-match"]
        assert outcomes(r.logs)[0]["result"] == "success", outcomes(r.logs)
        assert "Password: " not in prompts(r)


def helper_pids_below(ancestor):
    """Processes running the real helper whose parent is a child of `ancestor` (the driver
    is our child, and so is a service we started; others may run helpers at the same
    time). A spare the service started ahead, still waiting for its request, is one too."""
    target = os.path.realpath(REAL_HELPER)
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{d}/exe") != target:
                continue
            if parent_of(parent_of(int(d))) == ancestor:
                found.append(int(d))
        except OSError:
            continue
    return found


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
