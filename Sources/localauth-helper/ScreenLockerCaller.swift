#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The user's installed screen locker a request comes from (ScreenLocker's list), and its
/// answers applied (ScreenLockerAnswers): the helper's half of Plasma's lock screen.
enum ScreenLockerCaller {
    /// The locker the calling process runs, or nil. Only on the path of a peer that is not
    /// root (a locker runs as its user; its pid is the kernel's, pinned by localauthd), and
    /// only for a root's program in root's directories that is the very file it runs: a
    /// user's copy named `kscreenlocker_greet` is any program.
    static func of(_ request: HelperRequest) -> ScreenLocker? {
        guard request.terminalOwner != nil, let pid = request.callerPID, pid > 1,
              let path = RootOwned.installedProgram(of: pid) else { return nil }
        return ScreenLocker.named(programPath: path)
    }

    /// The evaluation's outcome as the locker gets it, after waiting out its `notBeforeMillis`
    /// (counted from `started`, when the request began here). Any other service's as it is.
    static func shape(_ outcome: EvaluationMachine.Outcome, locker: ScreenLocker, service: String,
                      started: Int64, log: LogSink) -> EvaluationMachine.Outcome {
        guard let answer = ScreenLockerAnswers.answer(outcome, locker: locker, service: service) else { return outcome }
        let wait = started + answer.notBeforeMillis - MonotonicClock.millis()
        if wait > 0 { sleepMillis(wait) }
        log.log(.info, "\(locker.description) service=\(LogWords.word(service)): lockscreen=\(answer.rule) "
                + "after \(MonotonicClock.millis() - started) ms")
        return answer.outcome
    }

    private static func sleepMillis(_ ms: Int64) {
        var request = timespec(tv_sec: Int(ms / 1000), tv_nsec: Int(ms % 1000) * 1_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
