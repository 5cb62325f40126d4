import SystemBus
import LocalAuth

/// fprintd's `VerifyStatus` result strings and what each means to the engine (docs/ARCHITECTURE.md §8).
enum VerifyStatus {
    enum Meaning: Equatable {
        /// Report this event.
        case event(SensorEvent)
        /// `verify-unknown-error`: the sensor side failed; log it.
        case unknownError
        /// A string this table does not know.
        case unrecognized
    }

    static func meaning(of result: String) -> Meaning {
        if let kind = RetryKind(rawValue: result) { return .event(.retry(kind)) }
        switch result {
        case "verify-match": return .event(.match)
        case "verify-no-match": return .event(.noMatch)
        case "verify-disconnected": return .event(.disconnected)
        case "verify-unknown-error": return .unknownError
        default: return .unrecognized
        }
    }

    /// The event for a status signal, logging what needs a log line. An unrecognized
    /// result that ends the verification fails it; one that does not is only logged, so a
    /// newer fprintd's hints cannot count as failed matches.
    static func event(for result: String, done: Bool, log: LogSink) -> SensorEvent? {
        switch meaning(of: result) {
        case .event(let event):
            return event
        case .unknownError:
            log.log(.error, "fprintd reported verify-unknown-error")
            return .failed(EvaluationError(.biometryNotAvailable, cause: "fprintd reported verify-unknown-error"))
        case .unrecognized where done:
            log.log(.error, "fprintd ended the verification with an unknown result \(result)")
            return .failed(EvaluationError(.biometryNotAvailable, cause: "unknown verify result \(result)"))
        case .unrecognized:
            log.log(.notice, "ignoring unknown verify status \(result)")
            return nil
        }
    }
}
