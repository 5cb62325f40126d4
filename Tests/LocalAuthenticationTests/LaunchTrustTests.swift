import Foundation
import Testing
@testable import LocalAuthentication
#if canImport(Glibc)
import Glibc
#endif

/// Only a root-owned setuid launcher in directories only root can change is started,
/// whatever LOCALAUTH_PREFIX names (LaunchTrust). Run as root, so that the files made here
/// are root's and only the rule under test refuses them.
@Suite(.enabled(if: geteuid() == 0, "makes root-owned files")) struct LaunchTrustTests {
    private func why(_ program: String, setuid: Bool = true) -> String? {
        do {
            _ = try LaunchTrust.checked(program, setuid: setuid)
            return nil
        } catch {
            #expect(error.code == .biometryNotAvailable)
            return error.userInfo[debugDescriptionKey] as? String
        }
    }

    /// A directory made in `parent` (0755) with a setuid-root launcher in it.
    private func launcher(in parent: String) throws -> (dir: String, launcher: String) {
        var template = Array("\(parent)/la-trust-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        let dir = String(cString: made)
        chmod(dir, 0o755)
        let launcher = dir + "/localauth-launcher"
        let fd = open(launcher, O_WRONLY | O_CREAT | O_EXCL, 0o755)
        #expect(fd >= 0)
        close(fd)
        #expect(chmod(launcher, 0o4755) == 0)
        return (dir, launcher)
    }

    private func launcherUnderTmp() throws -> (dir: String, launcher: String) { try launcher(in: "/tmp") }

    private func remove(_ dir: String) {
        _ = try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func aLauncherUnderAWorldWritableDirectoryIsRefusedEvenWhenSticky() throws {
        let (dir, launcher) = try launcherUnderTmp()
        defer { remove(dir) }
        let text = why(launcher)
        #expect(text?.contains("refused to start \(launcher): /tmp is writable by group or others (mode 1777)") == true,
                "\(text ?? "accepted")")
    }

    @Test func aLinkFromAUserWritableDirectoryToARootProgramIsRefused() throws {
        let (dir, _) = try launcherUnderTmp()
        defer { remove(dir) }
        symlink("/usr/bin/passwd", dir + "/link")
        #expect(why(dir + "/link")?.contains("/tmp is writable by group or others") == true)
    }

    @Test func aLauncherThatIsNotSetuidIsRefused() {
        #expect(why("/usr/bin/env")?.contains("/usr/bin/env is not setuid root") == true)
        // The helper, which root starts itself, needs no setuid bit.
        #expect(why("/usr/bin/env", setuid: false) == nil)
    }

    /// /run: root's, 0755 (a directory only root can change, for the files below).
    static let rootsOwnPlace: Bool = {
        var st = stat()
        return stat("/run", &st) == 0 && st.st_uid == 0 && st.st_mode & 0o022 == 0
    }()

    @Test(.enabled(if: rootsOwnPlace))
    func inRootsDirectoriesOnlyARootOwnedUnwritableSetuidFileIsStarted() throws {
        let (dir, launcher) = try launcher(in: "/run")
        defer { remove(dir) }
        #expect(try LaunchTrust.checked(launcher, setuid: true) == launcher)
        #expect(try LaunchTrust.checked(dir + "/../" + (dir as NSString).lastPathComponent
                                        + "/localauth-launcher", setuid: true) == launcher)
        #expect(chmod(launcher, 0o4775) == 0)
        #expect(why(launcher)?.contains("\(launcher) is writable by group or others (mode 4775)") == true)
        #expect(chmod(launcher, 0o4755) == 0 && chown(launcher, 65534, 65534) == 0)
        #expect(why(launcher)?.contains("\(launcher) is owned by uid 65534, not root") == true)
        #expect(chown(launcher, 0, 0) == 0 && chmod(dir, 0o777) == 0)
        #expect(why(launcher)?.contains("\(dir) is writable by group or others (mode 777)") == true)
    }

    @Test func aMissingProgramIsNotAvailable() {
        #expect(why("/nonexistent-localauth-prefix/libexec/localauth/localauth-launcher")?
            .contains("cannot be resolved") == true)
    }
}
