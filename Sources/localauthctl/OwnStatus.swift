#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth
import LocalAuthProtocol

/// The caller's own state without root: asked of localauthd, whose helper answers for the
/// peer's uid only (`mode=status`, StatusSummary in the helper). localauthctl stays
/// unprivileged and never opens the state directory; the service gives it the caller's
/// summary and nobody else's.
enum OwnStatus {
    struct Summary {
        var stored: StoredState?
        var cause: String?
        var enrolledSet: String
    }

    /// A failure when the service is not running or does not answer (the caller sees why).
    static func fetch(_ account: Account, bootID: String?) -> Result<Summary, CLIError> {
        let request = Request.status(Request.Caller(user: account.name.value, service: "localauthctl", pid: getpid()))
        let answer: Answer
        switch ServiceConnection.ask(request) {
        case .success(let a): answer = a
        case .failure(let e): return .failure(e)
        }
        guard answer.name == "status" else {
            return .failure(.unavailable("localauthd refused: \(answer.cause ?? "no cause")"))
        }
        let reply = answer.extra
        var s = UserState()
        s.consecutiveFailures = Int(reply.value("failures") ?? "") ?? 0
        s.lastPasswordAt = reply.value("last_password").flatMap { Int64($0) }
        s.lastFingerprintAt = reply.value("last_fingerprint").flatMap { Int64($0) }
        s.lastRemoteLoginAt = reply.value("last_remote_login").flatMap { Int64($0) }
        s.lastRemoteLoginFrom = reply.value("last_remote_login_from").flatMap { $0.isEmpty ? nil : $0 }
        s.lastLocalUnlockAt = reply.value("last_local_unlock").flatMap { Int64($0) }
        s.lastRemoteLoginBoot = reply.value("last_remote_login_boot").flatMap { BootStamp(text: $0) }
        s.lastLocalUnlockBoot = reply.value("last_local_unlock_boot").flatMap { BootStamp(text: $0) }
        switch reply.value("boot") {
        case "current": s.bootID = bootID
        case "other": s.bootID = "another boot"
        default: s.bootID = nil
        }
        s.optedIn = reply.value("opted_in") == "1"
        let stored: StoredState?
        switch reply.value("state") {
        case "fresh": stored = .fresh
        case "ok": stored = .state(s)
        case "damaged": stored = .damaged(cause: answer.cause ?? "damaged")
        default: stored = nil
        }
        return .success(Summary(stored: stored, cause: answer.cause,
                                enrolledSet: reply.value("enrolled_set") ?? "unknown"))
    }
}
