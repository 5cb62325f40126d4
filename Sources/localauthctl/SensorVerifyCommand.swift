import FprintdClient
import LocalAuth

/// `localauthctl sensor-verify USER` (hidden, root only): the sensor alone, for the sensor's
/// own tests and for diagnosis. Claims the reader and scans until a match, up to
/// `maxTries` failed matches, printing each fprintd result as it arrives and the outcome
/// last ("match" or a code's name). Exit 0 on a match, 1 otherwise. It does not count
/// toward the lockout, so it is root's only (`verify` is the counted check).
enum SensorVerifyCommand {
    static let maxTries = 3

    static let spec = CommandSpec(
        name: "sensor-verify", synopsis: "sensor-verify USER",
        summary: "scan a finger against USER's prints through fprintd alone (not counted)",
        help: """
        Claims the reader for USER and scans until a match or 3 failed matches, printing
        each result from fprintd and the outcome last. Nothing is recorded: no lockout, no
        times. For tests and diagnosis; root only.
        """,
        flags: [.dbusAddress, .busTimeout, .scanTimeout, .fprintDir], hidden: true, rootOnly: true,
        run: run)

    static func run(_ inv: Invocation) -> Int32 {
        guard inv.positional.count == 1, let user = inv.positional.first else {
            return usageError(spec, "expected one USER")
        }
        let o: Options
        switch inv.options(log: StderrLog()) {
        case .success(let options): o = options
        case .failure(let e): return fail(spec, e)
        }
        let sensor = FprintdSensor(address: o.dbusAddress, busTimeout: o.busTimeout,
                                   fprintDir: o.fprintDir, log: StderrLog())
        let run = VerifyRun(sensor: sensor, scanTimeout: o.scanTimeout, language: messageLanguage(),
                            interrupt: interruptDescriptor())
        return run.report(run.verify(user: user))
    }
}

/// One `verify` invocation against a sensor.
struct VerifyRun {
    let sensor: FingerprintSensor
    let scanTimeout: Double
    let language: Language
    /// Readable on SIGINT/SIGTERM; -1 when there is none.
    let interrupt: Int32

    private enum Try { case matched, noMatch, ended(EvaluationError) }

    /// nil on a match, else why not.
    func verify(user: String) -> EvaluationError? {
        do {
            try sensor.claim(user: user)
        } catch {
            return error
        }
        defer { sensor.release() }
        for attempt in 1...SensorVerifyCommand.maxTries {
            switch scanOnce() {
            case .matched: return nil
            case .ended(let error): return error
            case .noMatch:
                let left = SensorVerifyCommand.maxTries - attempt
                say(left > 0 ? UserMessage.notRecognized(triesLeft: left).text(language)
                             : UserMessage.triesExhausted.text(language))
            }
        }
        return EvaluationError(.authenticationFailed, cause: "\(SensorVerifyCommand.maxTries) failed matches")
    }

    /// One verification. Stops it on every path but a match, as the engine does (after a
    /// match the reader is only released).
    private func scanOnce() -> Try {
        let started: VerifyStarted
        do {
            started = try sensor.startVerify()
        } catch {
            return .ended(error)
        }
        say(UserMessage.placeFinger(finger: started.finger, scanType: started.scanType).text(language))
        let result = waitForResult(deadline: MonotonicClock.millis() + Int64(scanTimeout * 1000))
        if case .matched = result { return result }
        sensor.stopVerify()
        return result
    }

    private func waitForResult(deadline: Int64) -> Try {
        while true {
            switch sensor.nextEvent(deadline: deadline, wakeOn: interrupt >= 0 ? [interrupt] : []) {
            case .match:
                say("verify-match")
                return .matched
            case .noMatch:
                say("verify-no-match")
                return .noMatch
            case .retry(let kind):
                say(kind.rawValue)
                say(UserMessage.retry(kind).text(language))
            case .disconnected:
                say("verify-disconnected")
                say(UserMessage.readerDisconnected.text(language))
                return .ended(EvaluationError(.biometryDisconnected, cause: "the reader went away during the scan"))
            case .failed(let error):
                return .ended(error)
            case .timeout:
                say(UserMessage.noFingerDetected.text(language))
                return .ended(EvaluationError(.systemCancel, reason: .scanTimeout, cause: "no finger within the scan timeout"))
            case .woken:
                return .ended(EvaluationError(.userCancel, cause: "interrupted"))
            }
        }
    }

    /// Prints the outcome as the last line; returns the exit status.
    func report(_ outcome: EvaluationError?) -> Int32 {
        guard let error = outcome else {
            say("match")
            return 0
        }
        if error.reason == .readerBusy { say(UserMessage.readerBusy.text(language)) }
        if !error.cause.isEmpty { warn(error.cause) }
        say(error.code.name)
        return 1
    }
}
