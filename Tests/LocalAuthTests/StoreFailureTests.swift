#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// The file store of a `Harness` whose writes fail once `writesLeft` is used up, as on a
/// full file system: it still reads.
final class FullStore: StateStore {
    let inner: FileStateStore
    var writesLeft: Int
    /// The durability each write that went through asked for.
    var writes: [WriteDurability] = []

    init(_ inner: FileStateStore, writesLeft: Int) {
        self.inner = inner
        self.writesLeft = writesLeft
    }

    func load(_ user: UserName) throws(StoreError) -> StoredState { try inner.load(user) }

    func update(_ user: UserName, durability: WriteDurability,
                _ change: (StoredState) -> UserState?) throws(StoreError) -> UserState {
        guard writesLeft > 0 else {
            throw .io(path: inner.directory + "/" + user.value + ".state.tmp", operation: "write", errno: ENOSPC)
        }
        writesLeft -= 1
        writes.append(durability)
        return try inner.update(user, durability: durability, change)
    }

    func installationSecret() throws(StoreError) -> [UInt8] { try inner.installationSecret() }
}

/// A store that can read but not write cannot count failures, so it must not let a match
/// through either: otherwise each prompt gives one uncounted try and the lockout never comes.
@Suite struct StoreFailureTests {
    private func evaluate(_ h: Harness, _ store: StateStore, _ events: [SensorEvent]) -> Result<EvaluationMachine.Outcome.Method, EvaluationError> {
        h.sensor.events = events
        let env = EvaluationEnvironment(user: h.user, terminal: "/dev/pts/1", sensor: h.sensor, store: store,
                                clock: h.clock, system: h.system, options: h.options, ui: h.ui, log: h.log)
        return PolicyEvaluation(environment: env).evaluate(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "run sudo")
    }

    @Test func aMatchThatCannotBeRecordedIsNotASuccess() {
        let h = Harness()
        h.passwordEntered()
        let r = evaluate(h, FullStore(h.store, writesLeft: 0), [.match])
        #expect(r.error?.code == .biometryNotAvailable)
        #expect(!h.ui.shown.contains(.matched))
    }

    @Test func aMatchAndAFailedMatchLookTheSameWhenNothingCanBeWritten() {
        let matched = Harness(), failed = Harness()
        matched.passwordEntered()
        failed.passwordEntered()
        let a = evaluate(matched, FullStore(matched.store, writesLeft: 0), [.match])
        let b = evaluate(failed, FullStore(failed.store, writesLeft: 0), [.noMatch])
        #expect(a.error?.code == b.error?.code)
        #expect(matched.ui.texts == failed.ui.texts)
    }

    @Test func aRecordedMatchStillSaysRecognized() throws {
        let h = Harness()
        h.passwordEntered()
        // Two writes: the try counted before the scan, then the match.
        #expect(try evaluate(h, FullStore(h.store, writesLeft: 2), [.match]).get() == .fingerprint)
        #expect(h.ui.shown.last == .matched)
    }

    @Test func aTryThatCannotBeCountedIsNeverStarted() {
        let h = Harness()
        h.passwordEntered()
        let r = evaluate(h, FullStore(h.store, writesLeft: 0), [.match])
        #expect(r.error?.code == .biometryNotAvailable)
        #expect(h.sensor.scansStarted == 0)
    }

    @Test func aMatchWhoseRecordFailsLeavesTheTryCounted() {
        let h = Harness()
        h.passwordEntered()
        let r = evaluate(h, FullStore(h.store, writesLeft: 1), [.match])
        #expect(r.error?.code == .biometryNotAvailable)
        #expect(h.state.consecutiveFailures == 1)
    }
}
