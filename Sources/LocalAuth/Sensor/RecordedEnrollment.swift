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

    /// The first answer, given again: a preflight asks twice (the reader's presence, then
    /// the rule), and both must come from the same reading.
    private var answered: (user: String, result: Result<EnrolledSet, EvaluationError>)?

    public func enrolledSet(for user: String) throws(EvaluationError) -> EnrolledSet {
        if let answered, answered.user == user { return try answered.result.get() }
        let result: Result<EnrolledSet, EvaluationError>
        do { result = .success(try read(user)) } catch { result = .failure(error) }
        answered = (user, result)
        return try result.get()
    }

    private func read(_ user: String) throws(EvaluationError) -> EnrolledSet {
        guard let name = try? UserName(user), let record = store.enrollmentRecord(name),
              record.isCurrent(at: BootClock.nanos(), bootID: bootID),
              StorageStamp.stillMatches(record.storage, fprintDir: fprintDir, user: user) else {
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
