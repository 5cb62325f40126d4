import FprintdClient
import LocalAuth

/// The domain state of a user's enrolled fingerprints now, from fprintd's list as
/// DomainState computes it (nil: the list is empty): the one read behind every current-set
/// rule (rights, SSH key management, the agent's signing). Each caller decides what a
/// sensor's error means for it.
enum EnrolledDomain {
    static func now(of user: String, options: Options, log: LogSink) throws(EvaluationError) -> String? {
        let sensor = FprintdSensor(address: options.dbusAddress, busTimeout: options.busTimeout,
                                   fprintDir: options.fprintDir, log: log)
        let set = try sensor.enrolledSet(for: user)
        return try DomainState.compute(set, store: FileStateStore(directory: options.stateDir))
    }
}
