/// Moments an administrator audits, as pam_faillock reports them: a lockout begins, and a
/// lockout is lifted by the password or by `localauthctl reset`. The executables write them
/// to the audit log and the journal (SystemEvents); tests collect them.
public protocol SecurityEvents: AnyObject {
    func lockoutBegan(_ user: UserName, failures: Int, threshold: Int, context: EventContext)
    func lockoutCleared(_ user: UserName, failures: Int, by: ClearedBy, context: EventContext)
}

public enum ClearedBy: String, Sendable {
    case password, reset
}

/// Where the authentication came from, for the records.
public struct EventContext: Sendable {
    public var service = ""
    public var tty = ""
    public var rhost = ""
    public var ruser = ""
    /// Who acted (the real uid of `localauthctl reset`); nil for an authentication.
    public var actorUID: UInt32?

    public init(service: String = "", tty: String = "", rhost: String = "", ruser: String = "",
                actorUID: UInt32? = nil) {
        self.service = service
        self.tty = tty
        self.rhost = rhost
        self.ruser = ruser
        self.actorUID = actorUID
    }
}

/// Tells whether a lockout began or ended around a step, from the state before and after:
/// the lockout rule itself stays in Rules.
public struct LockoutWatch {
    public let rules: Rules
    public let failuresBefore: Int?
    public let lockedBefore: Bool

    /// Reads the state before the step (nothing is known when it cannot be read).
    public init(store: StateStore, user: UserName, rules: Rules) {
        self.rules = rules
        if case .state(let s)? = try? store.load(user) {
            failuresBefore = s.consecutiveFailures
            lockedBefore = rules.isLockedOut(s)
        } else {
            failuresBefore = nil
            lockedBefore = false
        }
    }

    /// An evaluation that ended locked out began the lockout when it was not locked before.
    public func began(_ outcome: EvaluationMachine.Outcome) -> Bool {
        guard failuresBefore != nil, !lockedBefore, case .failure(let e) = outcome,
              case .failedAttempts = e.reason else { return false }
        return true
    }
}
