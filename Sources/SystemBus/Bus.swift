// SystemBus: the helper's one D-Bus client (sd-bus), with every call bounded in time. fprintd
// (FprintdClient) and logind (LogindClient) are reached through it.
import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// Everything that can go wrong on the bus, as one closed set. Negative sd-bus results are
/// turned into these by `checked` below and nowhere else.
package enum BusError: Error, Equatable {
    /// No reply within the bound (ETIMEDOUT): the peer is frozen or overloaded.
    case timedOut
    /// The connection is closed, was refused, or was lost (ECONNRESET, ENOTCONN, EPIPE,
    /// ECONNREFUSED, ENOENT, ESHUTDOWN, ECONNABORTED).
    case disconnected(errno: Int32)
    /// The peer (or the bus daemon for it) answered with a D-Bus error.
    case remote(name: String, message: String)
    /// Any other failure of a local sd-bus call: which call, and the errno.
    case local(call: String, errno: Int32)
    /// A reply did not have the shape fprintd's API promises.
    case malformed(String)

    /// One line for the log.
    package var summary: String {
        switch self {
        case .timedOut: return "no reply within the bus timeout"
        case .disconnected(let e): return "no bus connection (\(errnoName(e)))"
        case .remote(let name, let message): return message.isEmpty ? name : "\(name): \(message)"
        case .local(let call, let e): return "\(call) failed (\(errnoName(e)))"
        case .malformed(let what): return "unexpected reply: \(what)"
        }
    }
}

private let disconnectErrnos: Set<Int32> = [ECONNRESET, ENOTCONN, EPIPE, ECONNREFUSED, ENOENT,
                                            ESHUTDOWN, ECONNABORTED]

/// The one place where C results become Swift errors. `r` is an sd-bus return value
/// (negative errno on failure); `error`, when given, may carry a D-Bus error name.
@discardableResult
package func checked(_ r: Int32, _ call: String,
             _ error: UnsafePointer<sd_bus_error>? = nil) throws(BusError) -> Int32 {
    guard r < 0 else { return r }
    let e = -r
    // Timeouts first: sd-bus reports its own timeout with a D-Bus error name too.
    if e == ETIMEDOUT { throw .timedOut }
    if disconnectErrnos.contains(e) { throw .disconnected(errno: e) }
    if let error, sd_bus_error_is_set(error) != 0, let name = error.pointee.name {
        let message = error.pointee.message.map { String(cString: $0) } ?? ""
        throw .remote(name: String(cString: name), message: message)
    }
    throw .local(call: call, errno: e)
}

package func errnoName(_ e: Int32) -> String {
    String(cString: strerror(e))
}

/// One client connection to a bus at a given address, with every call bounded in time.
/// Never reads the environment: the address is always given.
package final class Bus {
    private var handle: OpaquePointer?
    /// The bound for the next call (and for the connection's own setup), in µs: the caller
    /// shortens it as a shared deadline draws near (`bound(toSeconds:)`).
    package private(set) var timeoutUsec: UInt64
    /// Match handlers, kept alive for as long as their slots.
    private var matches: [(slot: OpaquePointer?, box: Unmanaged<MatchBox>)] = []

    /// Connects to `address` as a bus client: authentication and Hello, all within the
    /// timeout (sd-bus's own bound for the handshake is 90 s). With `awaitingReady` false it
    /// returns once the authentication is sent: calls made meanwhile are queued and go out
    /// with the handshake, driven by `dispatch()` and `wait(until:extra:)`.
    /// `monitor`: the connection is to become a monitor (`becomeMonitor`): sd-bus then
    /// answers none of the calls it sees go by, and lets through what is addressed to others.
    package init(address: String, timeoutSeconds: Double, awaitingReady: Bool = true,
                 monitor: Bool = false) throws(BusError) {
        timeoutUsec = UInt64(max(timeoutSeconds, 0.001) * 1_000_000)
        var bus: OpaquePointer?
        try checked(sd_bus_new(&bus), "sd_bus_new")
        handle = bus
        do {
            try checked(address.withCString { sd_bus_set_address(bus, $0) }, "sd_bus_set_address")
            try checked(sd_bus_set_bus_client(bus, 1), "sd_bus_set_bus_client")
            if monitor { try checked(sd_bus_set_monitor(bus, 1), "sd_bus_set_monitor") }
            // Calls made by sd-bus itself (Hello, AddMatch) default to 25 s; bound them too.
            try checked(sd_bus_set_method_call_timeout(bus, timeoutUsec),
                        "sd_bus_set_method_call_timeout")
            try checked(sd_bus_start(bus), "sd_bus_start")
            if awaitingReady {
                try awaitReady(deadline: MonotonicMicros.now() / 1000 + Int64(timeoutUsec / 1000))
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Bounds the calls from now on, those sd-bus makes itself (AddMatch) included.
    package func bound(toSeconds seconds: Double) {
        timeoutUsec = UInt64(max(seconds, 0.001) * 1_000_000)
        if let handle { sd_bus_set_method_call_timeout(handle, timeoutUsec) }
    }

    /// Drives the handshake that sd_bus_start began until the connection is ready.
    private func awaitReady(deadline: Int64) throws(BusError) {
        while true {
            try dispatch()
            if try checked(sd_bus_is_ready(try open()), "sd_bus_is_ready") > 0 { return }
            guard MonotonicMicros.now() / 1000 < deadline else { throw .timedOut }
            _ = try wait(until: deadline, extra: [])
        }
    }

    /// The connection's socket, for a caller that waits on it among others (poll).
    package var fileDescriptor: Int32? { handle.map { sd_bus_get_fd($0) }.flatMap { $0 >= 0 ? $0 : nil } }

    package var isOpen: Bool { handle.map { sd_bus_is_open($0) > 0 } ?? false }

    /// Authenticated and Hello answered.
    package var isReady: Bool { handle.map { sd_bus_is_ready($0) > 0 } ?? false }

    /// Drops the connection. Peers see the client vanish (fprintd then drops its claim).
    package func close() {
        // Closed first, so that dropping the matches sends no RemoveMatch: the bus daemon
        // forgets a client's matches with the client. Not sd_bus_flush_close_unref: flushing
        // waits for a handshake still in progress (up to 90 s with a frozen bus daemon), and
        // every call here has already been written.
        if let handle { sd_bus_close(handle) }
        for match in matches {
            sd_bus_slot_unref(match.slot)
            match.box.release()
        }
        matches = []
        if let handle { sd_bus_unref(handle) }
        handle = nil
    }

    private func open() throws(BusError) -> OpaquePointer {
        guard let handle, sd_bus_is_open(handle) > 0 else { throw .disconnected(errno: ENOTCONN) }
        return handle
    }

    /// A new method call message. Auto-start stays allowed: on a real system the bus
    /// daemon starts fprintd on demand.
    package func methodCall(destination: String, path: String, interface: String,
                    member: String) throws(BusError) -> Message {
        let bus = try open()
        var m: OpaquePointer?
        let r = destination.withCString { d in
            path.withCString { p in
                interface.withCString { i in
                    member.withCString { sd_bus_message_new_method_call(bus, &m, d, p, i, $0) }
                }
            }
        }
        try checked(r, "sd_bus_message_new_method_call")
        guard let m else { throw .local(call: "sd_bus_message_new_method_call", errno: ENOMEM) }
        return Message(adopting: m)
    }

    /// Sends `message` and waits for its reply, at most `timeoutUsec`. Signals that arrive
    /// meanwhile stay queued for `dispatch()`.
    package func call(_ message: Message) throws(BusError) -> Message {
        let bus = try open()
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        try checked(sd_bus_call(bus, message.pointer, timeoutUsec, &error, &reply), "sd_bus_call", &error)
        guard let reply else { throw .malformed("empty reply") }
        return Message(adopting: reply)
    }

    /// Sends `message` without waiting: `done` gets the reply (or what went wrong: an error
    /// reply, no reply within `timeoutUsec` or the `timeoutSeconds` given, the connection
    /// lost) from `dispatch()`. A caller that bounds the wait itself passes a longer
    /// `timeoutSeconds`: sd-bus's timer fires in `dispatch()` before the reply already
    /// received is read, so a caller back late from other work would lose an answer that
    /// came in time.
    package func callAsync(_ message: Message, timeoutSeconds: Double? = nil,
                           _ done: @escaping (Result<Message, BusError>) -> Void) throws(BusError) {
        let bus = try open()
        let box = Unmanaged.passRetained(ReplyBox(done))
        var slot: OpaquePointer?
        let usec = timeoutSeconds.map { UInt64(max($0, 0.001) * 1_000_000) } ?? timeoutUsec
        let r = sd_bus_call_async(bus, &slot, message.pointer, replyTrampoline, box.toOpaque(), usec)
        guard r >= 0, let slot else {
            box.release()
            try checked(r < 0 ? r : -ENOMEM, "sd_bus_call_async")
            return
        }
        // The bus owns the pending call from here; the box goes with the slot, whether the
        // reply came or the connection was dropped first.
        sd_bus_slot_set_destroy_callback(slot, releaseReplyBox)
        sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
    }

    /// `addMatch` without waiting for the bus daemon's answer: `installed` gets nil once the
    /// match is in place, or the error, from `dispatch()`. The daemon handles a client's
    /// messages in order, so the match applies to everything caused by a call sent after it.
    package func addMatchAsync(_ rule: String, _ handler: @escaping (Message) -> Void,
                       installed: @escaping (BusError?) -> Void) throws(BusError) {
        let bus = try open()
        let box = Unmanaged.passRetained(MatchBox(handler, installed: installed))
        var slot: OpaquePointer?
        let r = rule.withCString {
            sd_bus_add_match_async(bus, &slot, $0, matchTrampoline, installTrampoline, box.toOpaque())
        }
        do {
            try checked(r, "sd_bus_add_match_async")
        } catch {
            box.release()
            throw error
        }
        matches.append((slot, box))
    }

    /// Calls `handler` for each message matching `rule` (D-Bus match rule syntax), from
    /// `dispatch()`. The AddMatch round trip is bounded by the method call timeout.
    package func addMatch(_ rule: String, _ handler: @escaping (Message) -> Void) throws(BusError) {
        let bus = try open()
        let box = Unmanaged.passRetained(MatchBox(handler))
        var slot: OpaquePointer?
        let r = rule.withCString { sd_bus_add_match(bus, &slot, $0, matchTrampoline, box.toOpaque()) }
        do {
            try checked(r, "sd_bus_add_match")
        } catch {
            box.release()
            throw error
        }
        matches.append((slot, box))
    }

    /// Makes this connection a monitor (org.freedesktop.DBus.Monitoring.BecomeMonitor, which
    /// the bus daemon allows to root only): from then on it receives a copy of every message
    /// that matches one of `rules`, whoever it is for, and may send nothing more. Bounded by
    /// the call timeout. Read what comes with `nextMessage()`, never `dispatch()`.
    package func becomeMonitor(rules: [String]) throws(BusError) {
        let become = try methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                    interface: "org.freedesktop.DBus.Monitoring", member: "BecomeMonitor")
        try become.append(strings: rules)
        try become.appendBasic(typeUInt32, UInt32(0))
        _ = try call(become)
    }

    /// The next message already received that no handler took, without blocking; nil when
    /// there is none now. A monitor's messages come this way: taken here, sd-bus sends no
    /// answer of its own to a call that was never its.
    package func nextMessage() throws(BusError) -> Message? {
        let bus = try open()
        while true {
            var m: OpaquePointer?
            let r = try checked(sd_bus_process(bus, &m), "sd_bus_process")
            if let m { return Message(adopting: m) }
            if r == 0 {
                _ = try open()  // closed after the last message: said as .disconnected
                return nil
            }
        }
    }

    /// Runs the handlers of everything already received, without blocking.
    /// Throws `.disconnected` once the connection is gone.
    package func dispatch() throws(BusError) {
        let bus = try open()
        while try checked(sd_bus_process(bus, nil), "sd_bus_process") > 0 {}
        // sd_bus_process returns 0 but leaves the bus closed after the last message.
        _ = try open()
    }

    /// Sleeps until the bus has input (or its own timer fires), `deadline` (monotonic ms)
    /// passes, or one of `extra` is readable or hung up. Returns that descriptor, if any.
    package func wait(until deadline: Int64, extra: [Int32]) throws(BusError) -> Int32? {
        let bus = try open()
        let fd = try checked(sd_bus_get_fd(bus), "sd_bus_get_fd")
        let events = try checked(sd_bus_get_events(bus), "sd_bus_get_events")
        var busDue: UInt64 = 0
        try checked(sd_bus_get_timeout(bus, &busDue), "sd_bus_get_timeout")
        var fds = [pollfd(fd: fd, events: Int16(truncatingIfNeeded: events), revents: 0)]
        fds += extra.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let n = poll(&fds, nfds_t(fds.count), pollMillis(deadline: deadline, busDueUsec: busDue))
        if n < 0 {
            let e = errno
            if e == EINTR { return nil }  // the caller loops and re-checks its deadline
            throw .local(call: "poll", errno: e)
        }
        return fds.dropFirst().first { $0.revents != 0 }?.fd
    }
}

/// Milliseconds to sleep: until `deadline`, or earlier when sd-bus has a timer due
/// (`busDueUsec` is absolute CLOCK_MONOTONIC µs; UINT64_MAX means none).
private func pollMillis(deadline: Int64, busDueUsec: UInt64) -> Int32 {
    let now = MonotonicMicros.now()
    var wait = max(0, deadline * 1000 - now)
    if busDueUsec != UInt64.max {
        wait = min(wait, max(0, Int64(clamping: busDueUsec) - now))
    }
    // Round up so a deadline 0.4 ms away does not spin.
    return Int32(clamping: (wait + 999) / 1000)
}

package enum MonotonicMicros {
    package static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}

/// Holds a match handler (and, for an asynchronous AddMatch, what wants its answer) for the
/// C callback's userdata.
private final class MatchBox {
    let handler: (Message) -> Void
    let installed: ((BusError?) -> Void)?
    init(_ handler: @escaping (Message) -> Void, installed: ((BusError?) -> Void)? = nil) {
        self.handler = handler
        self.installed = installed
    }
}

/// Holds what an asynchronous call's reply goes to.
private final class ReplyBox {
    let done: (Result<Message, BusError>) -> Void
    init(_ done: @escaping (Result<Message, BusError>) -> Void) { self.done = done }
}

/// A reply, or the error sd-bus made up for a call that got none (timeout, connection lost),
/// as a result. The error name and errno come through `checked`, like a synchronous call's.
private func replyResult(_ reply: OpaquePointer) -> Result<Message, BusError> {
    guard sd_bus_message_is_method_error(reply, nil) > 0 else { return .success(Message(retaining: reply)) }
    let e = sd_bus_message_get_errno(reply)
    do {
        try checked(-(e > 0 ? e : EIO), "method call", sd_bus_message_get_error(reply))
    } catch {
        return .failure(error)
    }
    return .failure(.malformed("an error reply without an error"))
}

private let replyTrampoline: sd_bus_message_handler_t = { reply, userdata, _ in
    guard let reply, let userdata else { return 0 }
    Unmanaged<ReplyBox>.fromOpaque(userdata).takeUnretainedValue().done(replyResult(reply))
    return 0
}

private let releaseReplyBox: sd_bus_destroy_t = { userdata in
    if let userdata { Unmanaged<ReplyBox>.fromOpaque(userdata).release() }
}

private let installTrampoline: sd_bus_message_handler_t = { reply, userdata, _ in
    guard let reply, let userdata else { return 0 }
    let box = Unmanaged<MatchBox>.fromOpaque(userdata).takeUnretainedValue()
    switch replyResult(reply) {
    case .success: box.installed?(nil)
    case .failure(let error): box.installed?(error)
    }
    return 0
}

/// sd-bus calls C function pointers; this one forwards to the boxed Swift handler.
private let matchTrampoline: sd_bus_message_handler_t = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    let box = Unmanaged<MatchBox>.fromOpaque(userdata).takeUnretainedValue()
    box.handler(Message(retaining: message))
    return 0
}
