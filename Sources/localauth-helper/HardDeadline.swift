#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import Synchronization

/// The helper's own end: SIGALRM (default action: the process ends) once it has run longer
/// than any evaluation can take. The module kills a helper that outlives its
/// `helper_timeout`, but localauthd's helpers are not the module's children, and a peer
/// that is not root may just stop reading: this is what ends it there. A try counted before the scan stays counted when
/// the helper ends this way (EvaluationMachine), so ending it never gives anything back.
///
/// Shorter waits (the request and the password frame from a caller that may never write)
/// are bounded with the same timer, and the hard deadline is put back after them.
enum HardDeadline {
    /// Monotonic milliseconds at which the helper ends. Only the main thread sets and reads
    /// it; an atomic, so that the compiler need not take that on trust.
    private static let end = Atomic<Int64>(.max)

    /// Until the options are known: enough for the request and the start-up.
    static let startSeconds: Int64 = 60

    /// Every try's scan, the bus calls around them, and a margin for the prompts (the
    /// user finishing what they type at the prompt once the scans are over).
    static func seconds(for options: Options) -> Int64 {
        let scans = Double(options.maxTries) * options.scanTimeout
        let bus = Double(options.maxTries + 4) * options.busTimeout
        return min(3600, Int64(scans + bus) + promptMarginSeconds)
    }

    static let promptMarginSeconds: Int64 = 30

    static func set(seconds: Int64) {
        end.store(MonotonicClock.millis() + seconds * 1000, ordering: .relaxed)
        rearm()
    }

    /// The next wait ends after `seconds` at most (and the helper with it).
    static func bound(_ seconds: UInt32) {
        alarm(min(seconds, remainingSeconds))
    }

    /// Back to the hard deadline after a shorter bound.
    static func rearm() {
        alarm(remainingSeconds)
    }

    /// Milliseconds until the helper ends (Int64.max before the first `set`).
    static var remainingMillis: Int64 {
        let end = end.load(ordering: .relaxed)
        return end == .max ? .max : end - MonotonicClock.millis()
    }

    private static var remainingSeconds: UInt32 {
        let end = end.load(ordering: .relaxed)
        guard end != .max else { return 0 }
        let left = end - MonotonicClock.millis()
        // alarm(0) would cancel the timer: a deadline already past ends at the next second.
        return UInt32(clamping: max(1, (left + 999) / 1000))
    }
}
