import LocalAuthProtocol

/// Why an evaluation on the root side did not succeed: the code (Apple's raw values, so
/// that a number means the same thing on every platform, docs/ARCHITECTURE.md §6; `ResultCode` in
/// LocalAuthProtocol), the rule that applied, and a line for the log. Applications see
/// the LocalAuthentication library's `LAError` instead, made from the result frame's code.
public struct EvaluationError: Error, Equatable, CustomStringConvertible, Sendable {
    /// Every outcome other than success: the one table of Apple's raw values, which the
    /// result frame carries to the PAM module and to the LocalAuthentication library.
    public typealias Code = ResultCode

    /// Why, in more detail than the code: picks the message the user sees and the log line.
    public enum Reason: Equatable, Sendable {
        case none
        case failedAttempts(Int)
        case passwordRequiredAfterReboot
        case passwordRequiredAfterIdle
        case passwordRequiredStale
        case passwordNeverUsed
        case stateUnreadable
        case enrollmentChanged
        case readerBusy
        /// fprintd did not answer, is not on the bus, or the bus itself is gone: the lines
        /// after the password do not ask it again in the same transaction.
        case readerUnreachable
        case remoteSession
        /// Who is at the reader (PresenceRule): no session vouches for the caller; its
        /// session is on no seat or not the seat's active one; locked; idle; another user's;
        /// the user is also signed in remotely and the caller could be driven from there.
        case noSession
        case notActive
        case sessionLocked
        case sessionIdle
        case otherUser
        case remoteSessionOpen
        /// A remote login of the user newer than the last local unlock (root's records).
        case remoteLoginSinceUnlock
        case noTerminal
        case lidClosed
        case passwordTyped
        case silent
        case emptyReason
        case scanTimeout
        case disabledByConfiguration
        /// The configuration file, a drop-in or their directory cannot be trusted (not
        /// root's, writable by others, a symlink, unreadable): no fingerprint at all until it
        /// is fixed, rather than the defaults in place of the site's policy.
        case configurationUntrusted
        /// Plasma's lock screen asks for the finger in its own stack (`kde-fingerprint`)
        /// beside this one, its password stack: no second claim on the reader
        /// (ScreenLockerAnswers).
        case besideFingerStack
    }

    public let code: Code
    public let reason: Reason
    /// One line for the log, never shown to the user and never holding a secret.
    public let cause: String

    public init(_ code: Code, reason: Reason = .none, cause: String = "") {
        self.code = code
        self.reason = reason
        self.cause = cause
    }

    public var errorCode: Int { code.rawValue }

    /// As the log lines have always spelt it (`LAError.biometryNotEnrolled: …`): Apple's
    /// type name for the code, which is what readers of the log know.
    public var description: String {
        cause.isEmpty ? "LAError.\(code.name)" : "LAError.\(code.name): \(cause)"
    }

    /// The description a user reads, in `language`.
    public func localizedDescription(_ language: Language = .english) -> String {
        Messages.describe(code, in: language)
    }

    public static func == (a: EvaluationError, b: EvaluationError) -> Bool {
        a.code == b.code && a.reason == b.reason
    }
}

extension EvaluationError.Reason {
    /// The reason's name for scripts and log lines (`reason=` in the module's line, the
    /// `password_required` key of `localauthctl status --json`): which rule applied.
    /// Empty for `.none`.
    public var key: String {
        switch self {
        case .none: return ""
        case .failedAttempts: return "lockout"
        case .passwordRequiredAfterReboot: return "reboot"
        case .passwordRequiredAfterIdle: return "idle"
        case .passwordRequiredStale: return "stale"
        case .passwordNeverUsed: return "never-used"
        case .stateUnreadable: return "state-unreadable"
        case .enrollmentChanged: return "enrollment-changed"
        case .readerBusy: return "reader-busy"
        case .readerUnreachable: return "reader-unreachable"
        case .remoteSession: return "remote"
        case .noSession: return "no-session"
        case .notActive: return "not-active"
        case .sessionLocked: return "session-locked"
        case .sessionIdle: return "session-idle"
        case .otherUser: return "other-user"
        case .remoteSessionOpen: return "remote-session-open"
        case .remoteLoginSinceUnlock: return "remote-login-since-unlock"
        case .noTerminal: return "no-terminal"
        case .lidClosed: return "lid-closed"
        case .passwordTyped: return "password-typed"
        case .silent: return "silent"
        case .emptyReason: return "empty-reason"
        case .scanTimeout: return "scan-timeout"
        case .disabledByConfiguration: return "disabled"
        case .configurationUntrusted: return "config-untrusted"
        case .besideFingerStack: return "finger-stack-beside"
        }
    }

    /// The lockout and the rules that require the password before any finger: what
    /// `biometryLockout` (Apple's one code for all of them) stands for here.
    public var requiresPasswordFirst: Bool {
        switch self {
        case .failedAttempts, .passwordRequiredAfterReboot, .passwordRequiredAfterIdle,
             .passwordRequiredStale, .passwordNeverUsed, .stateUnreadable:
            return true
        default:
            return false
        }
    }
}
