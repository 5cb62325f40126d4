/// Performs the actions of an `EvaluationMachine` against the injected environment and feeds
/// the results back, until the machine finishes. All I/O of an evaluation happens here.
final class EvaluationRunner {
    private let env: EvaluationEnvironment
    private let rules: Rules
    private let scanTimeoutMillis: Int64
    private var deadline: Int64 = 0
    private var claimed = false
    private var scanning = false
    /// The domain state computed for this evaluation, if the enrolled set was read.
    private(set) var domainState: String?

    init(env: EvaluationEnvironment) {
        self.env = env
        self.rules = Rules(env.options)
        self.scanTimeoutMillis = Int64(env.options.scanTimeout * 1000)
    }

    func run(_ machine: inout EvaluationMachine) -> EvaluationMachine.Outcome {
        var pending = machine.handle(.start)
        while !pending.isEmpty {
            let action = pending.removeFirst()
            if case .finish(let outcome) = action {
                cleanUp()
                return outcome
            }
            if let event = perform(action) {
                pending += machine.handle(event)
            }
        }
        // The machine always ends with `.finish`; reaching here is our own bug.
        cleanUp()
        return .failure(EvaluationError(.invalidContext, cause: "evaluation ended without an outcome"))
    }

    /// Performs one action; returns the event it produced, if it produces one.
    private func perform(_ action: EvaluationMachine.Action) -> EvaluationMachine.Event? {
        switch action {
        case .loadState: return loadState()
        case .readEnrollment: return readEnrollment()
        case .claimReader: return claim()
        case .startScan: return startScan()
        case .waitForEvent: return waitForEvent()
        case .recordAttempt: return recordAttempt()
        case .recordMatch(let domain): return recordMatch(domain)
        case .askPassword: return askPassword()
        case .recordPassword: return recordPassword()
        case .show(let message, let error):
            env.ui?.show(message, error: error)
            return nil
        case .stopScan:
            if scanning { env.sensor.stopVerify() }
            scanning = false
            return nil
        case .releaseReader:
            cleanUp()  // a scan still running is stopped before the release
            return nil
        case .refundAttempt:
            refundAttempt()
            return nil
        case .lockoutBegan(let failures):
            env.events?.lockoutBegan(env.user, failures: failures, threshold: rules.lockoutThreshold,
                                     context: env.eventContext)
            return nil
        case .recordLocalUnlock:
            recordLocalUnlock()
            return nil
        case .dialogMatch(let method):
            env.dialogMatch?(method)
            return nil
        case .finish:
            return nil
        }
    }

    // MARK: - Steps

    private func loadState() -> EvaluationMachine.Event {
        do {
            let stored = try env.store.load(env.user)
            if case .damaged(let cause) = stored {
                env.log.log(.error, "state of \(env.user) cannot be trusted: \(cause)")
            }
            return .stateLoaded(stored)
        } catch {
            return .stepFailed(storeFailure(error))
        }
    }

    private func readEnrollment() -> EvaluationMachine.Event {
        do {
            let set = try env.sensor.enrolledSet(for: env.user.value)
            domainState = try DomainState.compute(set, store: env.store)
            return .enrollmentRead(domainState: domainState)
        } catch {
            return .stepFailed(error)
        }
    }

    /// Asks for the reader without waiting: the try is recorded (`recordAttempt`) while
    /// fprintd answers, and `startScan` takes the answer. A busy reader is told there; the
    /// try recorded meanwhile is given back (`EvaluationMachine`, refund on a failed start).
    private func claim() -> EvaluationMachine.Event {
        do {
            try env.sensor.requestClaim(user: env.user.value)
            claimed = true
            return .claimed
        } catch {
            return .stepFailed(readerBusyShown(error))
        }
    }

    private func startScan() -> EvaluationMachine.Event {
        do {
            let started = try env.sensor.startVerify()
            scanning = true
            deadline = MonotonicClock.millis() + scanTimeoutMillis
            return .scanStarted(started)
        } catch {
            return .stepFailed(readerBusyShown(error))
        }
    }

    private func readerBusyShown(_ error: EvaluationError) -> EvaluationError {
        if error.reason == .readerBusy { env.ui?.show(.readerBusy, error: true) }
        return error
    }

    /// Waits for the sensor; a wake-up from a source either ends the wait or is ignored.
    private func waitForEvent() -> EvaluationMachine.Event {
        let fds = env.wakeSources.map(\.fd)
        while true {
            let event = env.sensor.nextEvent(deadline: deadline, wakeOn: fds)
            // A finished verification still needs VerifyStop before the next one (fprintd
            // answers AlreadyInUse otherwise), so `scanning` stays set until `.stopScan`;
            // only a match ends it for good (then the release alone is enough).
            guard case .woken(let fd) = event else {
                if event == .match { scanning = false }
                return .sensor(event)
            }
            if let source = env.wakeSources.first(where: { $0.fd == fd }),
               let error = source.interruption() {
                return interrupted(error)
            }
        }
    }

    /// The wait was interrupted (Ctrl-C, Enter, the caller gone). Whatever the reader had
    /// already reported is collected before the scan is stopped: a verdict that raced the
    /// interruption still counts (a user who kills their own sudo the moment a finger is
    /// rejected must not get that try back).
    private func interrupted(_ error: EvaluationError) -> EvaluationMachine.Event {
        let verdict = env.sensor.collectVerdict()
        if let verdict {
            env.log.log(.info, "the reader's \(verdict) arrived with the interruption (\(error.code.name)); it counts")
            return .interruptedAfter(error, verdict: verdict)
        }
        return .interrupted(error)
    }

    /// Counts the coming try as failed before the reader starts (EvaluationMachine).
    private func recordAttempt() -> EvaluationMachine.Event {
        var damaged: String?
        var locked: UserState?
        do {
            let s = try env.store.update(env.user) { stored in
                if case .damaged(let cause) = stored {
                    damaged = cause  // never overwrite what we cannot read
                    return nil
                }
                if self.rules.isLockedOut(stored.userState) {
                    locked = stored.userState
                    return nil
                }
                return self.rules.afterFailedMatch(stored.userState)
            }
            if let damaged {
                return .stepFailed(EvaluationError(.biometryLockout, reason: .stateUnreadable, cause: damaged))
            }
            if let locked {
                // Every try is counted before its scan, so the tries of other transactions
                // still waiting for fprintd's answer count here too; those that find the
                // reader busy give theirs back. This one may be such a try: the reader's
                // answer comes first, and a busy reader is said as busy (eight sudo prompts
                // at a reader another one held were told "locked out" under load).
                do { try env.sensor.awaitClaim() } catch { return .stepFailed(readerBusyShown(error)) }
                return .attemptRefused(locked)
            }
            return .attemptRecorded(s)
        } catch {
            // A try that cannot be counted is not started.
            return .stepFailed(storeFailure(error))
        }
    }

    /// Gives back a counted try that ended with no finger presented. Failing to do so
    /// leaves one failure too many: the safe side.
    private func refundAttempt() {
        do {
            try env.store.update(env.user, durability: .loosening) { stored in
                if case .damaged = stored { return nil }
                return self.rules.afterRefund(stored.userState)
            }
        } catch {
            env.log.log(.warning, "could not give back an unused try of \(env.user): \(error)")
        }
    }

    /// A success at the machine itself. Loosening: lost, rule 5 holds a little longer.
    private func recordLocalUnlock() {
        let now = env.clock.now()
        let boot = BootStamp.now(bootID: env.system.bootID())
        do {
            try env.store.update(env.user, durability: .loosening) { stored in
                guard case .state(var state) = stored else { return nil }
                state.lastLocalUnlockAt = now
                state.lastLocalUnlockBoot = boot
                return state
            }
        } catch {
            env.log.log(.notice, "the local unlock of \(env.user) could not be recorded: \(error)")
        }
    }

    private func recordMatch(_ domain: String?) -> EvaluationMachine.Event {
        let now = env.clock.now()
        do {
            try env.store.update(env.user, durability: .loosening) { stored in
                if case .damaged = stored { return nil }
                return self.rules.afterMatch(stored.userState, now: now, terminal: self.env.terminal,
                                             domainState: domain)
            }
        } catch {
            // The same file counts the failures: when it cannot be written (a full or
            // read-only file system), every prompt would give one try that is never
            // counted, and a match would still succeed, so the lockout would never come.
            // Not a success, then, and nothing that tells a match from a failed match.
            return .stepFailed(storeFailure(error))
        }
        return .matchRecorded
    }

    private func askPassword() -> EvaluationMachine.Event {
        guard let ui = env.ui, let verifier = env.passwordVerifier else {
            return .interrupted(EvaluationError(.appCancel, cause: "no way to ask for the password"))
        }
        guard var password = ui.askPassword(prompt: UserMessage.passwordPrompt.text(env.language)) else {
            return .interrupted(EvaluationError(.appCancel, cause: "the conversation failed"))
        }
        defer { Crypto.wipe(&password) }
        return .passwordChecked(verifier.verify(user: env.user, password: password))
    }

    private func recordPassword() -> EvaluationMachine.Event {
        do {
            try PasswordRecord.record(env: env, rules: rules, domainState: domainState)
        } catch {
            env.log.log(.warning, "could not record the password of \(env.user): \(error)")
        }
        return .passwordRecorded
    }

    // MARK: - Helpers

    private func cleanUp() {
        if scanning { env.sensor.stopVerify() }
        if claimed { env.sensor.release() }
        scanning = false
        claimed = false
    }

    private func storeFailure(_ error: StoreError) -> EvaluationError {
        env.log.log(.error, "state store: \(error)")
        return EvaluationError(.biometryNotAvailable, cause: "state store: \(error)")
    }
}

/// Recording a successful password: clears the lockout and the password preconditions.
/// Used after `deviceOwnerAuthentication`'s own password and by the module's `authsucc` line.
public enum PasswordRecord {
    /// `localUnlock`: the password was typed here, not in a login from elsewhere, which ends
    /// what a remote login before it holds back (PresenceRule's rule 5). Returns the state it
    /// replaced, read under the same lock: what the record lifted is told from it, not from a
    /// read before; a lockout it lifted goes to `env.events` (PasswordProofRule.lockoutCleared).
    @discardableResult
    public static func record(env: EvaluationEnvironment, rules: Rules, domainState: String?,
                              localUnlock: Bool = false) throws(StoreError) -> StoredState {
        let now = env.clock.now()
        let boot = env.system.bootID()
        var replaced = StoredState.fresh
        try env.store.update(env.user, durability: .loosening) { stored in
            replaced = stored
            if case .damaged(let cause) = stored {
                env.log.log(.notice, "rewriting damaged state of \(env.user) after the password: \(cause)")
            }
            var next = rules.afterPassword(stored.userState, now: now, bootID: boot, domainState: domainState)
            if localUnlock {
                next.lastLocalUnlockAt = now
                next.lastLocalUnlockBoot = BootStamp.now(bootID: boot)
            }
            return next
        }
        if let events = env.events, let failures = PasswordProofRule.lockoutCleared(before: replaced, rules: rules) {
            events.lockoutCleared(env.user, failures: failures, by: .password, context: env.eventContext)
        }
        return replaced
    }
}

/// The opaque hash of the enrolled set (Apple's `evaluatedPolicyDomainState`), keyed with
/// the installation secret so it reveals nothing outside this machine.
public enum DomainState {
    public static func compute(_ set: EnrolledSet, store: StateStore) throws(EvaluationError) -> String? {
        guard !set.fingers.isEmpty else { return nil }
        let key: [UInt8]
        do {
            key = try store.installationSecret()
        } catch {
            throw EvaluationError(.biometryNotAvailable, cause: "installation secret: \(error)")
        }
        return Crypto.hex(Crypto.hmacSHA256(key: key, set.canonicalBytes))
    }
}
