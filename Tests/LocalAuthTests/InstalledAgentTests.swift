#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// The two facts a polkit agent is judged by (PolkitAgent.isTheDesktops): its unit's name
/// is one an installed unit file carries, and its executable is a program the system
/// installed. Both from root's files only; the tests make such files in a directory of
/// their own (they run as root, as the helper does).
@Suite(.serialized) struct InstalledAgentTests {
    private func unitFile(_ path: String, mode: mode_t = 0o644) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        #expect(fd >= 0, "\(path)")
        _ = "[Service]\nExecStart=/bin/true\n".withCString { write(fd, $0, strlen($0)) }
        close(fd)
        chmod(path, mode)
    }

    /// A system of its own under a temporary directory: /usr/lib/systemd/user and
    /// /etc/systemd/user, root's.
    private func system() -> (dir: TempDir, user: String, etc: String) {
        let dir = TempDir()
        for part in ["/usr", "/usr/lib", "/usr/lib/systemd", "/usr/lib/systemd/user", "/etc", "/etc/systemd",
                     "/etc/systemd/user"] {
            mkdir(dir.path + part, 0o755)
        }
        return (dir, dir.path + "/usr/lib/systemd/user", dir.path + "/etc/systemd/user")
    }

    @Test func aServiceNamedByAnInstalledUnitFileOrItsTemplateCounts() {
        guard getuid() == 0 else { return }
        let (dir, user, etc) = system()
        defer { dir.remove() }
        unitFile(user + "/plasma-polkit-agent.service")
        unitFile(user + "/org.gnome.Shell@.service")
        symlink("/dev/null", etc + "/masked.service")
        #expect(InstalledUserUnit.file(for: "plasma-polkit-agent.service", root: dir.path)
                == user + "/plasma-polkit-agent.service")
        #expect(InstalledUserUnit.file(for: "org.gnome.Shell@wayland.service", root: dir.path)
                == user + "/org.gnome.Shell@.service")
        #expect(InstalledUserUnit.file(for: "masked.service", root: dir.path) == etc + "/masked.service")
    }

    /// What `systemd-run --user` makes (any name with no unit file, `run-*` by default), a
    /// scope, and names that are not a plain unit name: none counts.
    @Test func aNameWithNoInstalledFileAScopeOrAPathDoesNot() {
        guard getuid() == 0 else { return }
        let (dir, user, _) = system()
        defer { dir.remove() }
        unitFile(user + "/agent.service")
        unitFile(user + "/agent.scope")
        for name in ["la-left-1.service", "run-u12.service", "agent.scope", "agent", ".service",
                     "../user/agent.service", "agent@x.service"] {
            #expect(InstalledUserUnit.file(for: name, root: dir.path) == nil, "\(name)")
        }
    }

    /// A file a user could write, or put there: not the system's word.
    @Test func aFileOthersCanWriteOrOwnOrInAWritableDirectoryDoesNotCount() {
        guard getuid() == 0 else { return }
        let (dir, user, etc) = system()
        defer { dir.remove() }
        unitFile(user + "/writable.service", mode: 0o666)
        unitFile(user + "/owned.service")
        chown(user + "/owned.service", 65534, 65534)
        chmod(etc, 0o775)
        unitFile(etc + "/in-a-group-directory.service")
        for name in ["writable.service", "owned.service", "in-a-group-directory.service"] {
            #expect(InstalledUserUnit.file(for: name, root: dir.path) == nil, "\(name)")
        }
    }

    /// The program a process runs: an installed one counts, an interpreter does not (its
    /// script could be anyone's), nor a copy a user can write.
    @Test func anInstalledProgramCountsAnInterpreterOrAWritableCopyDoesNot() throws {
        guard getuid() == 0 else { return }
        let dir = TempDir()
        defer { dir.remove() }
        let copy = dir.path + "/sleep"
        #expect(ConcurrencyTests.spawn(["/bin/cp", "/bin/sleep", copy]).waited == 0)
        chmod(copy, 0o777)
        let installed = ConcurrencyTests.spawn(["/bin/sleep", "30"])
        let script = ConcurrencyTests.spawn(["/usr/bin/python3", "-c", "import time; time.sleep(30)"])
        let writable = ConcurrencyTests.spawn([copy, "30"])
        defer { for pid in [installed, script, writable] { kill(pid, SIGKILL); _ = pid.waited } }
        let sleep = RootOwned.installedProgram(of: installed)
        #expect(sleep?.hasSuffix("/sleep") == true, "\(String(describing: sleep))")
        #expect(RootOwned.installedProgram(of: script) == nil)
        #expect(RootOwned.installedProgram(of: writable) == nil)
        #expect(RootOwned.installedProgram(of: 999_999_999) == nil)
    }
}

private extension pid_t {
    /// Waits for the process; its exit status (-1 when it could not be waited for).
    var waited: Int32 {
        var status: Int32 = 0
        return waitpid(self, &status, 0) == self ? status : -1
    }
}
