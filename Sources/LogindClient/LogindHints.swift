#if canImport(Glibc)
import Glibc
#endif
import CSystemd
import LocalAuth
import SystemBus

/// What logind holds only on its bus API (org.freedesktop.login1), not in sd-login's records:
/// whether a session is locked (`LockedHint`, set by the screen locker) or idle (`IdleHint`),
/// and whether the lid is closed (`LidClosed`). All three are asked together, one round trip
/// bounded by `timeoutSeconds`; an answer that does not come is nil (the rule takes it as a
/// no). The session's `PropertiesChanged` is subscribed to before asking, so that the same
/// connection can then watch the session while the reader waits (`SessionWatch`).
package final class LogindHints {
    package static let service = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"
    static let sessionInterface = "org.freedesktop.login1.Session"

    package private(set) var locked: Bool?
    package private(set) var idle: Bool?
    /// The session is still the seat's active one: only ever set to false, by a change signal.
    package private(set) var stillActive = true
    package private(set) var lidClosed: Bool?
    /// Why an answer is missing (the first failure), for the log.
    package private(set) var failure: String?

    private let bus: Bus?
    private let sessionPath: String?
    /// logind's unique name: a change signal is taken from it alone (NameOwner).
    private var logind: NameOwner?
    private let log: LogSink?

    /// Asks logind at `address` about `session` (nil: the lid only). `log` gets the lines
    /// about change signals dropped because logind did not send them.
    package init(address: String, timeoutSeconds: Double, session: String?, log: LogSink? = nil) {
        sessionPath = session.flatMap(Self.objectPath)
        self.log = log
        let deadline = MonotonicMicros.now() / 1000 + Int64(timeoutSeconds * 1000)
        var connected: Bus?
        do {
            connected = try Bus(address: address, timeoutSeconds: timeoutSeconds, awaitingReady: false)
        } catch {
            failure = "logind's bus: \(error.summary)"
        }
        bus = connected
        guard let connected else { return }
        do {
            try ask(connected, deadline: deadline)
        } catch {
            if failure == nil { failure = "logind's bus: \(error.summary)" }
        }
    }

    deinit { bus?.close() }

    private func ask(_ bus: Bus, deadline: Int64) throws(BusError) {
        var pending = 0
        if let path = sessionPath {
            // Sent first, without waiting: the answer comes ahead of any change signal.
            let logind = try NameOwner(Self.service, on: bus, report: { [weak self] in self?.log?.log(.warning, $0) },
                                       installed: { [weak self] in if let e = $0 { self?.missing("watch", e) } })
            self.logind = logind
            try bus.addMatchAsync(Self.changesRule(path), logind.guarded { [weak self] in self?.changed($0) },
                                  installed: { [weak self] in if let e = $0 { self?.missing("watch", e) } })
            for name in ["LockedHint", "IdleHint"] {
                pending += 1
                try get(bus, path, Self.sessionInterface, name) { [weak self] value in
                    pending -= 1
                    if name == "LockedHint" { self?.locked = value } else { self?.idle = value }
                }
            }
        }
        pending += 1
        try get(bus, Self.managerPath, Self.managerInterface, "LidClosed") { [weak self] in
            pending -= 1
            self?.lidClosed = $0
        }
        while pending > 0 {
            try bus.dispatch()
            if pending == 0 { break }
            _ = try bus.wait(until: deadline + 50, extra: [])  // sd-bus's own timer ends each call
        }
        try bus.dispatch()  // a change that came with the answers is applied now
    }

    /// Properties.Get of one boolean; `done` gets nil when no answer came.
    private func get(_ bus: Bus, _ path: String, _ interface: String, _ name: String,
                     _ done: @escaping (Bool?) -> Void) throws(BusError) {
        let call = try bus.methodCall(destination: Self.service, path: path,
                                      interface: "org.freedesktop.DBus.Properties", member: "Get")
        try call.append(interface).append(name)
        try bus.callAsync(call) { [weak self] result in
            switch result {
            case .success(let reply):
                do throws(BusError) { done(try reply.readBoolVariant()) } catch {
                    self?.missing(name, error)
                    done(nil)
                }
            case .failure(let error):
                self?.missing(name, error)
                done(nil)
            }
        }
    }

    private func missing(_ what: String, _ error: BusError) {
        if failure == nil { failure = "logind's \(what): \(error.summary)" }
    }

    /// A `PropertiesChanged` of the session: the newest value wins (signals and replies come
    /// from logind in the order it sent them).
    private func changed(_ message: Message) {
        guard let change = try? message.readPropertiesChanged(),
              change.interface == Self.sessionInterface else { return }
        if let v = change.booleans["LockedHint"] { locked = v }
        if let v = change.booleans["IdleHint"] { idle = v }
        if change.booleans["Active"] == false { stillActive = false }
        // Invalidated without a value: unknown from now on, which ends a wait like a yes.
        if change.invalidated.contains("LockedHint") { locked = nil }
        if change.invalidated.contains("IdleHint") { idle = nil }
    }

    /// logind's object path of a session: its id escaped as sd-bus escapes path labels.
    static func objectPath(_ session: String) -> String? {
        var path: UnsafeMutablePointer<CChar>?
        guard sd_bus_path_encode("/org/freedesktop/login1/session", session, &path) >= 0, let path else { return nil }
        defer { free(path) }
        return String(cString: path)
    }

    static func changesRule(_ path: String) -> String {
        "type='signal',sender='\(service)',path='\(path)',interface='org.freedesktop.DBus.Properties',"
            + "member='PropertiesChanged',arg0='\(sessionInterface)'"
    }

    /// While the reader waits: the session locked, idle or no longer in front ends the wait
    /// (`systemCancel`, the try given back, the password next). `lockAndIdle` false for root's
    /// lock screen and greeter, which are shown on a locked or idle session by design.
    package func watch(lockAndIdle: Bool) -> WakeSource? {
        guard let bus, bus.isOpen, let fd = bus.fileDescriptor, sessionPath != nil else { return nil }
        return SessionWatch(hints: self, bus: bus, fd: fd, lockAndIdle: lockAndIdle)
    }

    /// Why the wait must end now, or nil.
    func interruption(lockAndIdle: Bool) -> EvaluationError? {
        if !stillActive {
            return EvaluationError(.systemCancel, reason: .notActive, cause: "the session is no longer the seat's active one")
        }
        guard lockAndIdle else { return nil }
        if locked != false { return EvaluationError(.systemCancel, reason: .sessionLocked, cause: "the session was locked") }
        if idle != false { return EvaluationError(.systemCancel, reason: .sessionIdle, cause: "the session became idle") }
        return nil
    }
}

/// The wake source that reads logind's change signals during the wait (EvaluationRunner
/// polls its descriptor with the sensor's).
final class SessionWatch: WakeSource {
    private let hints: LogindHints
    private let bus: Bus
    let fd: Int32
    private let lockAndIdle: Bool

    init(hints: LogindHints, bus: Bus, fd: Int32, lockAndIdle: Bool) {
        self.hints = hints
        self.bus = bus
        self.fd = fd
        self.lockAndIdle = lockAndIdle
    }

    func interruption() -> EvaluationError? {
        do {
            try bus.dispatch()
        } catch {
            // Without logind's bus nothing says the session is still there and unlocked.
            return EvaluationError(.systemCancel, reason: .sessionLocked, cause: "logind's bus was lost: \(error.summary)")
        }
        return hints.interruption(lockAndIdle: lockAndIdle)
    }
}
