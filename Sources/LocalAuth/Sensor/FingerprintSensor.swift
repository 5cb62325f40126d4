/// The sensor side of the engine. The product's implementation talks to fprintd
/// (`FprintdClient`); tests inject a scripted one. Every call blocks and is bounded by the
/// implementation's own timeouts: nothing here may hang for longer than the bus bound,
/// except `nextEvent`, which waits until its deadline at most.
public protocol FingerprintSensor: AnyObject {
    /// Which reader would be used for `user` and what is enrolled on it. A preflight: never
    /// claims the reader and never starts a scan.
    /// Throws `biometryNotAvailable` (no reader, daemon absent), `biometryNotEnrolled`.
    func enrolledSet(for user: String) throws(EvaluationError) -> EnrolledSet

    /// Claims the reader for `user` (the reader picked by `enrolledSet`).
    /// Throws `systemCancel` with `.readerBusy` when another session holds it.
    func claim(user: String) throws(EvaluationError)

    /// Asks for the claim without waiting for the answer, so that the caller can record the
    /// coming try meanwhile: `startVerify` (or `release`) waits for it, and throws what
    /// `claim` would have. The default claims at once.
    func requestClaim(user: String) throws(EvaluationError)

    /// Waits for the answer to `requestClaim` without starting anything: throws what `claim`
    /// would have (a busy reader). The default has nothing to wait for.
    func awaitClaim() throws(EvaluationError)

    /// Starts one verification on the claimed reader. Events that arrive before this returns
    /// are dropped by the implementation.
    func startVerify() throws(EvaluationError) -> VerifyStarted

    /// Waits for the next event of the verification in progress, until `deadline`
    /// (monotonic milliseconds, see `MonotonicClock`) or until one of `wakeOn` becomes
    /// readable, whichever comes first.
    func nextEvent(deadline: Int64, wakeOn: [Int32]) -> SensorEvent

    /// The verdict (`.match` or `.noMatch`) the reader already gave for the verification in
    /// progress and `nextEvent` has not returned yet, waiting a few milliseconds for one
    /// already on its way. Asked when the wait was interrupted (Ctrl-C, Enter, the caller
    /// gone), before `stopVerify`: a verdict given before the interruption still counts, so
    /// a cancel can never take back a failed match.
    func collectVerdict() -> SensorEvent?

    /// Stops the verification in progress, if any. Never throws: failures are logged.
    func stopVerify()

    /// Releases the reader, if claimed. Never throws: failures are logged.
    func release()
}

extension FingerprintSensor {
    public func requestClaim(user: String) throws(EvaluationError) {
        try claim(user: user)
    }

    public func awaitClaim() throws(EvaluationError) {}
}

/// What is enrolled for one user on the chosen reader.
public struct EnrolledSet: Equatable, Sendable {
    /// A stable identity of the reader (driver and device id).
    public var deviceIdentity: String
    /// The reader's name, for messages.
    public var deviceName: String
    /// Enrolled finger names as fprintd reports them (`right-index-finger`), sorted.
    public var fingers: [String]
    /// Extra material that changes when a finger is re-enrolled (digests of the stored
    /// prints, when readable); empty when not available.
    public var printMaterial: [UInt8]
    /// `press` or `swipe`.
    public var scanType: ScanType

    public init(deviceIdentity: String, deviceName: String, fingers: [String],
                printMaterial: [UInt8] = [], scanType: ScanType = .press) {
        self.deviceIdentity = deviceIdentity
        self.deviceName = deviceName
        self.fingers = fingers.sorted()
        self.printMaterial = printMaterial
        self.scanType = scanType
    }

    /// The canonical bytes the domain state is computed from.
    public var canonicalBytes: [UInt8] {
        var out: [UInt8] = Array("localauth-enrolled-set-v1\n".utf8)
        out += Array("device=\(deviceIdentity)\n".utf8)
        for finger in fingers { out += Array("finger=\(finger)\n".utf8) }
        out += Array("prints=".utf8) + printMaterial
        return out
    }
}

public enum ScanType: String, Sendable {
    case press
    case swipe
}

/// Returned by `startVerify`: which finger the reader asks for, to word the prompt.
public struct VerifyStarted: Equatable, Sendable {
    /// A finger name (`right-index-finger`) or `any`.
    public var finger: String
    public var scanType: ScanType

    public init(finger: String, scanType: ScanType) {
        self.finger = finger
        self.scanType = scanType
    }
}

/// Retry-class results: reported to the user, not counted as failed matches.
public enum RetryKind: String, CaseIterable, Sendable {
    case retryScan = "verify-retry-scan"
    case swipeTooShort = "verify-swipe-too-short"
    case fingerNotCentered = "verify-finger-not-centered"
    case removeAndRetry = "verify-remove-and-retry"
    case tooFast = "verify-too-fast"
}

public enum SensorEvent: Equatable, Sendable {
    /// The finger matched an enrolled print.
    case match
    /// One failed match (the verification is over; start another to try again).
    case noMatch
    /// Not a failed match; the same verification goes on.
    case retry(RetryKind)
    /// The reader went away during the scan.
    case disconnected
    /// The sensor side failed (daemon gone or restarted, unknown error, bus timeout).
    case failed(EvaluationError)
    /// The deadline passed without a result.
    case timeout
    /// One of the `wakeOn` descriptors became readable.
    case woken(Int32)
}
