/// One policy evaluation as a state machine: events in, actions out, no I/O inside.
/// `EvaluationRunner` performs the actions (talks to the sensor, writes the store, shows
/// messages) and feeds the results back as events. Every action list ends with at most
/// one action that produces the next event.
///
/// Every try is counted as a failed match *before* the reader starts (`recordAttempt`) and
/// given back only when it ends without a finger on the reader (cancel, timeout, error);
/// a match resets the count. So a helper frozen or killed mid-scan leaves the try counted,
/// and a store that cannot be written means no scan at all.
public struct EvaluationMachine {
    public enum Outcome: Equatable, Sendable {
        case success(Method)
        case failure(EvaluationError)
        /// The settings switch is required and off: no scan; the password decides
        /// (PAM_AUTHINFO_UNAVAIL, never PAM_IGNORE).
        case notOptedIn

        public enum Method: String, Equatable, Sendable { case fingerprint, reused, password }
    }

    public enum Action: Equatable {
        // Producing the next event:
        case loadState
        case readEnrollment
        case claimReader
        case startScan
        case waitForEvent
        case recordAttempt
        case recordMatch(domainState: String?)
        case askPassword
        case recordPassword
        // Not producing one:
        case show(UserMessage, error: Bool)
        case stopScan
        case releaseReader
        /// Gives back a try counted by `recordAttempt` that ended with no finger presented.
        case refundAttempt
        /// The evaluation ends in a lockout the user was not in when it began (their state
        /// was read and not locked out): for the audit records (SecurityEvents). `failures`:
        /// the consecutive failed matches counted.
        case lockoutBegan(failures: Int)
        /// A success at the machine itself (`localUnlock`): recorded as the user's local
        /// unlock, which ends what a remote login holds back (PresenceRule's rule 5).
        case recordLocalUnlock
        /// A new fingerprint match that a rights dialog may count (`dialogMatches`:
        /// polkit's stack, DialogProof.ticketMethod).
        case dialogMatch(DialogTicket.Match.Method)
        case finish(Outcome)
    }

    public enum Event: Equatable {
        case start
        case stateLoaded(StoredState)
        case enrollmentRead(domainState: String?)
        case claimed
        case scanStarted(VerifyStarted)
        case sensor(SensorEvent)
        /// The try is counted; the state after counting it.
        case attemptRecorded(UserState)
        /// Not counted: the user is already locked out (by other authentications meanwhile).
        case attemptRefused(UserState)
        case matchRecorded
        /// The user or the system ended the wait; the error says who.
        case interrupted(EvaluationError)
        /// The wait was ended, but the reader had already given its verdict (`.match` or
        /// `.noMatch`): the verdict counts, the interruption ends the evaluation.
        case interruptedAfter(EvaluationError, verdict: SensorEvent)
        case passwordChecked(Bool)
        case passwordRecorded
        /// A step of the runner failed (store, sensor call): the evaluation ends with it.
        case stepFailed(EvaluationError)
    }

    private enum State {
        case idle
        case loading
        case readingEnrollment(UserState)
        case claiming(UserState, domain: String?)
        case counting(Prompt)
        case starting(Prompt)
        case scanning(Prompt)
        case recordingMatch
        case askingPassword(after: EvaluationError)
        case recordingPassword
        case finished
    }

    /// What one prompt has used so far.
    private struct Prompt {
        var state: UserState
        var domain: String?
        var failures = 0
    }

    public let policy: EvaluationPolicy
    public let rules: Rules
    public let now: Timestamp
    public let bootID: String?
    public let terminal: String
    /// False when the account has no usable password: then no fingerprint either.
    public let passcodeSet: Bool
    /// Whether a password can be checked here (`deviceOwnerAuthentication` asks for it after
    /// the fingerprint; without one, the PAM stack's password module takes over).
    public let canAskPassword: Bool
    /// Whether the user is offered the password while the reader waits.
    public let fallbackOffered: Bool
    public let fallbackTitle: String?
    /// False only when the settings switch itself is being changed.
    public let checkTrust: Bool
    /// A success here is a local unlock: the prompt is at the machine itself
    /// (`CallerPlace.atTheMachine`).
    public let localUnlock: Bool
    /// A new fingerprint match here goes into the user's open rights dialog tickets.
    public let dialogMatches: Bool
    private var state: State = .idle
    /// Whether the state read at the start was a lockout; nil when there was no state to
    /// read (fresh, damaged, not read yet): then no lockout is said to begin.
    private var lockedAtStart: Bool?
    /// The consecutive failed matches as last counted (`attemptRecorded`, `attemptRefused`).
    private var counted: Int?

    public init(policy: EvaluationPolicy, rules: Rules, now: Timestamp, bootID: String?, terminal: String,
                passcodeSet: Bool = true, canAskPassword: Bool, fallbackTitle: String?,
                checkTrust: Bool = true, localUnlock: Bool = false, dialogMatches: Bool = false) {
        self.checkTrust = checkTrust
        self.localUnlock = localUnlock
        self.dialogMatches = dialogMatches
        self.passcodeSet = passcodeSet
        self.policy = policy
        self.rules = rules
        self.now = now
        self.bootID = bootID
        self.terminal = terminal
        self.canAskPassword = canAskPassword && policy == .deviceOwnerAuthentication
        self.fallbackOffered = fallbackTitle != ""
        self.fallbackTitle = fallbackTitle
    }

    public var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (_, .stepFailed(let error)):
            return end(error, release: isHoldingReader, refund: attemptPending)
        case (.idle, .start):
            guard passcodeSet else {
                state = .finished
                return finish(.failure(EvaluationError(.passcodeNotSet, cause: "the account has no usable password")))
            }
            state = .loading
            return [.loadState]
        case (.loading, .stateLoaded(let stored)):
            return stateLoaded(stored)
        case (.readingEnrollment(let s), .enrollmentRead(let domain)):
            if checkTrust, let error = rules.enrollmentRefusal(s, current: domain) {
                return [.show(.enrollmentChanged(optInRequired: rules.optInRequired), error: true)]
                    + end(error, release: false, refund: false)
            }
            state = .claiming(s, domain: domain)
            return [.claimReader]
        case (.claiming(let s, let domain), .claimed):
            state = .counting(Prompt(state: s, domain: domain))
            return [.recordAttempt]
        case (.counting(var p), .attemptRecorded(let s)):
            counted = s.consecutiveFailures
            p.state = s
            state = .starting(p)
            return [.startScan]
        case (.counting, .attemptRefused(let s)):
            counted = s.consecutiveFailures
            return [.show(.lockedOut(threshold: rules.lockoutThreshold), error: true)]
                + end(lockout(s), release: true, refund: false)
        case (.starting(let p), .scanStarted(let started)):
            state = .scanning(p)
            return promptLines(started, first: p.failures == 0) + [.waitForEvent]
        case (.scanning(let p), .sensor(let e)):
            return sensorEvent(e, p)
        case (.scanning, .interrupted(let error)), (.starting, .interrupted(let error)):
            return [.stopScan] + end(error, release: true, refund: true)
        case (.scanning(let p), .interruptedAfter(let error, let verdict)):
            return verdictThenEnd(verdict, error, p)
        case (.recordingMatch, .matchRecorded):
            state = .finished
            return [.show(.matched, error: false)] + finish(.success(.fingerprint))
        case (.askingPassword(let previous), .passwordChecked(let ok)):
            guard ok else {
                state = .finished
                return finish(.failure(EvaluationError(.authenticationFailed, reason: previous.reason,
                                                       cause: "wrong password")))
            }
            state = .recordingPassword
            return [.recordPassword]
        case (.recordingPassword, .passwordRecorded):
            state = .finished
            return finish(.success(.password))
        case (.askingPassword(let previous), .interrupted(let error)):
            state = .finished
            return finish(.failure(error.code == .userFallback ? previous : error))
        default:
            // An event that cannot happen in this state: our own broken invariant. End the
            // evaluation as a failure rather than trapping (this runs under sudo's PAM stack).
            return end(EvaluationError(.invalidContext, cause: "unexpected event \(event) in \(state)"),
                       release: isHoldingReader, refund: attemptPending)
        }
    }

    // MARK: - Steps

    private mutating func stateLoaded(_ stored: StoredState) -> [Action] {
        if case .state(let s) = stored { lockedAtStart = rules.isLockedOut(s) }
        switch rules.refusal(stored, now: now, bootID: bootID) {
        case .notOptedIn?:
            // Where this evaluation checks the password itself (an application's
            // deviceOwnerAuthentication), fingerprint login being off leaves the password;
            // in a PAM stack the module steps aside for the stack's password module.
            if canAskPassword {
                state = .askingPassword(after: EvaluationError(.biometryNotAvailable, reason: .disabledByConfiguration,
                                                       cause: "fingerprint login is turned off for this user"))
                return [.askPassword]
            }
            state = .finished
            return finish(.notOptedIn)
        case .error(let error)?:
            return [.show(refusalMessage(error), error: true)] + end(error, release: false, refund: false)
        case nil:
            let s = stored.userState
            if rules.canReuse(s, now: now, terminal: terminal) {
                state = .finished
                return finish(.success(.reused))
            }
            state = .readingEnrollment(s)
            return [.readEnrollment]
        }
    }

    private mutating func sensorEvent(_ e: SensorEvent, _ p: Prompt) -> [Action] {
        switch e {
        case .match:
            // "Recognized" only once the match is recorded: a store that cannot record it
            // cannot count failures either, and must not tell a finger that matched from
            // one that did not (see EvaluationRunner.recordMatch).
            state = .recordingMatch
            return [.releaseReader, .recordMatch(domainState: p.domain)]
        case .noMatch:
            return [.stopScan] + failedMatch(p)
        case .retry(let kind):
            return [.show(.retry(kind), error: true), .waitForEvent]
        case .disconnected:
            return [.stopScan, .show(.readerDisconnected, error: true)]
                + end(EvaluationError(.biometryDisconnected, cause: "the reader went away during the scan"),
                      release: true, refund: true)
        case .failed(let error):
            return [.stopScan] + end(error, release: true, refund: true)
        case .timeout:
            return [.stopScan, .show(.noFingerDetected, error: true)]
                + end(EvaluationError(.systemCancel, reason: .scanTimeout, cause: "no finger within the scan timeout"),
                      release: true, refund: true)
        case .woken:
            // The runner turns wake-ups into `.interrupted` or waits again; seeing one here
            // means it did neither.
            return [.stopScan] + end(EvaluationError(.systemCancel, cause: "unhandled wake-up"), release: true, refund: true)
        }
    }

    /// A verdict that arrived together with an interruption: a match is a match; a failed
    /// match keeps its counted try (no refund) and the evaluation ends with the
    /// interruption, or with the lockout it completed.
    private mutating func verdictThenEnd(_ verdict: SensorEvent, _ error: EvaluationError, _ p: Prompt) -> [Action] {
        if verdict == .match {
            state = .recordingMatch
            return [.releaseReader, .recordMatch(domainState: p.domain)]
        }
        if rules.isLockedOut(p.state) {
            return [.show(.lockedOut(threshold: rules.lockoutThreshold), error: true)]
                + end(lockout(p.state), release: true, refund: false)
        }
        return end(error, release: true, refund: false)
    }

    /// A failed match: its try was counted before the scan, so nothing is written now.
    private mutating func failedMatch(_ p: Prompt) -> [Action] {
        var prompt = p
        prompt.failures += 1
        let s = prompt.state
        if rules.isLockedOut(s) {
            return [.show(.lockedOut(threshold: rules.lockoutThreshold), error: true)]
                + end(lockout(s), release: true, refund: false)
        }
        if prompt.failures >= rules.maxTries {
            return [.show(.triesExhausted, error: true)]
                + end(EvaluationError(.authenticationFailed, cause: "\(prompt.failures) failed matches"),
                      release: true, refund: false)
        }
        let left = rules.triesLeft(usedInPrompt: prompt.failures, consecutive: s.consecutiveFailures)
        state = .counting(prompt)
        return [.show(.notRecognized(triesLeft: left), error: true), .recordAttempt]
    }

    private func lockout(_ s: UserState) -> EvaluationError {
        EvaluationError(.biometryLockout, reason: .failedAttempts(rules.lockoutThreshold),
                cause: "\(s.consecutiveFailures) consecutive failed matches")
    }

    // MARK: - Helpers

    /// The outcome, after the effects it has beyond this evaluation: a lockout that began
    /// here, a local unlock, a match a rights dialog counts.
    private func finish(_ outcome: Outcome) -> [Action] {
        var actions: [Action] = []
        switch outcome {
        case .failure(let e):
            if case .failedAttempts = e.reason, lockedAtStart == false {
                actions.append(.lockoutBegan(failures: counted ?? rules.lockoutThreshold))
            }
        case .success(let method):
            if localUnlock { actions.append(.recordLocalUnlock) }
            if dialogMatches, method == .fingerprint { actions.append(.dialogMatch(.fingerprint)) }
        case .notOptedIn:
            break
        }
        return actions + [.finish(outcome)]
    }

    /// Ends with `error`, or — for `deviceOwnerAuthentication` where a password can be
    /// checked — goes on to the password.
    private mutating func end(_ error: EvaluationError, release: Bool, refund: Bool) -> [Action] {
        var actions: [Action] = release ? [.releaseReader] : []
        if refund { actions.append(.refundAttempt) }
        if canAskPassword && error.code != .appCancel && error.code != .userCancel
            && error.code != .invalidContext {
            state = .askingPassword(after: error)
            actions.append(.askPassword)
        } else {
            state = .finished
            actions += finish(.failure(error))
        }
        return actions
    }

    private var isHoldingReader: Bool {
        switch state {
        case .counting, .starting, .scanning: return true
        default: return false
        }
    }

    /// A try was counted and has not ended in a match or a failed match yet.
    private var attemptPending: Bool {
        switch state {
        case .starting, .scanning: return true
        default: return false
        }
    }

    private func promptLines(_ started: VerifyStarted, first: Bool) -> [Action] {
        var lines: [Action] = [.show(.placeFinger(finger: started.finger, scanType: started.scanType), error: false)]
        if first && fallbackOffered { lines.append(.show(.fallbackHint(title: fallbackTitle), error: false)) }
        return lines
    }

    private func refusalMessage(_ error: EvaluationError) -> UserMessage {
        if case .failedAttempts(let n) = error.reason { return .lockedOut(threshold: n) }
        if error.reason == .configurationUntrusted { return .configurationUntrusted }
        return .passwordRequired(error.reason, rules.figures)
    }
}
