#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth
import LocalAuthProtocol

/// `mode=status`: the user's own state, for `localauthctl status` run without root. The
/// state directory is root's, so a user reads their summary through localauthd,
/// which runs this helper for the caller's uid only (Unprivileged.swift): nobody learns
/// anything about another user, and nothing is written. Keys of the result frame:
/// `state` (fresh, ok, damaged, unreadable), `cause`, `failures`, `last_password`,
/// `last_fingerprint` (epoch seconds or empty), `boot` (current, other, none), `opted_in`,
/// `enrolled_set` (trusted, changed, not-trusted-yet, none, unknown).
enum StatusSummary {
    static func frame(_ request: HelperRequest, options: Options, log: LogSink) -> Frame {
        var answer = Answer(code: ResultCode.successValue, name: "status")
        let store = FileStateStore(directory: options.stateDir)
        let stored: StoredState
        var st = stat()
        do {
            // Reading never creates the directory (the store would, on first use).
            stored = lstat(options.stateDir, &st) != 0 && errno == ENOENT ? .fresh : try store.load(request.user)
        } catch {
            answer.cause = String(error.description.prefix(300))
            answer.extra.add("state", "unreadable")
            return answer.frame
        }
        let s = stored.userState
        switch stored {
        case .fresh: answer.extra.add("state", "fresh")
        case .state: answer.extra.add("state", "ok")
        case .damaged(let cause):
            answer.extra.add("state", "damaged")
            answer.cause = String(cause.prefix(300))
        }
        var kv = KeyValues()
        kv.add("failures", String(s.consecutiveFailures))
        kv.add("last_password", s.lastPasswordAt.map(String.init) ?? "")
        kv.add("last_fingerprint", s.lastFingerprintAt.map(String.init) ?? "")
        kv.add("last_remote_login", s.lastRemoteLoginAt.map(String.init) ?? "")
        kv.add("last_remote_login_from", s.lastRemoteLoginFrom ?? "")
        kv.add("last_local_unlock", s.lastLocalUnlockAt.map(String.init) ?? "")
        // What orders the two for rule 5 (UserState), so the caller's summary says what the rule does.
        kv.add("last_remote_login_boot", s.lastRemoteLoginBoot?.text ?? "")
        kv.add("last_local_unlock_boot", s.lastLocalUnlockBoot?.text ?? "")
        let boot = LinuxSystem().bootID()
        kv.add("boot", s.bootID == nil ? "none" : (s.bootID == boot ? "current" : "other"))
        kv.add("opted_in", s.optedIn ? "1" : "0")
        kv.add("enrolled_set", enrolledSet(request, s, options, store, log))
        for (key, value) in kv.pairs { answer.extra.add(key, value) }
        return answer.frame
    }

    /// Whether the enrolled fingers are the trusted ones: computing it needs the
    /// installation's secret, which only root reads.
    private static func enrolledSet(_ request: HelperRequest, _ s: UserState, _ options: Options,
                                    _ store: FileStateStore, _ log: LogSink) -> String {
        let sensor = FprintdSensor(address: options.dbusAddress, busTimeout: options.busTimeout,
                                   fprintDir: options.fprintDir, log: log)
        do {
            let set = try sensor.enrolledSet(for: request.user.value)
            guard s.trustedDomainState != nil else { return "not-trusted-yet" }
            let domain = try DomainState.compute(set, store: store)
            return Rules(options).enrollmentRefusal(s, current: domain) == nil ? "trusted" : "changed"
        } catch {
            return error.code == .biometryNotEnrolled ? "none" : "unknown"
        }
    }
}
