import SystemBus
import LocalAuth

/// The fingerprint sensor as fprintd offers it on the system bus.
///
/// One bus connection, opened on first use at the given address (the environment is never
/// read), or ahead of it by `prepare(user:)`, which has the connection and fprintd's
/// answers about the user's readers on their way while the caller does other work
/// (StartUp). The calls made one after another without waiting for the reader — the
/// start-up (connect, GetDevices, ListEnrolledFingers, Claim, VerifyStart), the stop
/// (VerifyStop, Release) — share one bound, `busTimeout`, from the first of them: a frozen
/// fprintd costs that once, however many calls were still to come or in flight. The time
/// the caller spends on its own work between two calls of a burst (the state file's fsync
/// while the Claim is on its way, which a busy disk can make last seconds) is not fprintd's
/// and moves the deadline by as much (`resumeBurst`). When fprintd leaves the bus, the
/// connection drops, or a call times out, the connection is dropped: fprintd releases the
/// claim of a client that vanished, and later calls on a frozen fprintd would only time out
/// again. The next use connects afresh.
public final class FprintdSensor: FingerprintSensor {
    private let address: String
    let busTimeout: Double
    private let fprintDir: String
    let log: LogSink

    var bus: Bus?
    /// fprintd's unique name on `bus`: its signals are taken from it alone.
    var fprintd: NameOwner?
    /// Where `fprintd` and the verify matches of a connection opened here deliver.
    private lazy var router: SignalRouter = {
        let router = SignalRouter()
        router.sensor = self
        return router
    }()
    var choice: DeviceChoice?
    var claimed: Claimed?
    var session: VerifySession?
    /// Set by the bus handlers when the session cannot go on; reported by the next call.
    var lost: EvaluationError?
    var scanTypes: [String: ScanType] = [:]
    /// Reader names, read once per reader and connection.
    var names: [String: String] = [:]
    /// The start-up `prepare` began, until `enrolledSet` or `claim` takes it.
    var startUp: StartUp?
    /// A Claim sent and not answered yet (`requestClaim`).
    var pendingClaim: PendingClaim?
    /// A Release sent and not answered yet (`release`).
    var pendingRelease: PendingRelease?
    /// Device paths whose signals are already subscribed on this connection.
    var subscribed: Set<String> = []
    /// When the calls of the current burst must be done (monotonic ms); nil between bursts.
    /// A burst ends when the sensor starts waiting for the reader, or when no call follows
    /// the last one within `burstGapMillis` (the caller went on to something else: a
    /// password prompt, say).
    var burstDeadline: Int64?
    /// When the sensor last stopped talking to fprintd and the caller's own work began
    /// (monotonic ms); `resumeBurst` counts the caller's time from here.
    var lastCallEnded: Int64?
    static let burstGapMillis: Int64 = 1000
    /// sd-bus's own bound on a Claim or Release sent without waiting. The wait for their
    /// answers is bounded here (`settleClaim`, `settleRelease`: the burst's deadline, which
    /// the caller's own work moves), so sd-bus's timer must not end them first; it only
    /// ends a call nobody waits for any more.
    static let sentCallBackstopSeconds = 120.0

    public init(address: String, busTimeout: Double, fprintDir: String, log: LogSink) {
        self.address = address
        self.busTimeout = busTimeout
        self.fprintDir = fprintDir
        self.log = log
    }

    deinit { close() }

    /// Starts connecting and asking fprintd about `user`'s readers now, on a thread of its
    /// own, without waiting: `enrolledSet(for: user)` takes the answers. The burst of calls,
    /// and its one bound, begins here. Without a thread the calls are made when asked.
    public func prepare(user: String) {
        guard startUp == nil, bus == nil else { return }
        let now = MonotonicClock.millis()
        let deadline = now + Int64(busTimeout * 1000)
        let spare = SpareBus.take(address: address)
        if let spare { log.log(.debug, "the bus connection prepared ahead is used (\(spare.readerCount) reader(s) listed)") }
        guard let started = StartUp(address: address, user: user, deadline: deadline, spare: spare) else { return }
        startUp = started
        burstDeadline = deadline
        lastCallEnded = now
    }

    /// Drops the connection and any start-up still running (without waiting for it).
    public func close() {
        startUp?.cancel()
        startUp = nil
        settleRelease()
        dropConnection()
    }

    // MARK: FingerprintSensor

    public func enrolledSet(for user: String) throws(EvaluationError) -> EnrolledSet {
        let choice: DeviceChoice
        if let adopted = try adoptStartUp(for: user) {
            choice = adopted
        } else {
            choice = try pickDevice(for: user)
        }
        let name = try self.name(of: choice.path)
        let scanType = try self.scanType(of: choice.path)
        let location = PrintDigest.locateDevice(fprintDir: fprintDir, user: user,
                                                fingers: choice.fingers)
        if location == nil {
            log.log(.debug, "no readable print directory for \(user); the identity is the reader's name")
        }
        let material = location.map {
            PrintDigest.material(fprintDir: fprintDir, user: user, device: $0, fingers: choice.fingers)
        } ?? []
        return EnrolledSet(deviceIdentity: location ?? "name=\(name)", deviceName: name,
                           fingers: choice.fingers, printMaterial: material, scanType: scanType)
    }

    public func claim(user: String) throws(EvaluationError) {
        try requestClaim(user: user)
        try settleClaim()
    }

    /// Sends Claim and returns: fprintd's polkit check and the opening of the reader run
    /// while the caller records the coming try. `startVerify` and `release` wait for the
    /// answer (`settleClaim`), within the same burst deadline.
    public func requestClaim(user: String) throws(EvaluationError) {
        if let claimed, claimed.user == user, lost == nil { return }
        if let pendingClaim, pendingClaim.user == user { return }
        release()
        settleRelease()  // fprintd refuses a Claim while it is still closing the reader
        let choice: DeviceChoice
        if let adopted = try adoptStartUp(for: user) {
            choice = adopted
        } else if let reusable = reusableChoice(for: user) {
            choice = reusable
        } else {
            choice = try pickDevice(for: user)
        }
        try subscribe(to: choice.path)
        lost = nil  // what was lost went with the old claim; this one is judged on its own
        let pending = PendingClaim(user: user, path: choice.path)
        try run("Claim", mapping: FprintdErrors.mapClaim) { bus throws(BusError) in
            try bus.callAsync(bus.fprintdMessage(choice.path, Fprintd.deviceInterface, "Claim", [user]),
                              timeoutSeconds: Self.sentCallBackstopSeconds) {
                pending.reply = $0
            }
        }
        pendingClaim = pending
    }

    public func awaitClaim() throws(EvaluationError) {
        try settleClaim()
    }

    /// Waits for the answer to the Claim `requestClaim` sent: the reader is then claimed,
    /// or the error is what a waiting `claim` would have thrown.
    func settleClaim() throws(EvaluationError) {
        guard let pending = pendingClaim else { return }
        pendingClaim = nil
        resumeBurst()
        defer { lastCallEnded = MonotonicClock.millis() }
        let deadline = burstBound
        if case .lost(let error) = pump(until: deadline, wakeOn: [], ready: { pending.reply != nil }) {
            throw error
        }
        switch pending.reply {
        case .success(let reply)?:
            claimed = Claimed(user: pending.user, path: pending.path, owner: reply.sender ?? "")
            lost = nil
        case .failure(let error)?:
            switch error {
            case .timedOut, .disconnected: dropConnection()
            default: break
            }
            throw FprintdErrors.mapClaim(error, log: log)
        case nil:
            dropConnection()
            throw FprintdErrors.map(.timedOut, doing: "Claim", log: log)
        }
    }

    public func startVerify() throws(EvaluationError) -> VerifyStarted {
        try settleClaim()
        if let lost { throw lost }
        guard let claimed else {
            throw EvaluationError(.biometryNotAvailable, cause: "VerifyStart without a claimed reader")
        }
        let scanType = try self.scanType(of: claimed.path)
        session = VerifySession()
        let reply: Message
        do {
            reply = try run("VerifyStart") { bus throws(BusError) in
                try bus.deviceCall(claimed.path, "VerifyStart", ["any"])
            }
        } catch {
            session = nil
            throw error
        }
        session?.acceptAfter = reply.cookie
        awaitFingerSelection()
        return VerifyStarted(finger: session?.finger ?? "any", scanType: scanType)
    }

    public func nextEvent(deadline: Int64, wakeOn: [Int32]) -> SensorEvent {
        burstDeadline = nil  // waiting for the reader: the calls after it get a bound of their own
        guard session != nil else {
            return .failed(EvaluationError(.biometryNotAvailable, cause: "no verification in progress"))
        }
        switch pump(until: deadline, wakeOn: wakeOn, ready: { session?.events.isEmpty == false }) {
        case .ready: return session?.nextEvent() ?? .timeout
        case .deadline: return .timeout
        case .woken(let fd): return .woken(fd)
        case .lost(let error):
            // A verdict dispatched in the same round as the loss still counts: a no-match
            // turned into a failure would give its try back.
            if session?.events.isEmpty == false, let queued = session?.nextEvent() { return queued }
            return .failed(error)
        }
    }

    /// Only what arrives *before* VerifyStop counts: fprintd answers a VerifyStop in the
    /// middle of a verification with a `verify-no-match` of its own, which is no verdict.
    /// Whatever was already received is dispatched, and a status still on its way (the
    /// broadcast that told someone watching the bus, who then killed their sudo) gets
    /// `lateVerdictMillis` to arrive.
    public func collectVerdict() -> SensorEvent? {
        guard session != nil else { return nil }
        let deadline = MonotonicClock.millis() + FprintdSensor.lateVerdictMillis
        _ = pump(until: deadline, wakeOn: []) { session?.verdict != nil }
        return session?.verdict
    }

    /// How long an interruption waits for a verdict already sent (a broadcast reaches every
    /// subscriber in the same pass of the bus daemon: this covers a busy machine).
    static let lateVerdictMillis: Int64 = 20

    public func stopVerify() {
        guard session != nil else { return }
        session = nil
        guard let claimed = liveClaim() else { return }
        do {
            _ = try run("VerifyStop") { bus throws(BusError) in
                do throws(BusError) {
                    try bus.deviceCall(claimed.path, "VerifyStop")
                } catch .remote(let name, _) where name == Fprintd.ErrorName.noActionInProgress {
                    // Already over on fprintd's side: nothing to stop.
                }
            }
        } catch {
            log.log(.notice, "VerifyStop: \(error)")
        }
    }

    /// Sends Release and returns: fprintd closes the reader while the caller records the
    /// result. `close()` (and a later claim) waits for the answer, so the reader is free
    /// before the helper is gone and the next authentication claims it.
    public func release() {
        session = nil
        // A claim still on its way is waited for, so that it is released like any other.
        do { try settleClaim() } catch { log.log(.debug, "the claim being released had failed: \(error)") }
        guard let claimed = liveClaim() else { return }
        self.claimed = nil
        let pending = PendingRelease()
        do {
            try run("Release") { bus throws(BusError) in
                try bus.callAsync(bus.fprintdMessage(claimed.path, Fprintd.deviceInterface, "Release"),
                                  timeoutSeconds: Self.sentCallBackstopSeconds) {
                    [log] reply in
                    if case .failure(let error) = reply { log.log(.notice, "Release: \(error.summary)") }
                    pending.answered = true
                }
            }
            pending.deadline = burstBound  // the burst `run` began or renewed
            pendingRelease = pending
        } catch {
            log.log(.notice, "Release: \(error)")
        }
    }

    /// Waits for the answer to the Release `release()` sent, until the deadline of its
    /// burst at most.
    func settleRelease() {
        guard let pending = pendingRelease else { return }
        pendingRelease = nil
        guard lost == nil, bus?.isOpen == true else { return }  // the claim went with fprintd
        // The caller's own work since the Release was sent (recording the result) is not
        // fprintd's time either.
        let now = MonotonicClock.millis()
        let away = max(0, now - (lastCallEnded ?? now))
        _ = pump(until: pending.deadline + away, wakeOn: []) { pending.answered }
        lastCallEnded = MonotonicClock.millis()
    }
}

/// A Release sent without waiting (FprintdSensor.release).
final class PendingRelease {
    var deadline: Int64 = 0
    var answered = false
}

// MARK: - Connection and calls

extension FprintdSensor {
    /// The end of the current burst of calls, or of one that would start now.
    var burstBound: Int64 { burstDeadline ?? MonotonicClock.millis() + Int64(busTimeout * 1000) }

    /// Brings the current burst up to now, before the sensor talks to fprintd again. The
    /// time since the last call ended was the caller's (an fsync behind a busy disk, a log
    /// line), not fprintd's: the deadline moves by as much, so the bound stays a bound on
    /// waiting for fprintd. After more than `burstGapMillis` the burst is over.
    func resumeBurst() {
        let now = MonotonicClock.millis()
        guard let last = lastCallEnded else { return }
        let away = now - last
        if away > FprintdSensor.burstGapMillis {
            burstDeadline = nil
        } else if away > 0, let deadline = burstDeadline {
            burstDeadline = deadline + away
        }
        lastCallEnded = now  // counted once
    }

    /// The seconds left to the current burst of calls, starting one if none is running.
    func burstSecondsLeft() throws(EvaluationError) -> Double {
        resumeBurst()
        let now = MonotonicClock.millis()
        let deadline = burstDeadline ?? now + Int64(busTimeout * 1000)
        burstDeadline = deadline
        guard deadline > now else {
            throw EvaluationError(.biometryNotAvailable,
                          cause: "fprintd did not answer within the bus timeout (\(busTimeout) s)")
        }
        return Double(deadline - now) / 1000
    }

    /// The open connection, connecting first if needed (and watching fprintd's name).
    private func connection() throws(EvaluationError) -> Bus {
        let seconds = try burstSecondsLeft()
        if let bus, bus.isOpen {
            bus.bound(toSeconds: seconds)
            return bus
        }
        dropConnection()
        do {
            let bus = try Bus(address: address, timeoutSeconds: seconds)
            fprintd = try Self.followFprintd(on: bus, router: router)
            self.bus = bus
            return bus
        } catch {
            log.log(.warning, "cannot connect to the bus at \(address): \(error.summary)")
            throw EvaluationError(.biometryNotAvailable, cause: "cannot connect to the system bus: \(error.summary)")
        }
    }

    /// Runs one exchange with fprintd. A timeout or a lost connection drops the connection
    /// so that nothing else waits on it; other errors leave it usable.
    func run<T>(_ call: String, mapping: ((BusError, LogSink) -> EvaluationError)? = nil,
                _ body: (Bus) throws(BusError) -> T) throws(EvaluationError) -> T {
        defer { lastCallEnded = MonotonicClock.millis() }
        let bus = try connection()
        do {
            return try body(bus)
        } catch {
            switch error {
            case .timedOut, .disconnected: dropConnection()
            default: break
            }
            throw mapping?(error, log) ?? FprintdErrors.map(error, doing: call, log: log)
        }
    }

    /// Forgets the connection and everything tied to it.
    func dropConnection() {
        bus?.close()
        bus = nil
        fprintd = nil
        subscribed = []
        claimed = nil
        choice = nil  // object paths belong to the fprintd we were talking to
        scanTypes = [:]
        names = [:]
        pendingClaim = nil  // its answer could only come on the connection just dropped
        pendingRelease = nil
    }

    /// Takes the connection and the answers of the start-up `prepare` began, waiting for it
    /// if it still runs (it ends by the burst deadline). nil when none was begun for `user`.
    private func adoptStartUp(for user: String) throws(EvaluationError) -> DeviceChoice? {
        guard let started = startUp else { return nil }
        startUp = nil
        started.finish()
        lastCallEnded = started.finishedAt
        guard started.user == user else {
            started.cancel()
            return nil
        }
        if let failure = started.failure {
            started.cancel()
            throw laError(failure)
        }
        dropConnection()
        bus = started.bus
        fprintd = started.owner
        started.router.sensor = self
        for reader in started.readers {
            names[reader.path] = reader.name
            scanTypes[reader.path] = reader.scanType
            if reader.subscriptions == 2 { subscribed.insert(reader.path) }
        }
        let choice = try DeviceChoice.best(for: user, among: started.readers.map { ($0.path, $0.fingers ?? []) })
        self.choice = choice
        return choice
    }

    /// A failed start-up, logged and mapped as the same calls made one by one would be.
    private func laError(_ failure: StartUp.Failure) -> EvaluationError {
        switch failure {
        case .connect(let error):
            log.log(.warning, "cannot connect to the bus at \(address): \(error.summary)")
            return EvaluationError(.biometryNotAvailable, cause: "cannot connect to the system bus: \(error.summary)")
        case .call(let call, let error):
            return FprintdErrors.map(error, doing: call, log: log)
        }
    }

    /// The claim, if it is still held on the open connection. When fprintd left or the
    /// connection is gone, the claim went with them: nothing to stop or release, and a new
    /// connection must not be opened just to be told so.
    private func liveClaim() -> Claimed? {
        guard let claimed else { return nil }
        guard lost == nil, bus?.isOpen == true else {
            dropConnection()
            return nil
        }
        return claimed
    }

    /// The reader `enrolledSet` picked for `user` on this connection, if any.
    private func reusableChoice(for user: String) -> DeviceChoice? {
        guard let choice, choice.user == user, bus?.isOpen == true else { return nil }
        return choice
    }

    private func pickDevice(for user: String) throws(EvaluationError) -> DeviceChoice {
        let paths = try run("GetDevices") { bus throws(BusError) in try bus.getDevices().paths }
        var readers: [(path: String, fingers: [String])] = []
        for path in paths {
            let fingers = try run("ListEnrolledFingers") { bus throws(BusError) in
                try bus.listEnrolledFingers(device: path, user: user)
            }
            readers.append((path, fingers))
        }
        let choice = try DeviceChoice.best(for: user, among: readers)
        self.choice = choice
        return choice
    }

    /// The reader's name, read once per reader and connection.
    private func name(of path: String) throws(EvaluationError) -> String {
        if let known = names[path] { return known }
        let name = try run("Get name") { bus throws(BusError) in
            try bus.stringProperty(device: path, "name")
        }
        names[path] = name
        return name
    }

    /// `scan-type`, read once per reader and connection.
    private func scanType(of path: String) throws(EvaluationError) -> ScanType {
        if let known = scanTypes[path] { return known }
        let text = try run("Get scan-type") { bus throws(BusError) in
            try bus.stringProperty(device: path, "scan-type")
        }
        let type = ScanType(rawValue: text) ?? .press
        scanTypes[path] = type
        return type
    }
}
