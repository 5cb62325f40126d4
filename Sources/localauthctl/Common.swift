#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth

/// A user account from the password database.
struct Account {
    let name: UserName
    let uid: uid_t

    /// The account named `name`, or nil when there is none (or the name cannot be one).
    static func named(_ name: String) -> Account? {
        guard let user = try? UserName(name) else { return nil }
        return lookUp { pw, buffer, size, result in getpwnam_r(name, pw, buffer, size, result) }
            .map { Account(name: user, uid: $0.uid) }
    }

    /// The account of the real uid: who ran the command (never $USER).
    static func caller() -> Account? {
        let uid = getuid()
        guard let found = lookUp({ pw, buffer, size, result in getpwuid_r(uid, pw, buffer, size, result) }),
              let user = try? UserName(found.name) else { return nil }
        return Account(name: user, uid: found.uid)
    }

    private static func lookUp(_ call: (UnsafeMutablePointer<passwd>, UnsafeMutablePointer<CChar>, Int,
                                        UnsafeMutablePointer<UnsafeMutablePointer<passwd>?>) -> Int32)
        -> (name: String, uid: uid_t)? {
        var pw = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        let rc = buffer.withUnsafeMutableBufferPointer { call(&pw, $0.baseAddress!, $0.count, &result) }
        guard rc == 0, result != nil, let name = pw.pw_name else { return nil }
        return (String(cString: name), pw.pw_uid)
    }
}

/// The caller is root (real uid 0): the privileged options and other users are theirs.
var callerIsRoot: Bool { getuid() == 0 }

/// The user a command acts for: `named` when given, else the caller. Acting for anyone but
/// yourself needs root; `what` words the refusal ("reading another user's status").
func targetAccount(_ named: String?, what: String) -> Result<Account, CLIError> {
    guard let caller = Account.caller() else {
        return .failure(.noUser(tr(cliLanguage, "the calling uid %s has no account name", getuid())))
    }
    guard let named, named != caller.name.value else { return .success(caller) }
    guard callerIsRoot else { return .failure(.permission(tr(cliLanguage, "%s needs root", what))) }
    guard let account = Account.named(named) else {
        return .failure(.noUser(tr(cliLanguage, "no such user: %s", printable(named))))
    }
    return .success(account)
}

/// Log lines of the engine and the sensor: syslog (authpriv, as the helper logs), and on
/// stderr with LOCALAUTH_DEBUG set. The commands print their own one-line errors.
final class ToolLog: LogSink, Sendable {
    static let shared = ToolLog()
    private let syslog = SyslogSink(ident: "localauthctl")
    private let debug = getenv("LOCALAUTH_DEBUG") != nil

    func log(_ level: LogLevel, _ message: String) {
        syslog.log(level, message)
        if debug { warn(message) }
    }
}

/// The fprintd sensor as the options say.
func makeSensor(_ o: Options, log: LogSink) -> FprintdSensor {
    FprintdSensor(address: o.dbusAddress, busTimeout: o.busTimeout, fprintDir: o.fprintDir, log: log)
}

/// Whether the state directory exists: reading commands do not create it.
func stateDirectoryExists(_ path: String) -> Bool {
    var st = stat()
    return lstat(path, &st) == 0
}

/// Wakes a scan when SIGINT or SIGTERM arrives (see `interruptDescriptor`): the user
/// cancelled.
final class InterruptSource: WakeSource {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    func interruption() -> EvaluationError? { EvaluationError(.userCancel, cause: "interrupted") }
}

/// Which rule requires the password first, with its configured numbers: one sentence used
/// by status, verify, enable, reset and doctor alike. `failures` is the user's count when
/// known (the lockout is stated as "N consecutive failed matches (lockout at T)" everywhere).
func ruleText(_ reason: EvaluationError.Reason, _ f: RuleFigures, failures: Int? = nil, in l: Language = cliLanguage) -> String {
    let h = RuleFigures.hours
    switch reason {
    case .failedAttempts:
        guard let failures else {
            return tr(l, "locked out after %s consecutive failed matches", f.lockoutThreshold)
        }
        return tr(l, "locked out: %s consecutive failed matches (lockout at %s)", failures, f.lockoutThreshold)
    case .passwordRequiredAfterReboot:
        return tr(l, "the password was not entered since the last boot (password_after_reboot)")
    case .passwordRequiredAfterIdle:
        return tr(l, "no sign-in for %s hours (password_after_idle)", h(f.idleHours))
    case .passwordRequiredStale:
        return tr(l, "no password for %s hours and no finger for %s hours (password_stale, fingerprint_stale)",
                  h(f.passwordStaleHours), h(f.fingerprintStaleHours))
    case .passwordNeverUsed: return tr(l, "the password was never entered here")
    case .stateUnreadable: return tr(l, "the state file cannot be trusted")
    default: return tr(l, "the password is required first")
    }
}

/// One line for an evaluation's error: what it means, and the detail when there is one.
func describe(_ error: EvaluationError, _ language: Language, figures: RuleFigures) -> String {
    let text: String
    switch error.reason {
    case let r where r.requiresPasswordFirst:
        text = tr(cliLanguage, "the password is required first: %s", ruleText(r, figures))
    case .enrollmentChanged: text = tr(cliLanguage, "the enrolled fingerprints changed since they were trusted")
    case .disabledByConfiguration: text = tr(cliLanguage, "fingerprint login is off for this user (localauthctl enable)")
    case .readerBusy: text = tr(cliLanguage, "the fingerprint reader is in use by another session")
    case .configurationUntrusted:
        text = tr(cliLanguage, "fingerprint sign-in is off: the configuration cannot be trusted (localauthctl doctor)")
    case .scanTimeout: text = tr(cliLanguage, "no finger was detected in time")
    default: text = error.localizedDescription(language)
    }
    return error.cause.isEmpty || error.reason != .none ? "\(text) [\(error.code.name)]"
                                                      : "\(text) [\(error.code.name): \(error.cause)]"
}

/// The real uid, for log lines.
func getuidValue() -> UInt32 { UInt32(getuid()) }
