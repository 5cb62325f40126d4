/// Who owns a well-known name (logind's, fprintd's) on the bus right now, and the one check
/// that a signal claiming to be that service's comes from it.
///
/// A match rule's `sender='org.freedesktop.login1'` does not say who sent a signal: the bus
/// daemon delivers a signal addressed to a connection (unicast) whatever its rules say, and
/// sd-bus, which cannot resolve a well-known name by itself, matches it against any sender.
/// Any local uid can address a signal to our unique name. The sender field, though, is
/// written by the bus daemon: a unique name is only ever its owner's, and
/// `org.freedesktop.DBus` only the daemon's own. So the name's owner is asked once
/// (GetNameOwner) and followed through the daemon's `NameOwnerChanged`, taken only when the
/// daemon sent it; a signal of the service's is taken only from that unique name.
///
/// Both requests go out without waiting, before any match on the service's own signals: the
/// daemon handles a client's messages in order, so the answer is queued to us ahead of every
/// signal those later matches select, and sd-bus dispatches in arrival order. Until the
/// answer, and while nobody owns the name, nothing is accepted.
package final class NameOwner {
    package static let busDriver = "org.freedesktop.DBus"

    package let name: String
    /// The unique name (`:1.42`) that owns `name` now; nil before the daemon answered,
    /// while nobody owns it, or when the daemon could not be asked.
    package private(set) var current: String?
    private let changed: (_ old: String, _ new: String) -> Void
    private let report: (String) -> Void
    private var tally = DropTally()

    /// Starts following `name` on `bus`. `changed(old, new)` is told each change the bus
    /// daemon announces ("" for none); `report` gets the log lines (a dropped signal, a
    /// failed question). With `installed` nil the match is waited for and its failure
    /// thrown; otherwise `installed` gets its outcome from `dispatch()`.
    package init(_ name: String, on bus: Bus, report: @escaping (String) -> Void,
                 installed: ((BusError?) -> Void)? = nil,
                 changed: @escaping (_ old: String, _ new: String) -> Void = { _, _ in }) throws(BusError) {
        self.name = name
        self.report = report
        self.changed = changed
        let rule = "type='signal',sender='\(Self.busDriver)',path='/org/freedesktop/DBus',"
            + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(name)'"
        if let installed {
            try bus.addMatchAsync(rule, { [weak self] in self?.ownerChanged($0) }, installed: installed)
        } else {
            try bus.addMatch(rule) { [weak self] in self?.ownerChanged($0) }
        }
        let ask = try bus.methodCall(destination: Self.busDriver, path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", member: "GetNameOwner")
        try ask.append(name)
        try bus.callAsync(ask) { [weak self] in self?.answered($0) }
    }

    /// Whether `message` was sent by the name's owner now. Anything else is dropped here:
    /// counted, and said in the log at most once per `DropTally.intervalMicros`.
    package func sent(_ message: Message) -> Bool {
        let sender = message.sender
        if let current, sender == current { return true }
        if let count = tally.note(now: MonotonicMicros.now()) {
            report("\(count) signal(s) claiming to be \(name)'s dropped since the last such line: "
                   + "not sent by its owner on the bus \(current ?? "(none known)") "
                   + "(the last: \(message.member ?? "?") from \(sender ?? "no sender"))")
        }
        return false
    }

    /// `handler`, called only for messages `sent` accepts.
    package func guarded(_ handler: @escaping (Message) -> Void) -> (Message) -> Void {
        { [weak self] message in
            if self?.sent(message) == true { handler(message) }
        }
    }

    private func answered(_ result: Result<Message, BusError>) {
        switch result {
        case .success(let reply):
            guard let owner = try? reply.readString() else {
                report("GetNameOwner(\(name)): an answer without a name; its signals are not taken")
                return
            }
            current = owner
        case .failure(.remote(let error, _)) where error == "org.freedesktop.DBus.Error.NameHasNoOwner":
            current = nil  // not started yet (or activated on demand): NameOwnerChanged will say
        case .failure(let error):
            report("GetNameOwner(\(name)): \(error.summary); its signals are not taken until it changes hands")
        }
    }

    /// NameOwnerChanged(name, old, new), taken from the bus daemon only.
    private func ownerChanged(_ message: Message) {
        guard message.sender == Self.busDriver else {
            _ = sent(message)  // counted and said like any other forged signal
            return
        }
        guard let announced = try? message.readString(), announced == name,
              let old = try? message.readString(), let new = try? message.readString() else { return }
        current = new.isEmpty ? nil : new
        changed(old, new)
    }
}

/// Dropped signals, said at most once per interval: one hostile uid sending thousands must
/// not write thousands of log lines (journald's rate limit would then hide the others). The
/// first drop is said at once; those held back after it are said, counted, with the first
/// drop after the interval (no timer: a flood that stops is not said again).
package struct DropTally {
    package static let intervalMicros: Int64 = 10_000_000
    private var count = 0
    private var lastSaid: Int64?

    package init() {}

    /// Counts one drop at `now` (monotonic µs); the count to say (since the last line said),
    /// or nil when a line was said less than an interval ago.
    package mutating func note(now: Int64) -> Int? {
        count += 1
        if let lastSaid, now - lastSaid < Self.intervalMicros { return nil }
        lastSaid = now
        defer { count = 0 }
        return count
    }
}
