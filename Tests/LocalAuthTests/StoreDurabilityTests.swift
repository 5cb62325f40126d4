#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// What reaches the disk before the reader starts: a counted try always; a write that only
/// loosens the state (a match, a password) is not synced, because losing it to a power cut
/// leaves the stricter state written before it.
@Suite struct StoreDurabilityTests {
    private func evaluate(_ h: Harness, _ store: FullStore, _ events: [SensorEvent],
                          verifier: PasswordVerifier? = nil,
                          policy: EvaluationPolicy = .deviceOwnerAuthenticationWithBiometrics)
        -> Result<EvaluationMachine.Outcome.Method, EvaluationError> {
        h.sensor.events = events
        let env = EvaluationEnvironment(user: h.user, terminal: "/dev/pts/1", sensor: h.sensor, store: store,
                                clock: h.clock, system: h.system, options: h.options, ui: h.ui,
                                passwordVerifier: verifier, log: h.log)
        return PolicyEvaluation(environment: env).evaluate(policy, localizedReason: "run sudo")
    }

    @Test func theTryIsSyncedBeforeTheScanAndTheMatchIsNot() throws {
        let h = Harness()
        h.passwordEntered()
        let store = FullStore(h.store, writesLeft: 10)
        #expect(try evaluate(h, store, [.match]).get() == .fingerprint)
        #expect(store.writes == [.synced, .loosening])
    }

    @Test func everyFailedTryIsSynced() {
        let h = Harness()
        h.passwordEntered()
        let store = FullStore(h.store, writesLeft: 10)
        _ = evaluate(h, store, [.noMatch, .noMatch, .noMatch])
        #expect(store.writes == [.synced, .synced, .synced])
        #expect(h.state.consecutiveFailures == 3)
    }

    @Test func thePasswordAfterTheTriesIsALooseningWrite() {
        let h = Harness()
        h.passwordEntered()
        let store = FullStore(h.store, writesLeft: 10)
        let r = evaluate(h, store, [.noMatch, .noMatch, .noMatch], verifier: FixedPassword(),
                         policy: .deviceOwnerAuthentication)
        #expect((try? r.get()) == .password)
        #expect(store.writes == [.synced, .synced, .synced, .loosening])
        #expect(h.state.consecutiveFailures == 0)
    }

    @Test func theFileStoreSyncsFileAndDirectoryOnlyWhenAsked() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var syncs = 0
        let store = FileStateStore(directory: dir.path + "/state", sync: { _ in syncs += 1; return 0 })
        let alice = try UserName("alice")
        let rules = Rules(Options())
        try store.update(alice) { rules.afterFailedMatch($0.userState) }
        #expect(syncs == 2)
        try store.update(alice, durability: .loosening) { rules.afterRefund($0.userState) }
        #expect(syncs == 2)
        // Not synced, but written all the same.
        #expect(try store.load(alice).userState.consecutiveFailures == 0)
    }

    @Test func theFirstTrustOfTheEnrolledSetIsSyncedEvenInALooseningWrite() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var syncs = 0
        let store = FileStateStore(directory: dir.path + "/state", sync: { _ in syncs += 1; return 0 })
        let alice = try UserName("alice")
        try store.update(alice, durability: .loosening) { stored in
            var s = stored.userState
            s.trustedDomainState = "pin-1"
            return s
        }
        #expect(syncs == 2)
        // Trusting another set later only loosens back what the first pin holds: not synced.
        try store.update(alice, durability: .loosening) { stored in
            var s = stored.userState
            s.trustedDomainState = "pin-2"
            return s
        }
        #expect(syncs == 2)
    }

    @Test func aCountedTryWhoseDirectoryCannotBeSyncedIsNotCounted() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var calls = 0
        // The file's fsync works, the directory's fails.
        let store = FileStateStore(directory: dir.path + "/state", sync: { _ in
            calls += 1
            return calls % 2 == 0 ? -1 : 0
        })
        let alice = try UserName("alice")
        let rules = Rules(Options())
        #expect(throws: StoreError.self) { try store.update(alice) { rules.afterFailedMatch($0.userState) } }
    }
}
