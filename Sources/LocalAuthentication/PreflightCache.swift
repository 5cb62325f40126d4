import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs `PreflightAnswers` for the whole process: one lock around the rule, the root side
/// asked outside it. Every `LAContext` of the process shares `shared`; any thread may call.
///
/// A call that finds a usable answer takes the lock for a dictionary look-up and returns
/// (microseconds); only the first call, a call after `maxAge` without calls, and a call
/// while the answer after an evaluation is still on its way wait for the root side (one
/// process start at most). `@unchecked Sendable`: `lock` guards `answers`, the rest is
/// constant.
final class PreflightCache: @unchecked Sendable {
    typealias Key = PreflightAnswers.Key

    /// Background requests run on a thread of their own (at most one per second and
    /// policy, and one per evaluation), not on Dispatch's pool: callers waiting for their
    /// answer may be occupying that pool's threads themselves.
    static let shared = PreflightCache(
        fetch: PreflightCache.askRootSide,
        clock: PreflightCache.bootClock,
        background: { work in Thread.detachNewThread(work) })

    // `lock` guards `answers`; the three closures are immutable.
    private let lock = NSCondition()
    private var answers = PreflightAnswers()
    private let fetch: @Sendable (Key) -> AppResult
    private let clock: @Sendable () -> Double
    private let background: @Sendable (@escaping @Sendable () -> Void) -> Void

    /// `fetch` asks the root side (blocking); `clock` is seconds on one clock;
    /// `background` runs work on another thread.
    init(fetch: @escaping @Sendable (Key) -> AppResult, clock: @escaping @Sendable () -> Double,
         background: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.fetch = fetch
        self.clock = clock
        self.background = background
    }

    /// The answer for `key`, as `PreflightAnswers` decides.
    func answer(_ key: Key) -> AppResult {
        lock.lock()
        defer { lock.unlock() }
        let calledAt = clock()
        while true {
            switch answers.ask(key, calledAt: calledAt, now: clock()) {
            case .answer(let result):
                return result
            case .answerAndRefresh(let result, let ticket):
                lock.unlock()   // `background` may run the work at once (tests)
                background { [self] in refresh(key, ticket) }
                lock.lock()
                return result
            case .fetch(let ticket):
                lock.unlock()
                let result = fetch(key)
                lock.lock()
                answers.received(key, ticket: ticket, result: result)
                lock.broadcast()
            case .wait:
                lock.wait()
            }
        }
    }

    /// An evaluation of this process ended: what the root side says may have changed.
    /// Called before the evaluation's reply, so that the program's next preflight never
    /// gets an answer from before. The new answers are asked for at once, and waited for
    /// here up to `bound` seconds: in the usual case (one process start) they are in by
    /// the time the reply comes, so that next preflight gets its answer from memory; when
    /// the root side takes longer (fprintd frozen), the reply does not wait for it, and a
    /// preflight before it arrives waits for it instead.
    func evaluationEnded(waitingUpTo bound: Double) {
        let again: [(Key, PreflightAnswers.Ticket)] = lock.withLock { answers.evaluationEnded(now: clock()) }
        for (key, ticket) in again {
            background { [self] in refresh(key, ticket) }
        }
        let deadline = Date(timeIntervalSinceNow: bound)
        lock.withLock {
            while again.contains(where: { answers.isAsking($0.0, ticket: $0.1) }), lock.wait(until: deadline) {}
        }
    }

    private func refresh(_ key: Key, _ ticket: PreflightAnswers.Ticket) {
        let result = fetch(key)
        lock.withLock {
            answers.received(key, ticket: ticket, result: result)
            lock.broadcast()
        }
    }

    // MARK: - The process's own

    /// One `op=preflight` run of the root side named by `key`.
    @Sendable static func askRootSide(_ key: Key) -> AppResult {
        let request = AppRequest(operation: .preflight, policy: key.policy, fallbackTitle: nil, canInteract: false)
        // Kept alive until it returns, as any caller's evaluation is (the optimizer otherwise
        // sees its [weak self] callback outlive it, though without a user interface none is made).
        return withExtendedLifetime(Evaluation(request: request, prompt: nil, ui: nil, program: key.program)) {
            $0.run()
        }
    }

    /// CLOCK_BOOTTIME: monotonic, and counting the time the machine was suspended.
    @Sendable static func bootClock() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_BOOTTIME, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
