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
/// then Claim and VerifyStart. (A spare is root's; so is every helper's connection.)
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
    /// The readers fprintd listed, their names, scan types and subscriptions in place (a
    /// failed AddMatch fails the whole preparation, so every one listed is subscribed).
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

    /// Prepares on the bus at `address` while waiting for `fd` (localauthd's message to a
    /// spare), and returns once `fd` is readable or hung up; a preparation that was
    /// complete by then and whose connection is still open is kept for the request's
    /// sensor (`take`). Every call is sent without waiting and `fd` is watched all along: a
    /// request that comes first, a bus daemon or fprintd that does not answer within
    /// `timeoutSeconds`, or any failure drops the preparation and never delays the
    /// request. An fprintd that is not running is not started for this (NameHasOwner): the
    /// connection alone is kept. `report` gets a few words on the outcome as soon as it is
    /// known (before the wait for `fd`, when the preparation ended first), for the log.
    public static func prepare(address: String, timeoutSeconds: Double, waitingFor fd: Int32,
                               report: (String) -> Void) {
        let deadline = MonotonicClock.millis() + Int64(timeoutSeconds * 1000)
        let asking = Asking()
        let router = SignalRouter()
        let spare: SpareBus
        do throws(BusError) {
            let bus = try Bus(address: address, timeoutSeconds: timeoutSeconds, awaitingReady: false)
            let owner = try FprintdSensor.followFprintd(on: bus, router: router, installed: asking.expect())
            spare = SpareBus(address: address, bus: bus, owner: owner, router: router)
            try spare.askAhead(asking)
        } catch {
            report("no bus connection prepared (\(error.summary))")
            waitAlone(fd)
            return
        }
        let outcome: String? = {
            while true {
                do throws(BusError) { try spare.bus.dispatch() } catch { asking.fail(error) }
                if let failure = asking.failure { return "nothing prepared (\(failure.summary))" }
                if asking.done { return nil }
                guard MonotonicClock.millis() < deadline else { return "nothing prepared (no answer in time)" }
                do throws(BusError) {
                    if try spare.bus.wait(until: deadline, extra: [fd]) == fd {
                        return "nothing prepared (the request came first)"
                    }
                } catch {
                    asking.fail(error)
                }
            }
        }()
        if let outcome {
            spare.bus.close()
            report(outcome)
            waitAlone(fd)
            return
        }
        spare.listedBy = spare.owner.current
        report("a bus connection prepared, \(spare.readers.count) reader(s) listed")
        spare.wait(for: fd)
        guard spare.bus.isOpen else {
            report("the bus connection prepared was lost while it waited; the request connects itself")
            return
        }
        Self.kept = spare
    }

    private static func waitAlone(_ fd: Int32) {
        var one = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&one, 1, -1) < 0 && errno == EINTR {}
    }

    /// Calls answered, and the first failure.
    private final class Asking {
        var outstanding = 0
        var listed = false
        var failure: BusError?
        var done: Bool { failure == nil && listed && outstanding == 0 }

        func expect() -> (BusError?) -> Void {
            outstanding += 1
            return { [self] error in
                outstanding -= 1
                if let error { fail(error) }
            }
        }

        func fail(_ error: BusError) { if failure == nil { failure = error } }
    }

    /// NameHasOwner, then (when fprintd runs) GetDevices, then each reader's name, scan type
    /// and verify subscriptions: all sent without waiting, answered through `dispatch()`.
    private func askAhead(_ asking: Asking) throws(BusError) {
        let ask = try bus.methodCall(destination: NameOwner.busDriver, path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", member: "NameHasOwner")
        try ask.append(Fprintd.service)
        let hasOwner = asking.expect()
        try bus.callAsync(ask) { [self] reply in
            defer { hasOwner(nil) }
            do throws(BusError) {
                guard try reply.get().readBool() else {
                    asking.listed = true   // nothing to list: fprintd is not running
                    return
                }
                let listedAll = asking.expect()
                try bus.callAsync(try bus.getDevicesMessage()) { [self] reply in
                    do throws(BusError) {
                        for path in try Fprintd.devicePaths(reply.get()) { try askAbout(path, asking) }
                        asking.listed = true
                        listedAll(nil)
                    } catch {
                        listedAll(error)
                    }
                }
            } catch {
                asking.fail(error)
            }
        }
    }

    private func askAbout(_ path: String, _ asking: Asking) throws(BusError) {
        let index = readers.count
        readers.append(StartUp.Reader(path: path))
        let named = asking.expect()
        try bus.callAsync(try bus.stringPropertyMessage(device: path, "name")) { [self] reply in
            do throws(BusError) {
                readers[index].name = try reply.get().readStringVariant()
                named(nil)
            } catch {
                named(error)
            }
        }
        let typed = asking.expect()
        try bus.callAsync(try bus.stringPropertyMessage(device: path, "scan-type")) { [self] reply in
            do throws(BusError) {
                readers[index].scanType = ScanType(rawValue: try reply.get().readStringVariant()) ?? .press
                typed(nil)
            } catch {
                typed(error)
            }
        }
        for member in ["VerifyStatus", "VerifyFingerSelected"] {
            let deliver: (Message) -> Void = member == "VerifyStatus"
                ? { [router] in router.verifyStatus($0) } : { [router] in router.fingerSelected($0) }
            let installed = asking.expect()
            try bus.addMatchAsync(FprintdSensor.deviceRule(path, member), deliver) { [self] error in
                if error == nil { readers[index].subscriptions += 1 }
                installed(error)
            }
        }
    }

    /// The readers whose verify signals this connection already receives.
    var subscribedPaths: [String] { readers.map(\.path) }

    /// How many readers were listed ahead (for the log).
    public var readerCount: Int { readers.count }

    /// Waits until `fd` is readable or hung up, keeping the connection serviced meanwhile
    /// (signals read and dropped, fprintd's owner followed). A connection that is lost is
    /// closed and the wait goes on without it (nothing is then kept).
    private func wait(for fd: Int32) {
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
