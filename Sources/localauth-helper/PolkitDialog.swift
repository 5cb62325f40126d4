#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import SystemBus

/// polkitd's `CheckAuthorization` for the product's action, with user interaction allowed:
/// the desktop's authentication agent registered for the subject (GNOME Shell's dialog, or
/// any agent registered for that process) shows its dialog and runs polkit's agent helper,
/// whose `polkit-1` stack asks pam_localauth for the finger (PolkitAgent) or pam_unix for
/// the password. Only a question: polkit's yes says that stack succeeded, not how
/// (RightsDialog decides what it is worth). Bounded: on the deadline, or when one of the
/// watched descriptors wakes (the program went away), the check is cancelled
/// (`CancelCheckAuthorization`) and the dialog closes.
struct PolkitDialog {
    static let action = "org.localauth.right.authorize"
    static let service = "org.freedesktop.PolicyKit1"
    static let path = "/org/freedesktop/PolicyKit1/Authority"
    static let interface = "org.freedesktop.PolicyKit1.Authority"

    /// polkit's `unix-process` subject: the pinned caller, its start time (so that a later
    /// process with the same pid is not it) and its uid.
    struct Subject {
        let pid: Int32
        let startTime: UInt64
        let uid: uid_t
    }

    enum Answer: Equatable {
        case authorized
        /// `dismissed`: the agent reported the dialog dismissed (`polkit.dismissed`).
        case notAuthorized(dismissed: Bool)
        /// polkitd found no agent for the subject (a challenge it could not start).
        case noAgent
        /// No answer from polkitd at all, or an error reply: why.
        case unreachable(String)
        /// The deadline passed; the check was cancelled.
        case timedOut
        /// `watch[i]` woke first; the check was cancelled.
        case interrupted(fd: Int32)
    }

    let address: String
    let busTimeout: Double
    let log: LogSink

    /// Asks polkitd; returns when it answers, `deadline` (monotonic ms) passes or a watched
    /// descriptor is readable.
    func ask(_ subject: Subject, details: [(String, String)], deadline: Int64, watch: [Int32]) -> Answer {
        let bus: Bus
        do { bus = try Bus(address: address, timeoutSeconds: busTimeout) } catch {
            return .unreachable("no system bus: \(error.summary)")
        }
        defer { bus.close() }
        let cancellation = "localauth-right-\(getpid())-\(MonotonicClock.millis())"
        var reply: Result<Message, BusError>?
        do {
            let call = try check(bus, subject, details: details, cancellation: cancellation)
            // The reply waits for the person: bounded by the deadline, not the bus timeout.
            bus.bound(toSeconds: Double(max(1, deadline - MonotonicClock.millis())) / 1000)
            try bus.callAsync(call) { reply = $0 }
            bus.bound(toSeconds: busTimeout)
            while reply == nil {
                try bus.dispatch()
                if reply != nil { break }
                if MonotonicClock.millis() >= deadline {
                    cancel(bus, cancellation, why: "the dialog was not answered in time")
                    return .timedOut
                }
                if let fd = try bus.wait(until: deadline, extra: watch) {
                    cancel(bus, cancellation, why: "the program went away or cancelled")
                    return .interrupted(fd: fd)
                }
            }
        } catch {
            return .unreachable(error.summary)
        }
        switch reply! {
        case .failure(.timedOut):
            return .timedOut
        case .failure(let error):
            return .unreachable(error.summary)
        case .success(let message):
            return Self.answer(message)
        }
    }

    /// `CheckAuthorization((sa{sv}) subject, s action_id, a{ss} details, u flags, s cancellation_id)`.
    private func check(_ bus: Bus, _ subject: Subject, details: [(String, String)],
                       cancellation: String) throws(BusError) -> Message {
        let m = try bus.methodCall(destination: Self.service, path: Self.path, interface: Self.interface,
                                   member: "CheckAuthorization")
        try m.openContainer(typeStruct, "sa{sv}")
        try m.append("unix-process")
        try m.openContainer(typeArray, "{sv}")
        try entry(m, "pid", typeUInt32, UInt32(bitPattern: subject.pid))
        try entry(m, "start-time", typeUInt64, subject.startTime)
        try entry(m, "uid", typeInt32, Int32(bitPattern: subject.uid))
        try m.closeContainer()
        try m.closeContainer()
        try m.append(Self.action)
        try m.append(dictionary: details)
        try m.appendBasic(typeUInt32, UInt32(1))  // AllowUserInteraction
        try m.append(cancellation)
        return m
    }

    private func entry<T: FixedWidthInteger>(_ m: Message, _ key: String, _ type: CChar, _ value: T) throws(BusError) {
        try m.openContainer(typeDictEntry, "sv")
        try m.append(key)
        try m.openContainer(typeVariant, String(UnicodeScalar(UInt8(bitPattern: type))))
        try m.appendBasic(type, value)
        try m.closeContainer()
        try m.closeContainer()
    }

    /// Closes the dialog; what polkitd answers to it does not change the outcome (a refusal).
    private func cancel(_ bus: Bus, _ id: String, why: String) {
        log.log(.info, "polkit dialog cancelled: \(why)")
        do {
            let m = try bus.methodCall(destination: Self.service, path: Self.path, interface: Self.interface,
                                       member: "CancelCheckAuthorization")
            try m.append(id)
            _ = try bus.call(m)
        } catch {
            log.log(.notice, "CancelCheckAuthorization: \(error.summary)")
        }
    }

    /// The reply `(bba{ss})`: is_authorized, is_challenge, details.
    static func answer(_ reply: Message) -> Answer {
        do {
            try reply.enterStruct("bba{ss}")
            let authorized = try reply.readBool()
            let challenge = try reply.readBool()
            let details = try reply.readStringDictionary()
            try reply.exitContainer()
            if authorized { return .authorized }
            // With user interaction allowed, a challenge left standing is one no agent took.
            if challenge { return .noAgent }
            return .notAuthorized(dismissed: details["polkit.dismissed"] != nil)
        } catch {
            return .unreachable("polkitd's reply: \(error.summary)")
        }
    }
}
