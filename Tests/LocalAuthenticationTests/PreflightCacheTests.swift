import Foundation
import Testing
@testable import LocalAuthentication

/// The rule that decides which preflight answer a call gets (PreflightAnswers), as a
/// transcript with the time given, and its runner (PreflightCache) with a root side that
/// counts how often it is asked. The real root side: Tests/integration/test_app_api.py.
@Suite struct PreflightAnswersTests {
    let key = PreflightAnswers.Key(program: "/run/localauth/socket", uid: 1000, policy: "biometrics")
    let ok = AppResult(error: nil)
    let locked = AppResult(error: .make(.biometryLockout, debug: "5 failures"))

    @Test func theFirstCallAsksAndLaterCallsWithinFreshForDoNot() {
        var a = PreflightAnswers()
        guard case .fetch(let t) = a.ask(key, calledAt: 100, now: 100) else { Issue.record("no fetch"); return }
        // Another thread meanwhile waits for it rather than asking again.
        #expect(a.ask(key, calledAt: 100.01, now: 100.01) == .wait)
        let kept = a.received(key, ticket: t, result: ok)
        #expect(kept)
        #expect(a.ask(key, calledAt: 100.02, now: 100.02) == .answer(ok))
        #expect(a.ask(key, calledAt: 100 + PreflightAnswers.freshFor - 0.001, now: 100.9) == .answer(ok))
        // Another policy is another question.
        var owner = key
        owner.policy = "owner"
        guard case .fetch = a.ask(owner, calledAt: 100.5, now: 100.5) else { Issue.record("owner not asked"); return }
    }

    @Test func aStaleAnswerIsGivenOnceRefreshedInTheBackgroundAndReplacedByTheNewOne() {
        var a = PreflightAnswers()
        guard case .fetch(let t0) = a.ask(key, calledAt: 0, now: 0) else { Issue.record("no fetch"); return }
        a.received(key, ticket: t0, result: ok)
        guard case .answerAndRefresh(ok, let t1) = a.ask(key, calledAt: 2, now: 2) else {
            Issue.record("no refresh"); return
        }
        // One refresh at a time: calls meanwhile get the old answer and start none.
        #expect(a.ask(key, calledAt: 2.5, now: 2.5) == .answer(ok))
        a.received(key, ticket: t1, result: locked)   // a lockout reached elsewhere
        #expect(a.ask(key, calledAt: 2.6, now: 2.6) == .answer(locked))
    }

    @Test func anAnswerOlderThanMaxAgeIsNeverGiven() {
        var a = PreflightAnswers()
        guard case .fetch(let t0) = a.ask(key, calledAt: 0, now: 0) else { Issue.record("no fetch"); return }
        a.received(key, ticket: t0, result: ok)
        guard case .fetch(let t1) = a.ask(key, calledAt: PreflightAnswers.maxAge, now: PreflightAnswers.maxAge) else {
            Issue.record("an answer maxAge old was given"); return
        }
        a.received(key, ticket: t1, result: locked)
        // The call that waited takes the answer it asked for, however long asking took.
        #expect(a.ask(key, calledAt: PreflightAnswers.maxAge, now: PreflightAnswers.maxAge + 30) == .answer(locked))
    }

    @Test func aRefreshInFlightWhenTheAnswerExpiresIsWaitedFor() {
        var a = PreflightAnswers()
        guard case .fetch(let t0) = a.ask(key, calledAt: 0, now: 0) else { Issue.record("no fetch"); return }
        a.received(key, ticket: t0, result: ok)
        guard case .answerAndRefresh(_, let t1) = a.ask(key, calledAt: 4.9, now: 4.9) else { Issue.record("no refresh"); return }
        #expect(a.ask(key, calledAt: 5.1, now: 5.1) == .wait)
        a.received(key, ticket: t1, result: locked)
        #expect(a.ask(key, calledAt: 5.1, now: 5.2) == .answer(locked))
    }

    @Test func anEvaluationEndingDropsEveryAnswerAndAsksAgainWhatWasAsked() {
        var a = PreflightAnswers()
        var owner = key
        owner.policy = "owner"
        guard case .fetch(let t0) = a.ask(key, calledAt: 0, now: 0) else { Issue.record("no fetch"); return }
        a.received(key, ticket: t0, result: ok)
        guard case .fetch(let stale) = a.ask(owner, calledAt: 0.1, now: 0.1) else { Issue.record("no fetch"); return }
        let again = a.evaluationEnded(now: 0.2)
        #expect(Set(again.map(\.0)) == [key, owner])
        // The next preflight, however soon, waits for the new answer...
        #expect(a.ask(key, calledAt: 0.3, now: 0.3) == .wait)
        // ...and an answer asked for before the evaluation ended is thrown away.
        let keptStale = a.received(owner, ticket: stale, result: ok)
        #expect(!keptStale)
        #expect(a.ask(owner, calledAt: 0.3, now: 0.3) == .wait)
        for (k, t) in again {
            let kept = a.received(k, ticket: t, result: locked)
            #expect(kept)
        }
        #expect(a.ask(key, calledAt: 0.3, now: 0.4) == .answer(locked))
        #expect(a.ask(owner, calledAt: 0.3, now: 0.4) == .answer(locked))
    }

    @Test func nothingAskedNothingAskedAgain() {
        var a = PreflightAnswers()
        #expect(a.evaluationEnded(now: 1).isEmpty)
    }
}

/// A clock the test moves, and a root side that counts its runs (thread-safe both).
/// `@unchecked Sendable`: `lock` guards the clock, the count, the answer and the pending
/// work; `gate` is set before the cache is first asked.
private final class FakeRootSide: @unchecked Sendable {
    private let lock = NSLock()
    private var seconds: Double = 1000
    private var runs = 0
    private var answer = AppResult(error: nil)
    private var pending: [@Sendable () -> Void] = []
    /// Released to let a fetch return (none when nil: fetches return at once).
    var gate: DispatchSemaphore?

    var count: Int { lock.withLock { runs } }
    func advance(_ s: Double) { lock.withLock { seconds += s } }
    func now() -> Double { lock.withLock { seconds } }
    func set(_ r: AppResult) { lock.withLock { answer = r } }

    func fetch(_ key: PreflightAnswers.Key) -> AppResult {
        gate?.wait()
        return lock.withLock {
            runs += 1
            return answer
        }
    }

    /// Background work is kept until `drain()` runs it (on this thread).
    func later(_ work: @escaping @Sendable () -> Void) { lock.withLock { pending.append(work) } }
    func drain() {
        let work = lock.withLock { () -> [@Sendable () -> Void] in
            defer { pending.removeAll() }
            return pending
        }
        for w in work { w() }
    }

    func cache() -> PreflightCache {
        PreflightCache(fetch: { [self] in fetch($0) }, clock: { [self] in now() }, background: { [self] in later($0) })
    }
}

@Suite struct PreflightCacheTests {
    let key = PreflightAnswers.Key(program: "/p", uid: 1000, policy: "biometrics")

    @Test func manyCallsFromManyThreadsAskTheRootSideOnce() {
        let root = FakeRootSide()
        let gate = DispatchSemaphore(value: 0)
        root.gate = gate
        let cache = root.cache()
        let results = ResultBox()
        let group = DispatchGroup()
        for _ in 0..<16 {
            DispatchQueue.global().async(group: group) {
                for _ in 0..<200 { results.add(cache.answer(key)) }
            }
        }
        Thread.sleep(forTimeInterval: 0.05)   // let them pile up behind the first fetch
        gate.signal()
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(root.count == 1)
        #expect(results.count == 16 * 200 && results.allSucceeded)
    }

    @Test func aStaleAnswerComesAtOnceAndTheRefreshRunsInTheBackground() {
        let root = FakeRootSide()
        let cache = root.cache()
        _ = cache.answer(key)
        root.set(AppResult(error: .make(.biometryLockout, debug: "elsewhere")))
        root.advance(PreflightAnswers.freshFor + 0.5)
        #expect(cache.answer(key).error == nil)          // the old answer, at once
        #expect(cache.answer(key).error == nil)
        #expect(root.count == 1)                        // nothing asked on the caller's thread
        root.drain()                                    // the one background refresh
        #expect(root.count == 2)
        #expect(cache.answer(key).error?.code == .biometryLockout)
    }

    @Test func afterAnEvaluationTheReplyWaitsBrieflyForTheNewAnswer() {
        let root = FakeRootSide()
        let cache = PreflightCache(fetch: { root.fetch($0) }, clock: { root.now() }, background: { $0() })
        #expect(cache.answer(key).error == nil)
        root.set(AppResult(error: .make(.biometryLockout, debug: "this process's evaluation")))
        cache.evaluationEnded(waitingUpTo: 30)
        #expect(root.count == 2)
        // In memory by the time the reply comes: the next preflight asks nothing.
        #expect(cache.answer(key).error?.code == .biometryLockout)
        #expect(root.count == 2)
    }

    @Test func afterAnEvaluationTheNextPreflightGetsTheNewAnswer() {
        let root = FakeRootSide()
        let cache = root.cache()
        #expect(cache.answer(key).error == nil)
        root.set(AppResult(error: .make(.biometryLockout, debug: "this process's evaluation")))
        // The root side slow to answer (its work held back): the reply waits no longer than
        // the bound.
        cache.evaluationEnded(waitingUpTo: 0.05)
        let next = DispatchQueue(label: "next preflight")
        let got = ResultBox()
        let done = DispatchSemaphore(value: 0)
        next.async {
            got.add(cache.answer(key))
            done.signal()
        }
        // It waits for the refresh rather than taking the old answer.
        #expect(done.wait(timeout: .now() + 0.2) == .timedOut)
        root.drain()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(got.codes == [.biometryLockout])
        #expect(root.count == 2)
    }
}

/// `@unchecked Sendable`: `lock` guards `results`.
private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [AppResult] = []
    func add(_ r: AppResult) { lock.withLock { results.append(r) } }
    var count: Int { lock.withLock { results.count } }
    var allSucceeded: Bool { lock.withLock { results.allSatisfy { $0.error == nil } } }
    var codes: [LAError.Code?] { lock.withLock { results.map { $0.error?.code } } }
}
