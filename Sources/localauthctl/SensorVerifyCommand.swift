import FprintdClient
import LocalAuth

/// `localauthctl verify`: claims the reader and scans until a match, up to `maxTries`
/// failed matches, printing each status as it arrives and the outcome last ("match" or an
/// LAError name). Exit 0 on a match, 1 otherwise. Lockout state is not touched.
enum VerifyCommand {
    static let maxTries = 3

    static func run(_ args: [String]) -> Int32 {
        var flags = Arguments.busFlags
        flags["--scan-timeout"] = "scan_timeout"
        let parsed: Arguments
        switch Arguments.parse(args, flags: flags) {
        case .success(let p): parsed = p
        case .failure(let e): warn("verify: \(e.message)"); return exitUsage
        }
        if parsed.help { say("usage: localauthctl verify [USER] [--dbus-address ADDR] [--bus-timeout S] [--scan-timeout S]"); return 0 }
        guard parsed.positional.count <= 1, let user = parsed.positional.first ?? callerLoginName() else {
            warn("verify: expected at most one USER")
            return exitUsage
        }
        let o = parsed.options
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

    private enum Try { case matched, noMatch, ended(LAError) }

    /// nil on a match, else why not.
    func verify(user: String) -> LAError? {
        do {
            try sensor.claim(user: user)
        } catch {
            return error
        }
        defer { sensor.release() }
        for attempt in 1...VerifyCommand.maxTries {
            switch scanOnce() {
            case .matched: return nil
            case .ended(let error): return error
            case .noMatch:
                let left = VerifyCommand.maxTries - attempt
                say(left > 0 ? UserMessage.notRecognized(triesLeft: left).text(language)
                             : UserMessage.triesExhausted.text(language))
            }
        }
        return LAError(.authenticationFailed, cause: "\(VerifyCommand.maxTries) failed matches")
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
                return .ended(LAError(.biometryDisconnected, cause: "the reader went away during the scan"))
            case .failed(let error):
                return .ended(error)
            case .timeout:
                say(UserMessage.noFingerDetected.text(language))
                return .ended(LAError(.systemCancel, reason: .scanTimeout, cause: "no finger within the scan timeout"))
            case .woken:
                return .ended(LAError(.userCancel, cause: "interrupted"))
            }
        }
    }

    /// Prints the outcome as the last line; returns the exit status.
    func report(_ outcome: LAError?) -> Int32 {
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
