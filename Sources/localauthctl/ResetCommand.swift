#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import SystemEvents

/// `localauthctl reset USER` (root only): clears USER's consecutive failed matches, and so
/// the lockout, as `faillock --reset` does. The password rules (reboot, idle, stale) stay:
/// they are lifted by the user's password only. A damaged state file is replaced by a
/// fresh one (which needs the password before any finger). Logged to syslog (authpriv)
/// with who did it, and one line on stdout.
enum ResetCommand {
    static let spec = CommandSpec(
        name: "reset", synopsis: "reset USER",
        summary: "clear USER's lockout (root only), like faillock --reset",
        help: """
        Clears USER's consecutive failed matches and so the lockout; a damaged state file
        is replaced by a fresh one. The password rules (after a reboot, idle, stale) are not
        touched: only the user's password lifts them. Root only; logged to syslog
        (authpriv) with the uid and login uid of whoever ran it.
        """,
        flags: Flag.common, rootOnly: true, run: run)

    static func run(_ inv: Invocation) -> Int32 {
        let name: String
        switch inv.userArgument() {
        case .success(let n?): name = n
        case .success(nil): return usageError(spec, "expected USER")
        case .failure(let e): return fail(spec, e)
        }
        guard let account = Account.named(name) else {
            return fail(spec, .noUser(tr(cliLanguage, "no such user: %s", printable(name))))
        }
        let options: Options
        switch inv.options(log: StderrLog()) {
        case .success(let o): options = o
        case .failure(let e): return fail(spec, e)
        }
        guard stateDirectoryExists(options.stateDir) else {
            say(tr(cliLanguage, "reset %s: nothing to reset (no state directory %s)", account.name, options.stateDir))
            return Exit.ok
        }
        var before: StoredState = .fresh
        do {
            try FileStateStore(directory: options.stateDir).update(account.name) { stored in
                before = stored
                switch stored {
                case .fresh: return nil
                case .damaged: return UserState()
                case .state(let s):
                    guard s.consecutiveFailures > 0 else { return nil }
                    var next = s
                    next.consecutiveFailures = 0
                    return next
                }
            }
        } catch {
            return fail(spec, .unavailable("\(error)"))
        }
        let what: String
        switch before {
        case .fresh: what = "nothing to reset (no state recorded)"
        case .damaged(let cause): what = "damaged state replaced by a fresh one (\(cause))"
        case .state(let s) where s.consecutiveFailures == 0: what = "nothing to reset (no failed matches)"
        case .state(let s): what = "\(s.consecutiveFailures) consecutive failed matches cleared"
        }
        ToolLog.shared.log(.notice, "reset \(account.name) by \(actor()): \(what)")
        // A record of a lockout cleared only where there was one (a damaged file acts as one):
        // clearing two failed matches is no lockout event.
        switch before {
        case .state(let s) where Rules(options).isLockedOut(s):
            SecurityRecord(program: "localauthctl", log: ToolLog.shared)
                .lockoutCleared(account.name, failures: s.consecutiveFailures, by: .reset,
                                context: EventContext(actorUID: getuidValue()))
        case .damaged:
            SecurityRecord(program: "localauthctl", log: ToolLog.shared)
                .lockoutCleared(account.name, failures: 0, by: .reset, context: EventContext(actorUID: getuidValue()))
        default:
            break
        }
        // The log line above stays English (what administrators grep); the screen speaks the
        // user's language.
        let L = cliLanguage
        switch before {
        case .fresh: say(tr(L, "reset %s: nothing to reset (no state recorded)", account.name))
        case .damaged(let cause): say(tr(L, "reset %s: damaged state replaced by a fresh one (%s)", account.name, cause))
        case .state(let s) where s.consecutiveFailures == 0:
            say(tr(L, "reset %s: nothing to reset (no failed matches)", account.name))
        case .state(let s):
            say(trn(L, "reset %s: %s consecutive failed match cleared", "reset %s: %s consecutive failed matches cleared",
                    s.consecutiveFailures, account.name, s.consecutiveFailures))
        }
        if let still = stillRequired(account, options) {
            say(tr(L, "reset %s: the password is still required before the next fingerprint: %s", account.name, still))
        }
        return Exit.ok
    }

    /// A reset clears the count only: a rule that still wants the password first (a fresh
    /// state's "never entered", a reboot, idle, stale) is said, so nobody expects a finger.
    static func stillRequired(_ account: Account, _ options: Options) -> String? {
        let rules = Rules(options)
        guard let stored = try? FileStateStore(directory: options.stateDir).load(account.name),
              case .error(let e)? = rules.refusal(stored, now: SystemClock().now(), bootID: LinuxSystem().bootID()),
              e.reason.requiresPasswordFirst else { return nil }
        return ruleText(e.reason, rules.figures, failures: stored.userState.consecutiveFailures)
    }

    /// Who ran it: the real uid and, when the kernel knows it, the login uid (the person
    /// behind sudo or su).
    static func actor() -> String {
        let uid = getuid()
        var text = "uid \(uid)" + (nameOf(uid).map { " (\($0))" } ?? "")
        if let login = loginUID(), login != uid {
            text += ", login uid \(login)" + (nameOf(login).map { " (\($0))" } ?? "")
        }
        return text
    }

    private static func nameOf(_ uid: uid_t) -> String? {
        guard let pw = getpwuid(uid), let name = pw.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    /// /proc/self/loginuid; nil when unset (4294967295) or unreadable.
    private static func loginUID() -> uid_t? {
        let fd = open("/proc/self/loginuid", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = read(fd, &buffer, buffer.count)
        guard n > 0, let value = UInt32(String(decoding: buffer[0..<n], as: UTF8.self)
            .filter { $0.isNumber }), value != UInt32.max else { return nil }
        return uid_t(value)
    }
}
