import Testing
@testable import LocalAuth

/// What an evaluation does beyond itself, as the state machine's actions the runner
/// performs: a lockout that begins (audited), a local unlock (recorded), a match a rights
/// dialog counts (handed on). No watcher compares the state before and after.
@Suite struct EvaluationEffectsTests {
    final class Events: SecurityEvents {
        var began: [(user: String, failures: Int, threshold: Int, service: String)] = []
        var cleared = 0
        func lockoutBegan(_ user: UserName, failures: Int, threshold: Int, context: EventContext) {
            began.append((user.value, failures, threshold, context.service))
        }
        func lockoutCleared(_ user: UserName, failures: Int, by: ClearedBy, context: EventContext) { cleared += 1 }
    }

    final class Matches: @unchecked Sendable {
        var methods: [DialogTicket.Match.Method] = []
    }

    static func run(_ h: Harness, events: [SensorEvent], audit: Events? = nil, localUnlock: Bool = false,
                    matches: Matches? = nil) -> EvaluationMachine.Outcome {
        var env = h.environment()
        env.events = audit
        env.eventContext = EventContext(service: "sudo")
        env.localUnlock = localUnlock
        if let matches { env.dialogMatch = { matches.methods.append($0) } }
        h.sensor.events = events
        return PolicyEvaluation(environment: env).run(.deviceOwnerAuthenticationWithBiometrics)
    }

    // MARK: the machine alone

    static func machine(_ options: Options = Options(), localUnlock: Bool = false,
                        dialogMatches: Bool = false) -> EvaluationMachine {
        EvaluationMachine(policy: .deviceOwnerAuthenticationWithBiometrics, rules: Rules(options), now: 1_000,
                          bootID: "b", terminal: "/dev/pts/1", canAskPassword: false, fallbackTitle: "",
                          localUnlock: localUnlock, dialogMatches: dialogMatches)
    }

    static func usable(failures: Int) -> UserState {
        var s = UserState()
        s.consecutiveFailures = failures
        s.bootID = "b"
        s.lastPasswordAt = 999
        return s
    }

    /// Drives the machine from the start to its scan, with the state read and counted.
    static func scanning(_ m: inout EvaluationMachine, stored: StoredState, counted: UserState) {
        _ = m.handle(.start)
        _ = m.handle(.stateLoaded(stored))
        _ = m.handle(.enrollmentRead(domainState: nil))
        _ = m.handle(.claimed)
        _ = m.handle(.attemptRecorded(counted))
        _ = m.handle(.scanStarted(VerifyStarted(finger: "any", scanType: .press)))
    }

    @Test func theFailedMatchThatLocksOutSaysTheLockoutBegan() {
        var m = Self.machine()
        Self.scanning(&m, stored: .state(Self.usable(failures: 4)), counted: Self.usable(failures: 5))
        let actions = m.handle(.sensor(.noMatch))
        #expect(actions.contains(.lockoutBegan(failures: 5)))
        #expect(actions.last.map { if case .finish(.failure(let e)) = $0 { e.reason == .failedAttempts(5) } else { false } } == true)
        #expect(actions.firstIndex(of: .lockoutBegan(failures: 5))! == actions.count - 2)
    }

    @Test func aFailedMatchShortOfTheLockoutSaysNothing() {
        var m = Self.machine()
        Self.scanning(&m, stored: .state(Self.usable(failures: 0)), counted: Self.usable(failures: 1))
        #expect(!m.handle(.sensor(.noMatch)).contains { if case .lockoutBegan = $0 { true } else { false } })
    }

    @Test func aLockoutAlreadyThereDidNotBeginHere() {
        var m = Self.machine()
        _ = m.handle(.start)
        let actions = m.handle(.stateLoaded(.state(Self.usable(failures: 7))))
        #expect(!actions.contains { if case .lockoutBegan = $0 { true } else { false } })
        if case .finish(.failure(let e))? = actions.last { #expect(e.reason == .failedAttempts(5)) } else { Issue.record("no finish") }
    }

    @Test func aLockoutOthersCompletedWhileThisOneCountedBeganHereToo() {
        var m = Self.machine()
        _ = m.handle(.start)
        _ = m.handle(.stateLoaded(.state(Self.usable(failures: 3))))
        _ = m.handle(.enrollmentRead(domainState: nil))
        _ = m.handle(.claimed)
        let actions = m.handle(.attemptRefused(Self.usable(failures: 6)))
        #expect(actions.contains(.lockoutBegan(failures: 6)))
    }

    @Test func noStateReadNoLockoutBegins() {
        var options = Options()
        options.lockoutThreshold = 1
        options.passwordAfterReboot = false
        options.passwordAfterIdleHours = 0
        var m = Self.machine(options)
        Self.scanning(&m, stored: .fresh, counted: Self.usable(failures: 1))
        let actions = m.handle(.sensor(.noMatch))
        #expect(!actions.contains { if case .lockoutBegan = $0 { true } else { false } })
    }

    @Test func aSuccessAtTheMachineIsALocalUnlock() {
        var m = Self.machine(localUnlock: true)
        Self.scanning(&m, stored: .state(Self.usable(failures: 0)), counted: Self.usable(failures: 1))
        _ = m.handle(.sensor(.match))
        #expect(m.handle(.matchRecorded) == [.show(.matched, error: false), .recordLocalUnlock,
                                             .finish(.success(.fingerprint))])
        var elsewhere = Self.machine()
        Self.scanning(&elsewhere, stored: .state(Self.usable(failures: 0)), counted: Self.usable(failures: 1))
        _ = elsewhere.handle(.sensor(.match))
        #expect(elsewhere.handle(.matchRecorded) == [.show(.matched, error: false), .finish(.success(.fingerprint))])
    }

    @Test func aFailureIsNoLocalUnlockNorADialogMatch() {
        var m = Self.machine(localUnlock: true, dialogMatches: true)
        Self.scanning(&m, stored: .state(Self.usable(failures: 0)), counted: Self.usable(failures: 1))
        let actions = m.handle(.sensor(.failed(EvaluationError(.biometryNotAvailable, cause: "x"))))
        #expect(!actions.contains(.recordLocalUnlock))
        #expect(!actions.contains(.dialogMatch(.fingerprint)))
    }

    @Test func onlyANewMatchIsADialogMatch() {
        var m = Self.machine(dialogMatches: true)
        Self.scanning(&m, stored: .state(Self.usable(failures: 0)), counted: Self.usable(failures: 1))
        _ = m.handle(.sensor(.match))
        #expect(m.handle(.matchRecorded).contains(.dialogMatch(.fingerprint)))
        // A reused success is no touch.
        var options = Options()
        options.reuseDuration = 60
        var reused = Self.machine(options, localUnlock: true, dialogMatches: true)
        _ = reused.handle(.start)
        var s = Self.usable(failures: 0)
        s.lastFingerprintAt = 990
        s.lastFingerprintTerminal = "/dev/pts/1"
        #expect(reused.handle(.stateLoaded(.state(s))) == [.recordLocalUnlock, .finish(.success(.reused))])
    }

    // MARK: performed by the runner

    @Test func theRunnerAuditsTheLockoutThatBegins() {
        let h = Harness()
        h.passwordEntered()
        let audit = Events()
        _ = Self.run(h, events: [.noMatch, .noMatch, .noMatch], audit: audit)
        #expect(audit.began.isEmpty)
        let outcome = Self.run(h, events: [.noMatch, .noMatch, .match], audit: audit)
        #expect(outcome == .failure(EvaluationError(.biometryLockout, reason: .failedAttempts(5),
                                                    cause: "5 consecutive failed matches")))
        #expect(audit.began.count == 1)
        #expect(audit.began.first?.failures == 5)
        #expect(audit.began.first?.threshold == 5)
        #expect(audit.began.first?.service == "sudo")
        // Locked already: no second record.
        _ = Self.run(h, events: [.match], audit: audit)
        #expect(audit.began.count == 1)
    }

    @Test func theRunnerRecordsALocalUnlock() {
        let h = Harness()
        h.passwordEntered()
        #expect(h.state.lastLocalUnlockAt == nil)
        _ = Self.run(h, events: [.match])
        #expect(h.state.lastLocalUnlockAt == nil)
        h.clock.time += 10
        _ = Self.run(h, events: [.match], localUnlock: true)
        #expect(h.state.lastLocalUnlockAt == h.clock.time)
        #expect(h.state.lastLocalUnlockBoot != nil)
    }

    @Test func theRunnerHandsOnADialogMatch() {
        let h = Harness()
        h.passwordEntered()
        let matches = Matches()
        _ = Self.run(h, events: [.noMatch], matches: matches)
        #expect(matches.methods.isEmpty)
        _ = Self.run(h, events: [.match], matches: matches)
        #expect(matches.methods == [.fingerprint])
    }

    @Test func thePasswordRecordAuditsTheLockoutItLifts() throws {
        let h = Harness()
        h.passwordEntered()
        let audit = Events()
        _ = Self.run(h, events: [.noMatch, .noMatch, .noMatch], audit: audit)
        _ = Self.run(h, events: [.noMatch, .noMatch], audit: audit)
        #expect(audit.began.count == 1)
        var env = h.environment()
        env.events = audit
        try PasswordRecord.record(env: env, rules: Rules(h.options), domainState: nil)
        #expect(audit.cleared == 1)
        // Nothing to lift the second time; and no sink, no record.
        try PasswordRecord.record(env: env, rules: Rules(h.options), domainState: nil)
        #expect(audit.cleared == 1)
    }
}
