import SystemBus
import LocalAuth

/// The reader used for one user: the one with the most prints enrolled for them.
struct DeviceChoice: Equatable {
    let user: String
    /// fprintd's object path. Valid for this fprintd only: paths are numbered at start-up.
    let path: String
    /// Enrolled finger names, sorted.
    let fingers: [String]

    /// Picks among `(path, enrolled fingers)` in the order fprintd listed the readers; ties
    /// go to the first. Throws `biometryNotAvailable` when there is no reader,
    /// `biometryNotEnrolled` when no reader holds a print of `user`.
    static func best(for user: String, among readers: [(path: String, fingers: [String])]) throws(EvaluationError) -> DeviceChoice {
        guard !readers.isEmpty else {
            throw EvaluationError(.biometryNotAvailable, cause: "fprintd has no fingerprint reader")
        }
        var best: DeviceChoice?
        for reader in readers where reader.fingers.count > (best?.fingers.count ?? 0) {
            best = DeviceChoice(user: user, path: reader.path, fingers: reader.fingers.sorted())
        }
        guard let best else {
            throw EvaluationError(.biometryNotEnrolled, cause: "no fingerprints enrolled for \(user)")
        }
        return best
    }
}
