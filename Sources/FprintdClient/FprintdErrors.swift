import SystemBus
import LocalAuth

/// How bus failures become EvaluationErrors. fprintd's own errors keep their D-Bus name in
/// `cause`, so the log says exactly what fprintd answered.
enum FprintdErrors {
    /// Names the bus daemon answers with when nothing owns fprintd's name and it cannot be
    /// started: the call fails at once instead of waiting.
    static let absentNames: Set<String> = ["org.freedesktop.DBus.Error.ServiceUnknown",
                                          "org.freedesktop.DBus.Error.NameHasNoOwner"]

    static func map(_ error: BusError, doing call: String, log: LogSink) -> EvaluationError {
        let la = laError(error, doing: call)
        log.log(la.code == .biometryNotEnrolled ? .info : .warning, "fprintd \(call): \(error.summary)")
        return la
    }

    /// `Claim` has its own table: "in use" there means another session holds the reader.
    static func mapClaim(_ error: BusError, log: LogSink) -> EvaluationError {
        if case .remote(let name, _) = error,
           name == Fprintd.ErrorName.alreadyInUse || name == Fprintd.ErrorName.claimDevice {
            log.log(.notice, "fprintd Claim: \(error.summary)")
            return EvaluationError(.systemCancel, reason: .readerBusy,
                           cause: "the fingerprint reader is in use by another session")
        }
        return map(error, doing: "Claim", log: log)
    }

    private static func laError(_ error: BusError, doing call: String) -> EvaluationError {
        switch error {
        case .timedOut:
            return EvaluationError(.biometryNotAvailable, reason: .readerUnreachable,
                           cause: "fprintd did not answer \(call) in time")
        case .disconnected:
            return EvaluationError(.biometryNotAvailable, reason: .readerUnreachable,
                           cause: "no connection to the system bus: \(error.summary)")
        case .remote(let name, _) where absentNames.contains(name):
            return EvaluationError(.biometryNotAvailable, reason: .readerUnreachable,
                           cause: "fprintd is not running (\(name))")
        case .remote(let name, _) where name == Fprintd.ErrorName.noEnrolledPrints:
            return EvaluationError(.biometryNotEnrolled, cause: "fprintd \(call): \(name)")
        case .remote(let name, _) where name == Fprintd.ErrorName.permissionDenied:
            return EvaluationError(.biometryNotAvailable, cause: "fprintd refused \(call): \(name)")
        case .remote(let name, _):
            return EvaluationError(.biometryNotAvailable, cause: "fprintd \(call) failed: \(name)")
        case .local, .malformed:
            return EvaluationError(.biometryNotAvailable, cause: "fprintd \(call): \(error.summary)")
        }
    }
}
