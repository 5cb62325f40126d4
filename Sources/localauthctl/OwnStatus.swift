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
        var request = KeyValues()
        for (key, value) in [("version", "1"), ("mode", "status"), ("user", account.name.value),
                             ("service", "localauthctl"), ("pid", String(getpid()))] {
            request.add(key, value)
        }
        let reply: KeyValues
        switch exchange(Frame(.request, request.encoded())) {
        case .success(let kv): reply = kv
        case .failure(let e): return .failure(e)
        }
        guard reply.value("name") == "status" else {
            return .failure(.unavailable("localauthd refused: \(reply.value("cause") ?? "no cause")"))
        }
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
        case "damaged": stored = .damaged(cause: reply.value("cause") ?? "damaged")
        default: stored = nil
        }
        return .success(Summary(stored: stored, cause: reply.value("cause"),
                                enrolledSet: reply.value("enrolled_set") ?? "unknown"))
    }

    /// Connects to localauthd (the peer must be root), writes the request, and reads one
    /// result frame (at most 10 s).
    private static func exchange(_ request: Frame) -> Result<KeyValues, CLIError> {
        let path = ServiceConnection.path
        let fd: Int32
        switch ServiceConnection.open(path) {
        case .success(let opened): fd = opened
        case .failure(let why): return .failure(.unavailable("localauthd at \(path): \(why)"))
        }
        defer { close(fd) }
        var cred = la_peer_cred()
        guard la_socket_peer_cred(fd, &cred) == 0, cred.uid == 0 else {
            return .failure(.unavailable("localauthd at \(path): its end is not root's"))
        }
        let channel = FrameChannel(input: fd, output: fd)
        guard channel.send(request) else { return .failure(.unavailable("localauthd went away")) }
        let deadline = MonotonicClock.millis() + 10_000
        // The helper says it started (`S`) before its result.
        for _ in 0..<4 {
            let left = deadline - MonotonicClock.millis()
            guard left > 0, channel.waitReadable(milliseconds: Int32(left)) else {
                return .failure(.unavailable("localauthd did not answer"))
            }
            do {
                let frame = try channel.receive()
                if frame.kind == .started { continue }
                guard frame.kind == .result else {
                    return .failure(.unavailable("unexpected frame from localauthd"))
                }
                return .success(try KeyValues.parse(frame.payload))
            } catch {
                return .failure(.unavailable("localauthd: \(error)"))
            }
        }
        return .failure(.unavailable("localauthd sent no result"))
    }
}
