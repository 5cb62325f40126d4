import LocalAuth

/// localauthctl's exit statuses: a small set, after sysexits.h where one fits. The same
/// table is in localauthctl(8) and `localauthctl --help`.
enum Exit {
    /// Done: the finger matched, the switch changed, the status was shown, doctor found no problem.
    static let ok: Int32 = 0
    /// The check failed: the finger did not match, the password was wrong, the user
    /// cancelled, or doctor found a problem.
    static let failed: Int32 = 1
    /// Refused by a rule: locked out, the password is required first, the enrolled set
    /// changed, fingerprint login is off for the user, or the account has no password; or
    /// the command would change nothing under the configuration (enable/disable with
    /// opt_in = optional).
    static let refused: Int32 = 2
    /// Wrong usage: an unknown command or option, a missing or extra argument (EX_USAGE).
    static let usage: Int32 = 64
    /// No such user (EX_NOUSER).
    static let noUser: Int32 = 67
    /// Something needed is unavailable: fprintd, a reader, enrolled prints, the state
    /// directory (EX_UNAVAILABLE).
    static let unavailable: Int32 = 69
    /// Not allowed for the caller: root only (EX_NOPERM).
    static let permission: Int32 = 77

    static let table: [(Int32, String)] = [
        (ok, "done (matched, changed, shown; doctor, config: no problem)"),
        (failed, "the check failed (no match, wrong password, cancelled; a problem found)"),
        (refused, "refused by a rule (locked out, password first, set changed), or no change"),
        (usage, "wrong usage"),
        (noUser, "no such user"),
        (unavailable, "fprintd, a reader, enrolled prints or the state directory unavailable"),
        (permission, "root only"),
    ]

    /// The status for an evaluation that ended with `error`.
    static func of(_ error: EvaluationError) -> Int32 {
        switch error.code {
        case .authenticationFailed, .userCancel, .userFallback, .appCancel, .invalidContext,
             .notInteractive:
            return failed
        case .systemCancel:
            return error.reason == .readerBusy ? unavailable : failed
        case .biometryLockout, .passcodeNotSet:
            return refused
        case .biometryNotAvailable:
            switch error.reason {
            case .enrollmentChanged, .disabledByConfiguration: return refused
            default: return unavailable
            }
        case .biometryNotEnrolled, .biometryDisconnected:
            return unavailable
        case .companionNotAvailable, .biometryNotPaired, .invalidDimensions:
            return unavailable  // Apple's codes the root side never gives (ResultCode)
        }
    }
}
