/// The answers Plasma's lock screen gets, in one place: for its password stack (`kde`) the
/// module stands aside, and for its fingerprint stack (`kde-fingerprint`) which PAM code, and
/// how soon, keeps the finger usable without looping. Pure: the helper identifies the locker
/// (ScreenLocker) and applies this; the tests give it every outcome
/// (`Tests/LocalAuthTests/ScreenLockerAnswersTests.swift`).
///
/// What kscreenlocker does with an answer (read in its sources, measured in a Debian 13 guest):
/// - 6.3 (Debian 13's 6.3.5): PAM runs in the greeter. PAM_AUTHINFO_UNAVAIL (or
///   PAM_MODULE_UNKNOWN) marks the service unavailable until the lock ends; any other failure
///   is a failure, and the fingerprint service is started again only when the password
///   service fails and a key is pressed. No timing rule.
/// - 6.4 and later: one worker per service. Any answer within 50 ms marks the service
///   unavailable until the lock ends; on `kde-fingerprint`, PAM_AUTHINFO_UNAVAIL within 250 ms
///   does too, a slower one is a failure; a failure starts the attempt again, and more than
///   three failures less than 2 s apart mark the service unavailable.
/// - The greeter lives for one lock: "unavailable" never outlasts it.
///
/// So:
/// 1. `kde` (the password, common-auth with the profiles) while kde-fingerprint runs beside it:
///    no scan, answered at once (PAM_AUTHINFO_UNAVAIL), so the password module asks at once
///    (two claims on one reader would hold the password until the reader gave up). The
///    module's mark stays set: the password typed there clears a lockout and records the
///    password (the `authsucc` line), which is what brings the finger back at the next lock.
/// 2. A refusal that holds until the password (the lockout, the password after boot or idle,
///    the enrolled set changed, not opted in, not enrolled, fprintd or the reader absent, a
///    presence refusal): PAM_AUTHINFO_UNAVAIL at once. Both versions then leave the finger
///    off until this lock ends, said once; asking again would only be refused again. On a
///    machine so loaded that the answer takes over 250 ms, 6.4 counts a failure and asks
///    again: each answer is the same, and its own rule ends it after five.
/// 3. A match: as it is (a scan takes longer than 50 ms; a user's program never reuses one).
/// 4. Wrong fingers (the tries used up): as it is, PAM_AUTH_ERR; a person tried, so it is slow.
/// 5. "No finger now" that does not hold (no touch within scan_timeout, the reader busy or
///    gone, the scan interrupted): PAM_AUTH_ERR, given no sooner than `transientMillis` after
///    the request began. 6.4 then starts the attempt again (the finger stays on while the
///    screen is locked) and a reader that stays busy ends in its rule after five in ~5 s;
///    6.3 keeps the service for its next start instead of turning it off for the lock.
public enum ScreenLockerAnswers {
    /// How soon a "no finger now" that does not hold may be answered: past 6.4's 250 ms,
    /// with room for a loaded machine and the module's own connection.
    public static let transientMillis: Int64 = 1000

    /// What the helper sends back, and not before `notBeforeMillis` after the request began.
    public struct Answer: Equatable, Sendable {
        public var outcome: EvaluationMachine.Outcome
        public var notBeforeMillis: Int64
        /// The rule that applied, for the log line (`lockscreen=`).
        public var rule: String

        public init(_ outcome: EvaluationMachine.Outcome, notBeforeMillis: Int64 = 0, rule: String) {
            self.outcome = outcome
            self.notBeforeMillis = notBeforeMillis
            self.rule = rule
        }
    }

    /// Rule 1: why this locker's request gets no scan at all, or nil.
    public static func standAside(_ locker: ScreenLocker, service: String) -> EvaluationError? {
        guard locker.stack(service: service) == .password else { return nil }
        return EvaluationError(.notInteractive, reason: .besideFingerStack,
                               cause: "\(locker.description) asks for the finger in kde-fingerprint, beside this password stack")
    }

    /// Rules 2-5: the answer to this locker's `kde-fingerprint` request; nil for its other
    /// services (theirs is any program's).
    public static func answer(_ outcome: EvaluationMachine.Outcome, locker: ScreenLocker,
                              service: String) -> Answer? {
        guard locker.stack(service: service) == .finger else { return nil }
        switch outcome {
        case .success:
            return Answer(outcome, rule: "match")
        case .notOptedIn:
            return Answer(outcome, rule: "holds")
        case .failure(let e) where e.code == .authenticationFailed:
            return Answer(outcome, rule: "wrong-finger")
        case .failure(let e) where holds(e):
            // Every holding code is already PAM_AUTHINFO_UNAVAIL in the module (`result_map.c`).
            return Answer(outcome, rule: "holds")
        case .failure(let e):
            return Answer(.failure(EvaluationError(.authenticationFailed, reason: e.reason, cause: e.cause)),
                          notBeforeMillis: transientMillis, rule: "again")
        }
    }

    /// A refusal that the next attempt of this lock would meet too: only the password (or
    /// the administrator, or the user's own action elsewhere) changes it.
    static func holds(_ e: EvaluationError) -> Bool {
        if e.reason.requiresPasswordFirst || e.reason == .enrollmentChanged { return true }
        switch e.code {
        case .biometryLockout, .biometryNotEnrolled, .biometryNotAvailable, .passcodeNotSet, .notInteractive,
             .invalidContext:
            return true
        case .authenticationFailed, .userCancel, .userFallback, .systemCancel, .appCancel, .biometryDisconnected,
             .companionNotAvailable, .biometryNotPaired, .invalidDimensions:
            return false
        }
    }
}
