import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs `PreflightAnswers` for the whole process: one lock around the rule, the root side
/// asked outside it. Every `LAContext` of the process shares `shared`; any thread may call.
///
/// A call that finds a usable answer takes the lock for a dictionary look-up and returns
/// (microseconds); only the first call, a call after `maxAge` without calls, and a call
/// right after an evaluation ended wait for the root side (one process start).
final class PreflightCache: @unchecked Sendable {
    typealias Key = PreflightAnswers.Key

    static let shared = PreflightCache(
        fetch: PreflightCache.askRootSide,
        clock: PreflightCache.bootClock,
        background: { work in DispatchQueue.global(qos: .utility).async(execute: work) })

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
                background { [self] in refresh(key, ticket) }
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
    /// Called before the evaluation's reply, so that the program's next preflight waits
    /// for the new answers rather than getting the old ones.
    func evaluationEnded() {
        let again: [(Key, PreflightAnswers.Ticket)] = lock.withLock { answers.evaluationEnded(now: clock()) }
        for (key, ticket) in again {
            background { [self] in refresh(key, ticket) }
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
        return Evaluation(request: request, prompt: nil, ui: nil, program: key.program).run()
    }

    /// CLOCK_BOOTTIME: monotonic, and counting the time the machine was suspended.
    @Sendable static func bootClock() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_BOOTTIME, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
