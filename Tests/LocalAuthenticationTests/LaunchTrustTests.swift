import Foundation
import Testing
@testable import LocalAuthentication
#if canImport(Glibc)
import Glibc
#endif

/// Root's library starts only a root-owned helper in directories only root can change,
/// whatever LOCALAUTH_PREFIX names (LaunchTrust). Run as root, so that the files made here
/// are root's and only the rule under test refuses them.
@Suite(.enabled(if: geteuid() == 0, "makes root-owned files")) struct LaunchTrustTests {
    private func why(_ program: String) -> String? {
        do {
            _ = try LaunchTrust.checked(program)
            return nil
        } catch {
            #expect(error.code == .biometryNotAvailable)
            return error.userInfo[debugDescriptionKey] as? String
        }
    }

    /// A directory made in `parent` (0755) with a root-owned helper in it.
    private func helper(in parent: String) throws -> (dir: String, helper: String) {
        var template = Array("\(parent)/la-trust-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        let dir = String(cString: made)
        chmod(dir, 0o755)
        let helper = dir + "/localauth-helper"
        let fd = open(helper, O_WRONLY | O_CREAT | O_EXCL, 0o755)
        #expect(fd >= 0)
        close(fd)
        #expect(chmod(helper, 0o755) == 0)
        return (dir, helper)
    }

    private func remove(_ dir: String) {
        _ = try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func aHelperUnderAWorldWritableDirectoryIsRefusedEvenWhenSticky() throws {
        let (dir, helper) = try helper(in: "/tmp")
        defer { remove(dir) }
        let text = why(helper)
        #expect(text?.contains("refused to start \(helper): /tmp is writable by group or others (mode 1777)") == true,
                "\(text ?? "accepted")")
    }

    @Test func aLinkFromAUserWritableDirectoryToARootProgramIsRefused() throws {
        let (dir, _) = try helper(in: "/tmp")
        defer { remove(dir) }
        symlink("/usr/bin/passwd", dir + "/link")
        #expect(why(dir + "/link")?.contains("/tmp is writable by group or others") == true)
    }

    /// /run: root's, 0755 (a directory only root can change, for the files below).
    static let rootsOwnPlace: Bool = {
        var st = stat()
        return stat("/run", &st) == 0 && st.st_uid == 0 && st.st_mode & 0o022 == 0
    }()

    @Test(.enabled(if: rootsOwnPlace))
    func inRootsDirectoriesOnlyARootOwnedUnwritableFileIsStarted() throws {
        let (dir, helper) = try helper(in: "/run")
        defer { remove(dir) }
        #expect(try LaunchTrust.checked(helper) == helper)
        #expect(try LaunchTrust.checked(dir + "/../" + (dir as NSString).lastPathComponent
                                        + "/localauth-helper") == helper)
        #expect(chmod(helper, 0o775) == 0)
        #expect(why(helper)?.contains("\(helper) is writable by group or others (mode 775)") == true)
        #expect(chmod(helper, 0o755) == 0 && chown(helper, 65534, 65534) == 0)
        #expect(why(helper)?.contains("\(helper) is owned by uid 65534, not root") == true)
        #expect(chown(helper, 0, 0) == 0 && chmod(dir, 0o777) == 0)
        #expect(why(helper)?.contains("\(dir) is writable by group or others (mode 777)") == true)
    }

    @Test func aMissingProgramIsNotAvailable() {
        #expect(why("/nonexistent-localauth-prefix/libexec/localauth/localauth-helper")?
            .contains("cannot be resolved") == true)
    }
}
