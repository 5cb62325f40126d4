#if canImport(Glibc)
import Glibc
#endif
import SystemBus
import LocalAuth

/// What a helper started ahead of its request (localauthd's spare) prepares on the bus while
/// it waits: the connection (authenticated as root, Hello answered), fprintd's owner
/// followed, and — when fprintd is running — its readers' object paths, names and scan
/// types, with their verify signals subscribed. Nothing in it belongs to a user: the
/// enrolled fingers, the claim and the scan are asked for the request's user afterwards
/// (FprintdSensor.prepare, StartUp), so the start-up that remains is ListEnrolledFingers,
/// then Claim and VerifyStart.
///
/// Used at most once, by the first sensor of the request for the same bus address
/// (`take`). Anything stale falls back to the calls a helper started for the request makes:
/// a connection that was lost is not offered; readers listed by an fprintd that has since
/// left the bus (or restarted: a new unique name) are asked for again with GetDevices on the
/// same connection; a reader path that is no longer there (UnknownObject) has StartUp list
/// the readers again. A spare that cannot reach the bus prepares nothing and serves its
/// request as before.
public final class SpareBus {
    let address: String
    let bus: Bus
    let owner: NameOwner
    let router: SignalRouter
    /// The readers fprintd listed, their names, scan types and subscriptions in place.
    private(set) var readers: [StartUp.Reader] = []
    /// fprintd's unique name when it listed `readers` (nil: none were listed).
    private(set) var listedBy: String?

    nonisolated(unsafe) private static var kept: SpareBus?

    private init(address: String, bus: Bus, owner: NameOwner, router: SignalRouter) {
        self.address = address
        self.bus = bus
        self.owner = owner
        self.router = router
    }

    /// Connects to `address` and asks what can be asked ahead, every call bounded by
    /// `timeoutSeconds`; nil (the reason in `problem`) when the bus cannot be reached. An
    /// fprintd that is not running is not started for this: only the connection is kept.
    public static func prepare(address: String, timeoutSeconds: Double,
                               problem: inout String?) -> SpareBus? {
        do throws(BusError) {
            let bus = try Bus(address: address, timeoutSeconds: timeoutSeconds)
            let router = SignalRouter()
            let owner = try FprintdSensor.followFprintd(on: bus, router: router)
            let spare = SpareBus(address: address, bus: bus, owner: owner, router: router)
            try spare.listReaders()
            return spare
        } catch {
            problem = error.summary
            return nil
        }
    }

    /// GetDevices and each reader's name, scan type and verify subscriptions, when fprintd
    /// owns its name now (asked with NameHasOwner: no activation just for a spare).
    private func listReaders() throws(BusError) {
        let ask = try bus.methodCall(destination: NameOwner.busDriver, path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", member: "NameHasOwner")
        try ask.append(Fprintd.service)
        guard try bus.call(ask).readBool() else { return }
        let paths = try bus.getDevices().paths
        var listed: [StartUp.Reader] = []
        for path in paths {
            var reader = StartUp.Reader(path: path)
            reader.name = try bus.stringProperty(device: path, "name")
            reader.scanType = ScanType(rawValue: try bus.stringProperty(device: path, "scan-type")) ?? .press
            let router = self.router
            try bus.addMatch(FprintdSensor.deviceRule(path, "VerifyStatus")) { [router] in router.verifyStatus($0) }
            try bus.addMatch(FprintdSensor.deviceRule(path, "VerifyFingerSelected")) { [router] in
                router.fingerSelected($0)
            }
            reader.subscriptions = 2
            listed.append(reader)
        }
        try bus.dispatch()  // GetNameOwner's answer, sent before NameHasOwner, is in
        readers = listed
        listedBy = owner.current
    }

    /// The readers whose verify signals this connection already receives.
    var subscribedPaths: [String] { readers.map(\.path) }

    /// How many readers were listed ahead (for the log).
    public var readerCount: Int { readers.count }

    /// Waits until `fd` is readable or hung up, keeping the connection serviced meanwhile
    /// (signals read and dropped, fprintd's owner followed). A connection that is lost is
    /// closed and the wait goes on without it; `isUsable` then says so.
    public func wait(for fd: Int32) {
        while true {
            if bus.isOpen {
                do {
                    try bus.dispatch()
                    if try bus.wait(until: MonotonicClock.millis() + 3_600_000, extra: [fd]) == fd { return }
                    continue
                } catch {
                    bus.close()
                }
            }
            var one = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&one, 1, -1) > 0 { return }
        }
    }

    public var isUsable: Bool { bus.isOpen }

    /// Keeps this preparation for the request's sensor (`take`).
    public func keep() { Self.kept = self }

    /// The preparation for `address`, once; nil when there is none, it is for another
    /// address (the configuration changed), or its connection was lost.
    static func take(address: String) -> SpareBus? {
        guard let kept, kept.address == address else { return nil }
        Self.kept = nil
        guard kept.bus.isOpen else {
            kept.bus.close()
            return nil
        }
        do { try kept.bus.dispatch() } catch {
            kept.bus.close()
            return nil
        }
        return kept
    }

    /// The readers to use without GetDevices: only those listed by the fprintd that owns
    /// the name now (a restarted one may number them otherwise).
    var currentReaders: [StartUp.Reader]? {
        guard let listedBy, owner.current == listedBy else { return nil }
        return readers
    }
}
