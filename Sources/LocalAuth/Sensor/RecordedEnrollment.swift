/// The enrolled set as a helper last read it (EnrollmentRecord), for localauthd's own
/// answer to an application's preflight: the one question a preflight asks the sensor,
/// answered from root's state directory without fprintd. A record that is missing or no
/// longer current sets `missed`, and the preflight is left to a helper, which asks fprintd.
/// It has no reader: claiming or scanning through it is refused (a preflight never does).
public final class RecordedEnrollment: FingerprintSensor {
    private let store: FileStateStore
    private let fprintDir: String
    private let bootID: String
    /// True once a question could not be answered from the record.
    public private(set) var missed = false

    public init(store: FileStateStore, fprintDir: String, bootID: String) {
        self.store = store
        self.fprintDir = fprintDir
        self.bootID = bootID
    }

    public func enrolledSet(for user: String) throws(EvaluationError) -> EnrolledSet {
        guard let name = try? UserName(user), let record = store.enrollmentRecord(name),
              record.isCurrent(storage: StorageStamp.of(fprintDir: fprintDir, user: user),
                               at: BootClock.nanos(), bootID: bootID) else {
            missed = true
            throw EvaluationError(.biometryNotAvailable, cause: "no current record of the enrolled set")
        }
        guard let set = record.set else {
            throw EvaluationError(.biometryNotEnrolled, cause: "no fingerprints enrolled for \(user)")
        }
        return set
    }

    public func claim(user: String) throws(EvaluationError) { throw Self.noReader }
    public func startVerify() throws(EvaluationError) -> VerifyStarted { throw Self.noReader }
    public func nextEvent(deadline: Int64, wakeOn: [Int32]) -> SensorEvent { .failed(Self.noReader) }
    public func collectVerdict() -> SensorEvent? { nil }
    public func stopVerify() {}
    public func release() {}

    private static let noReader = EvaluationError(.biometryNotAvailable, cause: "a record of the enrolled set has no reader")
}
