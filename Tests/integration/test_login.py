"""The real /bin/login on a pseudo-terminal, with pam.d/login as shipped.

Run as root: /usr/bin/python3 -m pytest Tests/integration/test_login.py

`login` always uses the PAM service `login`, so the test never installs or edits
/etc/pam.d/login: it runs login in a private mount namespace (servicebed.namespace_prefix)
where a throwaway copy of the repository's pam.d/login -- the module named by its path in a
temporary installation, plus the root-only `config=` argument naming the test's
configuration (bed's bus, a state directory of the test's) -- is bind-mounted over
/etc/pam.d/login. The same namespace puts empty throwaway files over /var/log/wtmp, btmp,
lastlog and faillog, which login and its session modules write, and gives /dev/log to the
test. The machine's files are never touched; the mounts end with login.

login runs as root; the module reaches the helper through the installation's localauthd,
which the test starts on the installation's socket as where no systemd runs (`localauthd
--listen`), in a namespace with the same files; the user is a throwaway one (useradd without a home directory; login then uses HOME=/).
"""
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system  # noqa: E402
from servicebed import Service, Syslog, namespace_prefix  # noqa: E402
from pamenv import LogLine, outcomes  # noqa: E402
from installations import service_inst  # noqa: E402,F401  (the inst fixture)

REPO = Path(__file__).resolve().parents[2]
ENROLLED, OTHER = "f1", "f9"
FINGER = "right-index-finger"
PASSWORD_PROMPT = re.compile(r"(^|\n)Password: ")
LOGIN = "/bin/login"
LOGS = ("/var/log/wtmp", "/var/log/btmp", "/var/log/lastlog", "/var/log/faillog")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="runs as root"),
    pytest.mark.skipif(not Path(LOGIN).is_file(), reason="no /bin/login"),
]


@pytest.fixture
def user():
    with system.ThrowawayUser(prefix="la-login-") as u:
        yield u


class LoginBed:
    """The namespace files: the login stack and the empty log files; and the installation's
    localauthd on its socket, started as where no systemd runs (`localauthd --listen`), in a
    namespace with the same files, so that its helpers see what login sees."""

    def __init__(self, inst, bed, user):
        self.inst, self.bed, self.user = inst, bed, user
        self.dir = Path(tempfile.mkdtemp(prefix="localauth-login-"))
        self.dir.chmod(0o755)
        self.state = self.dir / "state"
        self.state.mkdir(mode=0o700)
        inst.write_bed_config(bed, self.state)
        bed.enroll(user.name, FINGER, ENROLLED)
        self.stack = self.dir / "login"
        self.stack.write_text(self.login_stack())
        self.stack.chmod(0o644)
        self.files = {"/etc/pam.d/login": self.stack}
        for path in LOGS:
            if Path(path).exists():
                empty = self.dir / Path(path).name
                empty.touch(mode=0o664)
                self.files[path] = empty
        self.syslog = Syslog()
        self.service = None
        try:
            self.service = Service(inst, self.syslog, socket_path=inst.service_socket,
                                   prefix=namespace_prefix(self.syslog, self.files))
        except BaseException:
            self.close()
            raise

    def login_stack(self) -> str:
        """pam.d/login as shipped, with this installation's module and configuration."""
        shipped = (REPO / "pam.d" / "login").read_text()
        text = re.sub(r"pam_localauth\.so( authsucc)?",
                      lambda m: f"{self.inst.module}{m.group(1) or ''} config={self.inst.config}",
                      shipped)
        assert text.count(str(self.inst.module)) == 3, text  # the first, authsucc and account lines
        return text

    def close(self):
        if self.service is not None:
            self.service.stop()
        self.syslog.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def login(self, fingers=(), password=None):
        """login USER on a new terminal; inject the prints as the reader asks for them, type
        ``password`` at the password prompt; then run a command in the session and leave."""
        mark = self.bed.mark()
        log_mark = self.syslog.mark()
        pt = system.run_on_pty([LOGIN, self.user.name],
                               prefix=namespace_prefix(self.syslog, self.files), timeout=40)
        injection = self.bed.inject_async([f"SCAN {p}" for p in fingers]) if fingers else None
        if password is not None:
            pt.expect(PASSWORD_PROMPT, timeout=30)
            pt.sendline(password)
        pt.expect(r"[$#] ", timeout=30)                  # the user's shell
        pt.sendline("echo LOGGED-IN-AS-$(id -un)-$(id -u)")
        pt.expect(r"LOGGED-IN-AS-(\S+)-(\d+)", timeout=10)
        who = (pt.child.match.group(1), int(pt.child.match.group(2)))
        pt.sendline("exit")
        result = pt.finish(timeout=30)
        results = injection.wait(20) if injection else []
        events = self.bed.events(mark)
        logs = self.syslog.lines[log_mark:]
        return dict(who=who, status=result.status, output=result.output, results=results,
                    scans=[e for e in events if e.name == "VerifyFingerSelected"],
                    outcomes=outcomes([LogLine(0, m) for _, m in logs]))


@pytest.fixture
def login_bed(inst, bed, user):
    lb = LoginBed(inst, bed, user)
    try:
        yield lb
    finally:
        lb.close()


def test_login_with_a_finger(login_bed):
    r = login_bed.login(fingers=[ENROLLED])
    assert r["who"] == (login_bed.user.name, login_bed.user.uid)
    assert r["results"] == ["verify-match"]
    assert "Password:" not in r["output"]
    first = r["outcomes"][0]
    assert (first["user"], first["service"], first["result"], first["pam"]) == \
        (login_bed.user.name, "login", "success", "PAM_SUCCESS")
    assert (login_bed.state / f"{login_bed.user.name}.state").stat().st_uid == 0


def test_login_with_the_password_after_three_wrong_fingers(login_bed):
    r = login_bed.login(fingers=[OTHER] * 3, password=login_bed.user.password)
    assert r["who"] == (login_bed.user.name, login_bed.user.uid)
    assert r["results"] == ["verify-no-match"] * 3
    first, authsucc = r["outcomes"][:2]
    assert (first["result"], first["pam"]) == ("authenticationFailed", "PAM_AUTH_ERR"), first
    assert (authsucc["result"], authsucc["pam"]) == ("success", "PAM_AUTHINFO_UNAVAIL"), authsucc
    state = (login_bed.state / f"{login_bed.user.name}.state").read_text()
    assert "failures=0" in state.splitlines()   # the password reset the count


def test_login_leaves_the_machines_files_alone(login_bed):
    # wtmp and lastlog are written by a successful login only (btmp by any failed one, so
    # other programs may change it meanwhile).
    watched = [p for p in ("/etc/pam.d/login", "/var/log/wtmp", "/var/log/lastlog")
               if Path(p).exists()]
    before = {p: (Path(p).stat().st_mtime_ns, Path(p).read_bytes()) for p in watched}
    login_bed.login(fingers=[ENROLLED])
    assert {p: (Path(p).stat().st_mtime_ns, Path(p).read_bytes()) for p in watched} == before
    # ... while login did write its records, into the throwaway copies.
    copies = [Path(f) for t, f in login_bed.files.items() if t in ("/var/log/wtmp",
                                                                   "/var/log/lastlog")]
    assert copies and any(f.stat().st_size > 0 for f in copies)
