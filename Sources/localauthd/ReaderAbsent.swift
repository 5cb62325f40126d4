#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol
import SystemBus

/// One answer the service gives without a helper: a sign-in request (`mode=authenticate`)
/// while fprintd is neither on the bus nor startable there. Whatever a helper would judge
/// (presence, lockout, the switch), no scan can happen, and its answer would be one of the
/// codes the module maps to the password at once; starting a root process for that costs
/// the caller milliseconds before its password prompt. The answer is the helper's for an
/// absent fprintd (`biometryNotAvailable`, `reader-unreachable`, which tells the
/// module's later lines not to wait for the reader either).
///
/// Asked of the bus daemon for each request, never cached: an fprintd installed or started
/// a moment ago is seen by the next request. Anything not known for sure (the bus slow or
/// gone, the request not all there yet, another mode) starts a helper as usual.
final class ReaderAbsent {
    private let address: String
    private var bus: Bus?
    /// After a question the bus did not answer in time, none is asked until then (monotonic
    /// ms): a stuck bus daemon costs one request the bound, not every request.
    private var quietUntil: Int64 = 0
    /// A bus daemon answers these in microseconds; a slow one is not waited for long.
    static let boundSeconds = 0.25
    static let quietMillis: Int64 = 10_000
    static let fprintd = "net.reactivated.Fprint"

    /// Connects at once, so that the first request does not pay for it.
    init(address: String) {
        self.address = address
        bus = try? Bus(address: address, timeoutSeconds: Self.boundSeconds)
    }

    /// Answers `connection` itself when its request is a sign-in and fprintd is absent;
    /// the cause for the log line when it did, nil when a helper should take it.
    func answer(_ connection: Int32, request: RequestPeek) -> String? {
        guard case .authenticate = request.request, fprintdAbsent() else { return nil }
        let cause = "fprintd is not on the bus and cannot be started there (answered by localauthd)"
        request.refuse(connection, .biometryNotAvailable, reason: .readerUnreachable, cause: cause)
        return cause
    }

    /// True only when the bus daemon said both: nobody owns fprintd's name, and no service
    /// file can start it.
    func fprintdAbsent() -> Bool {
        guard MonotonicClock.millis() >= quietUntil else { return false }
        do {
            let bus = try connected()
            let owner = try bus.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                           interface: "org.freedesktop.DBus", member: "NameHasOwner")
            try owner.append(Self.fprintd)
            if try bus.call(owner).readBool() { return false }
            let activatable = try bus.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                 interface: "org.freedesktop.DBus", member: "ListActivatableNames")
            let absent = try !bus.call(activatable).readArray(of: typeString).contains(Self.fprintd)
            try bus.dispatch()   // what else came (NameAcquired) is dropped, not kept
            return absent
        } catch {
            bus?.close()
            bus = nil    // connected again after the quiet time
            quietUntil = MonotonicClock.millis() + Self.quietMillis
            return false
        }
    }

    private func connected() throws(BusError) -> Bus {
        if let bus, bus.isOpen { return bus }
        let fresh = try Bus(address: address, timeoutSeconds: Self.boundSeconds)
        bus = fresh
        return fresh
    }
}
