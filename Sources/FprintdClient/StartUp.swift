#if canImport(Glibc)
import Glibc
#endif
import SystemBus
import LocalAuth

/// The start-up on the bus, run ahead of the policy on a thread of its own while the main
/// thread reads the terminal, the boot id, the shadow entry and the state file. It
/// connects (on the caller's thread), asks GetDevices, then for every reader at once
/// ListEnrolledFingers, its name and scan type, and subscribes to its verify signals:
/// every call that does not need another's answer is in flight with the others. It never
/// claims the reader or starts a scan. Every wait ends by `deadline`, the one bound of the
/// burst of calls it begins (FprintdSensor.burstDeadline), or at once on `cancel()`.
///
/// Nothing here is touched by the main thread until `finish()` has joined the thread; the
/// sensor then takes the connection and the answers (FprintdSensor.adoptStartUp).
///
/// `@unchecked Sendable`, for handing it to its thread: between `init` and `finish()` the
/// thread alone reads and writes its state (the main thread only writes a byte to
/// `stopPipe[1]` in `cancel()`, a descriptor that stays open until after the join), and
/// `pthread_join` orders everything the thread wrote before what the main thread reads next.
final class StartUp: @unchecked Sendable {
    struct Reader {
        let path: String
        var fingers: [String]?
        var name: String?
        var scanType: ScanType?
        var subscriptions = 0
    }

    enum Failure {
        /// The bus could not be reached, or did not finish the handshake.
        case connect(BusError)
        /// A call to fprintd failed (the call's name, for the log).
        case call(String, BusError)
    }

    let user: String
    /// Monotonic milliseconds.
    let deadline: Int64
    /// Where the signals go once the sensor has taken the connection.
    let router: SignalRouter
    private let address: String
    /// The connection a spare helper prepared (SpareBus), when there is one.
    private let spare: SpareBus?
    /// Readers whose verify signals the spare's connection already delivers.
    private var alreadySubscribed: Set<String> = []
    /// Readers taken from the spare's list are asked again once, with GetDevices, when one
    /// of them is gone (`relist`); answers about the old list are then ignored.
    private var generation = 0
    private var relisted = false

    private(set) var bus: Bus?
    /// fprintd's unique name on `bus`, followed from the first message on.
    private(set) var owner: NameOwner?
    private(set) var readers: [Reader] = []
    private(set) var failure: Failure?
    /// When the last answer came (monotonic ms).
    private(set) var finishedAt: Int64 = 0
    private var listed = false
    /// Calls sent and not answered, oldest first (for the log when time runs out).
    private var outstanding: [String] = []
    private var thread: BackgroundThread?
    private var stopPipe: [Int32] = [-1, -1]

    /// Begins the connection and starts the thread; nil when no thread can be made (the
    /// sensor then makes the same calls one after the other when asked).
    init?(address: String, user: String, deadline: Int64, spare: SpareBus? = nil) {
        self.address = address
        self.user = user
        self.deadline = deadline
        self.spare = spare
        self.router = spare?.router ?? SignalRouter()
        guard pipe(&stopPipe) == 0 else { return nil }
        for fd in stopPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // The connection is begun here, on the caller's thread: the bus daemon reads the
        // authentication while the thread is still being scheduled.
        guard begin() else {
            finishedAt = MonotonicClock.millis()
            return  // failed already: nothing to wait for
        }
        thread = BackgroundThread { [self] in
            if let bus { pump(bus) }
            finishedAt = MonotonicClock.millis()
        }
        if thread == nil {
            bus?.close()
            closePipe()
            return nil
        }
    }

    deinit {
        thread?.join()
        closePipe()
    }

    /// Waits for the start-up to end (it ends by the deadline).
    func finish() {
        thread?.join()
        thread = nil
    }

    /// Ends the start-up now (its answers are not wanted) and waits for the thread.
    func cancel() {
        var byte: UInt8 = 1
        _ = write(stopPipe[1], &byte, 1)
        finish()
        bus?.close()
        bus = nil
        owner = nil
    }

    private func closePipe() {
        for fd in stopPipe where fd >= 0 { close(fd) }
        stopPipe = [-1, -1]
    }

    /// Connects (the authentication is written at once) and queues the first calls, which
    /// go out with the handshake. False when that already failed.
    private func begin() -> Bool {
        if let spare { return begin(on: spare) }
        let bus: Bus
        do {
            bus = try Bus(address: address, timeoutSeconds: secondsLeft, awaitingReady: false)
            owner = try FprintdSensor.followFprintd(on: bus, router: router, installed: expect("AddMatch"))
        } catch {
            failure = .connect(error)
            return false
        }
        self.bus = bus
        send("GetDevices", { b throws(BusError) in try b.getDevicesMessage() }) {
            [self] (reply: Result<Message, BusError>) throws(BusError) in
            for path in try Fprintd.devicePaths(reply.get()) { ask(about: path) }
            listed = true
        }
        return failure == nil
    }

    /// On a spare's connection (SpareBus): the readers it listed, when the fprintd that
    /// listed them still owns the name, need only ListEnrolledFingers for the user; else
    /// GetDevices is asked on that connection as on a new one.
    private func begin(on spare: SpareBus) -> Bool {
        bus = spare.bus
        owner = spare.owner
        alreadySubscribed = Set(spare.subscribedPaths)
        if let known = spare.currentReaders {
            for reader in known { ask(about: reader.path, known: reader) }
            listed = true
        } else {
            list()
        }
        return failure == nil
    }

    /// GetDevices, then everything about each reader.
    private func list() {
        let asked = generation
        send("GetDevices", { b throws(BusError) in try b.getDevicesMessage() }) {
            [self] (reply: Result<Message, BusError>) throws(BusError) in
            guard asked == generation else { return }
            for path in try Fprintd.devicePaths(reply.get()) { ask(about: path) }
            listed = true
        }
    }

    /// A reader the spare listed is gone (fprintd no longer has its path): the readers are
    /// listed again, once, on the same connection.
    private func relist() {
        relisted = true
        generation += 1
        readers = []
        listed = false
        list()
    }

    static let goneErrors: Set<String> = ["org.freedesktop.DBus.Error.UnknownObject",
                                          "org.freedesktop.DBus.Error.UnknownMethod",
                                          "org.freedesktop.DBus.Error.UnknownInterface"]

    // MARK: - On the start-up's thread

    /// Everything about one reader that does not depend on anything else; with `known`
    /// (a spare's list, same fprintd) only what depends on the user.
    private func ask(about path: String, known: Reader? = nil) {
        let index = readers.count
        let asked = generation
        readers.append(known.map { Reader(path: path, fingers: nil, name: $0.name, scanType: $0.scanType,
                                          subscriptions: $0.subscriptions) } ?? Reader(path: path))
        send("ListEnrolledFingers", { [user] b throws(BusError) in
            try b.listEnrolledFingersMessage(device: path, user: user)
        }) { [self] (reply: Result<Message, BusError>) throws(BusError) in
            guard asked == generation else { return }
            if known != nil, !relisted, case .failure(.remote(let name, _)) = reply, Self.goneErrors.contains(name) {
                relist()
                return
            }
            readers[index].fingers = try Fprintd.enrolledFingers(reply)
        }
        if known != nil { return }
        send("Get name", { b throws(BusError) in try b.stringPropertyMessage(device: path, "name") }) {
            [self] (reply: Result<Message, BusError>) throws(BusError) in
            guard asked == generation else { return }
            readers[index].name = try reply.get().readStringVariant()
        }
        send("Get scan-type", { b throws(BusError) in try b.stringPropertyMessage(device: path, "scan-type") }) {
            [self] (reply: Result<Message, BusError>) throws(BusError) in
            guard asked == generation else { return }
            readers[index].scanType = ScanType(rawValue: try reply.get().readStringVariant()) ?? .press
        }
        // A spare's connection may already deliver this reader's signals: a second match
        // would deliver each status twice.
        if alreadySubscribed.contains(path) {
            readers[index].subscriptions = 2
            return
        }
        alreadySubscribed.insert(path)
        for member in ["VerifyStatus", "VerifyFingerSelected"] {
            let rule = FprintdSensor.deviceRule(path, member)
            let deliver: (Message) -> Void = member == "VerifyStatus"
                ? { [router] in router.verifyStatus($0) } : { [router] in router.fingerSelected($0) }
            do {
                let installed = expect("AddMatch")
                try bus?.addMatchAsync(rule, deliver) { [self] error in
                    installed(error)
                    if error == nil, asked == generation { readers[index].subscriptions += 1 }
                }
            } catch {
                fail("AddMatch", error)
            }
        }
    }

    /// Sends one call; `answered` reads its reply (and may send more).
    private func send(_ name: String, _ make: (Bus) throws(BusError) -> Message,
                      answered: @escaping (Result<Message, BusError>) throws(BusError) -> Void) {
        guard let bus, failure == nil else { return }
        outstanding.append(name)
        do throws(BusError) {
            bus.bound(toSeconds: secondsLeft)
            try bus.callAsync(try make(bus)) { [self] reply in
                settle(name)
                do throws(BusError) { try answered(reply) } catch { fail(name, error) }
            }
        } catch {
            settle(name)
            fail(name, error)
        }
    }

    /// The completion of a call whose answer only says whether it worked (AddMatch).
    private func expect(_ name: String) -> (BusError?) -> Void {
        outstanding.append(name)
        return { [self] error in
            settle(name)
            if let error { fail(name, error) }
        }
    }

    private func settle(_ name: String) {
        if let i = outstanding.firstIndex(of: name) { outstanding.remove(at: i) }
    }

    private func fail(_ name: String, _ error: BusError) {
        guard failure == nil else { return }
        // sd-bus answers the calls still pending on a connection that closed with a made-up
        // NoReply, which reads as a timeout: say what happened.
        let lost = bus?.isOpen == false ? BusError.disconnected(errno: ECONNRESET) : error
        failure = bus?.isReady == false ? .connect(lost) : .call(name, lost)
    }

    private var done: Bool { failure != nil || (listed && outstanding.isEmpty) }

    /// Handles answers as they come until every call is answered, one fails, the deadline
    /// passes, or the sensor cancels.
    private func pump(_ bus: Bus) {
        while true {
            do {
                try bus.dispatch()
            } catch {
                fail(outstanding.first ?? "the start-up", error)
            }
            if done { return }
            guard MonotonicClock.millis() < deadline else {
                fail(outstanding.first ?? "the start-up", .timedOut)
                return
            }
            do {
                if try bus.wait(until: deadline, extra: [stopPipe[0]]) == stopPipe[0] { return }
            } catch {
                fail(outstanding.first ?? "the start-up", error)
            }
        }
    }

    private var secondsLeft: Double {
        Double(max(deadline - MonotonicClock.millis(), 1)) / 1000
    }
}

/// Delivers the signals of a connection the start-up opened to the sensor that took it
/// over; until then (on the start-up's thread) they are dropped: no reader is claimed yet,
/// so none of them concerns us. A log line about dropped signals said meanwhile waits for
/// the sensor (its log is not the start-up thread's to write).
final class SignalRouter {
    weak var sensor: FprintdSensor? {
        didSet {
            if let sensor, let line = heldLine {
                heldLine = nil
                sensor.log.log(.warning, line)
            }
        }
    }
    private var heldLine: String?

    func fprintdChanged(old: String, new: String) { sensor?.fprintdChanged(old: old, new: new) }
    func verifyStatus(_ m: Message) { sensor?.verifyStatus(m) }
    func fingerSelected(_ m: Message) { sensor?.fingerSelected(m) }

    func report(_ line: String) {
        if let sensor { sensor.log.log(.warning, line) } else { heldLine = line }
    }
}
