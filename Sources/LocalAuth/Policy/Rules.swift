/// Every rule that decides whether a fingerprint may be tried at all, in one place:
/// the lockout, Apple's Platform Security preconditions, the settings switch and the
/// enrolled-set check. Pure functions of the stored state, the time and the options.
public struct Rules: Equatable, Sendable {
    /// Failed matches that end one prompt with `authenticationFailed` (Apple: 3).
    public var maxTries: Int
    /// Consecutive failed matches that give `biometryLockout` (Apple: 5).
    public var lockoutThreshold: Int
    public var passwordAfterReboot: Bool
    /// Seconds without any successful authentication before the password is required (0: off).
    public var idleLimit: Int64
    /// Seconds without the password …
    public var passwordStaleLimit: Int64
    /// … combined with seconds without a fingerprint (both must be exceeded; 0: off).
    public var fingerprintStaleLimit: Int64
    public var optInRequired: Bool
    /// Seconds a fingerprint success is reused in the same terminal session (0: never).
    public var reuseDuration: Int64
    /// Why the configuration cannot be trusted; nil when it can (Options).
    public var untrustedConfiguration: String?

    public init(_ o: Options) {
        maxTries = o.maxTries
        lockoutThreshold = o.lockoutThreshold
        passwordAfterReboot = o.passwordAfterReboot
        idleLimit = Int64(o.passwordAfterIdleHours * 3600)
        passwordStaleLimit = Int64(o.passwordStaleHours * 3600)
        fingerprintStaleLimit = Int64(o.fingerprintStaleHours * 3600)
        optInRequired = o.optIn == .required
        reuseDuration = Int64(min(max(o.reuseDuration, 0), Options.maxReuseDuration))
        untrustedConfiguration = o.untrustedConfiguration
    }

    /// The numbers the messages state: the rule that applied, as configured.
    public var figures: RuleFigures {
        RuleFigures(lockoutThreshold: lockoutThreshold, idleHours: Double(idleLimit) / 3600,
                    passwordStaleHours: Double(passwordStaleLimit) / 3600,
                    fingerprintStaleHours: Double(fingerprintStaleLimit) / 3600)
    }

    // MARK: - The lockout rule

    /// Locked out once the consecutive failures reach the threshold. Only a password
    /// clears the count (`afterPassword`); a match resets it (`afterMatch`).
    public func isLockedOut(_ s: UserState) -> Bool {
        s.consecutiveFailures >= lockoutThreshold
    }

    public func afterFailedMatch(_ s: UserState) -> UserState {
        var next = s
        next.consecutiveFailures = s.consecutiveFailures &+ 1
        return next
    }

    /// A counted try that ended with no finger presented is given back.
    public func afterRefund(_ s: UserState) -> UserState {
        var next = s
        next.consecutiveFailures = max(0, s.consecutiveFailures - 1)
        return next
    }

    public func afterMatch(_ s: UserState, now: Timestamp, terminal: String,
                           domainState: String?) -> UserState {
        var next = s
        next.consecutiveFailures = 0
        next.lastFingerprintAt = now
        next.lastFingerprintTerminal = terminal
        // First use without a switch: trust the set the first match came from.
        if !optInRequired && next.trustedDomainState == nil { next.trustedDomainState = domainState }
        return next
    }

    /// The password was entered: the lockout and every password precondition are lifted.
    /// Without a required switch, the enrolled set seen now becomes the trusted one.
    public func afterPassword(_ s: UserState, now: Timestamp, bootID: String?,
                              domainState: String?) -> UserState {
        var next = s
        next.consecutiveFailures = 0
        next.passwordFailures = 0
        next.lastPasswordAt = now
        next.bootID = bootID
        if !optInRequired, let domainState { next.trustedDomainState = domainState }
        return next
    }

    /// A wrong password the helper checked itself: counted for the record only.
    public func afterWrongPassword(_ s: UserState) -> UserState {
        var next = s
        next.passwordFailures = s.passwordFailures &+ 1
        return next
    }

    /// Failed matches still possible before the lockout, and in this prompt.
    public func triesLeft(usedInPrompt: Int, consecutive: Int) -> Int {
        max(0, min(maxTries - usedInPrompt, lockoutThreshold - consecutive))
    }

    // MARK: - Before any scan

    /// What stops a fingerprint from being tried now, or nil if nothing does. A
    /// configuration that cannot be trusted comes first (none of the numbers below can be
    /// believed); then Apple's order: lockout first (it is what the user must clear), then
    /// the password preconditions, then the switch.
    public func refusal(_ stored: StoredState, now: Timestamp, bootID: String?) -> Refusal? {
        if let why = untrustedConfiguration {
            return .error(EvaluationError(.biometryNotAvailable, reason: .configurationUntrusted,
                                  cause: "the configuration cannot be trusted: \(why)"))
        }
        let s: UserState
        switch stored {
        case .damaged(let cause):
            return .error(EvaluationError(.biometryLockout, reason: .stateUnreadable, cause: cause))
        case .fresh: s = UserState()
        case .state(let state): s = state
        }
        if isLockedOut(s) {
            return .error(EvaluationError(.biometryLockout, reason: .failedAttempts(lockoutThreshold),
                                  cause: "\(s.consecutiveFailures) consecutive failed matches"))
        }
        if let why = passwordPrecondition(s, now: now, bootID: bootID) {
            return .error(EvaluationError(.biometryLockout, reason: why, cause: "password required first (\(why.key))"))
        }
        if optInRequired && !s.optedIn { return .notOptedIn }
        return nil
    }

    /// Apple's rules for when the password must come first. A time never recorded counts
    /// as infinitely long ago, so a user never seen enters the password once first.
    func passwordPrecondition(_ s: UserState, now: Timestamp, bootID: String?) -> EvaluationError.Reason? {
        if passwordAfterReboot {
            guard let recorded = s.bootID else { return .passwordNeverUsed }
            if let bootID, recorded != bootID { return .passwordRequiredAfterReboot }
        }
        if idleLimit > 0 && !within(s.lastSuccessAt, idleLimit, now) {
            return s.lastSuccessAt == nil ? .passwordNeverUsed : .passwordRequiredAfterIdle
        }
        if passwordStaleLimit > 0 && fingerprintStaleLimit > 0
            && !within(s.lastPasswordAt, passwordStaleLimit, now)
            && !within(s.lastFingerprintAt, fingerprintStaleLimit, now) {
            return s.lastPasswordAt == nil ? .passwordNeverUsed : .passwordRequiredStale
        }
        return nil
    }

    /// The enrolled set must be the one fingerprints were trusted for.
    public func enrollmentRefusal(_ s: UserState, current: String?) -> EvaluationError? {
        guard let trusted = s.trustedDomainState else {
            // Nothing trusted yet: with a switch, turning it on records it; without one,
            // the first match or password does (afterMatch/afterPassword).
            return nil
        }
        guard trusted != current else { return nil }
        return EvaluationError(.biometryNotAvailable, reason: .enrollmentChanged,
                       cause: "the enrolled fingerprints changed since they were trusted")
    }

    /// A fingerprint success that may be reused without a new scan.
    public func canReuse(_ s: UserState, now: Timestamp, terminal: String) -> Bool {
        guard reuseDuration > 0, !terminal.isEmpty, s.lastFingerprintTerminal == terminal,
              let last = s.lastFingerprintAt else { return false }
        return last <= now && now - last <= reuseDuration
    }

    private func within(_ time: Timestamp?, _ limit: Int64, _ now: Timestamp) -> Bool {
        guard let time else { return false }
        return now - time <= limit
    }
}

/// Why no fingerprint may be tried.
public enum Refusal: Equatable, Sendable {
    case error(EvaluationError)
    /// The switch is required and off: no fingerprint for this user (the module answers
    /// PAM_AUTHINFO_UNAVAIL, so the stack's password module decides).
    case notOptedIn
}

/// The configured numbers of the rules, for the words that state them.
public struct RuleFigures: Equatable, Sendable {
    public var lockoutThreshold: Int
    public var idleHours: Double
    public var passwordStaleHours: Double
    public var fingerprintStaleHours: Double

    public init(lockoutThreshold: Int, idleHours: Double, passwordStaleHours: Double,
                fingerprintStaleHours: Double) {
        self.lockoutThreshold = lockoutThreshold
        self.idleHours = idleHours
        self.passwordStaleHours = passwordStaleHours
        self.fingerprintStaleHours = fingerprintStaleHours
    }

    /// Hours as people write them: "24", "1.5".
    public static func hours(_ h: Double) -> String {
        if h == h.rounded() { return String(Int(h)) }
        return String((h * 100).rounded() / 100)
    }
}
