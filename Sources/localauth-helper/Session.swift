#if canImport(Glibc)
import Glibc
#endif
import CSystemd
import LocalAuth

/// Whether a person can be at the reader: not over SSH, not in a remote logind session,
/// not when the application asked for silence.
enum Presence {
    static func refusal(_ request: HelperRequest) -> LAError? {
        if request.isRemote {
            return LAError(.notInteractive, reason: .remoteSession, cause: "remote host \(printable(request.rhost))")
        }
        if isRemoteLogindSession(request.callerPID) {
            return LAError(.notInteractive, reason: .remoteSession, cause: "remote logind session")
        }
        if request.silent {
            return LAError(.notInteractive, reason: .silent, cause: "PAM_SILENT: no prompt can be shown")
        }
        return nil
    }

    /// logind's view of the caller's session; no logind (or no session) means not remote.
    static func isRemoteLogindSession(_ pid: Int32?) -> Bool {
        guard let pid, pid > 0 else { return false }
        var session: UnsafeMutablePointer<CChar>?
        guard sd_pid_get_session(pid, &session) >= 0, let session else { return false }
        defer { free(session) }
        return sd_session_is_remote(session) > 0
    }

    static func printable(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.prefix(64).map { $0.value < 0x20 ? "?" : $0 }))
    }
}
