#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// The caller's own state without root: asked of the helper through the setuid
/// localauth-launcher, which runs it for the caller's uid only (`mode=status`,
/// StatusSummary in the helper). localauthctl stays unprivileged and never opens the state
/// directory; the launcher gives it the caller's summary and nobody else's.
enum LauncherStatus {
    struct Summary {
        var stored: StoredState?
        var cause: String?
        var enrolledSet: String
    }

    static var launcherPath: String { DoctorCommand.installPrefix() + "/libexec/localauth/localauth-launcher" }

    /// nil when the launcher is missing or does not answer (the caller then sees why).
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
            return .failure(.unavailable("localauth-launcher refused: \(reply.value("cause") ?? "no cause")"))
        }
        var s = UserState()
        s.consecutiveFailures = Int(reply.value("failures") ?? "") ?? 0
        s.lastPasswordAt = reply.value("last_password").flatMap { Int64($0) }
        s.lastFingerprintAt = reply.value("last_fingerprint").flatMap { Int64($0) }
        s.lastRemoteLoginAt = reply.value("last_remote_login").flatMap { Int64($0) }
        s.lastRemoteLoginFrom = reply.value("last_remote_login_from").flatMap { $0.isEmpty ? nil : $0 }
        s.lastLocalUnlockAt = reply.value("last_local_unlock").flatMap { Int64($0) }
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

    /// Starts the launcher with two pipes and nothing else (no environment but PATH),
    /// writes the request, and reads one result frame (at most 10 s).
    private static func exchange(_ request: Frame) -> Result<KeyValues, CLIError> {
        let path = launcherPath
        guard access(path, X_OK) == 0 else {
            return .failure(.unavailable("\(path): \(String(cString: strerror(errno)))"))
        }
        var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else {
            return .failure(.unavailable("pipe: \(String(cString: strerror(errno)))"))
        }
        // Only the two ends the launcher gets cross exec, through the dup2 actions.
        for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), nil]
        let envp: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
        close(toChild[0])
        close(fromChild[1])
        defer { close(fromChild[0]) }
        guard rc == 0 else {
            close(toChild[1])
            return .failure(.unavailable("\(path): \(String(cString: strerror(rc)))"))
        }
        let channel = FrameChannel(input: fromChild[0], output: toChild[1])
        defer {
            close(toChild[1])
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        guard channel.send(request) else { return .failure(.unavailable("localauth-launcher went away")) }
        let deadline = MonotonicClock.millis() + 10_000
        // The helper says it started (`S`) before its result.
        for _ in 0..<4 {
            let left = deadline - MonotonicClock.millis()
            guard left > 0, channel.waitReadable(milliseconds: Int32(left)) else {
                kill(pid, SIGKILL)
                return .failure(.unavailable("localauth-launcher did not answer"))
            }
            do {
                let frame = try channel.receive()
                if frame.kind == .started { continue }
                guard frame.kind == .result else {
                    return .failure(.unavailable("unexpected frame from the launcher"))
                }
                return .success(try KeyValues.parse(frame.payload))
            } catch {
                return .failure(.unavailable("localauth-launcher: \(error)"))
            }
        }
        return .failure(.unavailable("localauth-launcher sent no result"))
    }
}
