#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// Connections an application keeps open for its next preflights (`keep=1` in the request,
/// `kept=1` in the answer; docs/PROTOCOL.md, "Applications"). A preflight the service
/// answers costs a few microseconds; a new connection for each (socket, connect, accept,
/// the peer's credentials and pidfd, two closes) cost as much again. Only answers the
/// service makes itself are kept open, so a connection here has had every answer computed
/// from root's state at the time: nothing of an answer is kept, on either side.
///
/// Bounded, since each costs the service two descriptors (the connection and the peer's
/// pidfd): `perUser` per uid and `total` in all; beyond that a preflight is answered and
/// its connection closed as before. One left idle for `idleMillis` is closed (the library
/// opens a new one for its next call), and so is one whose peer hung up.
struct KeptConnections {
    struct Entry {
        let connection: Int32
        let peer: Peer
        var idleSince: Int64
    }

    static let perUser = 4
    static let total = 128
    static let idleMillis: Int64 = 30_000

    private(set) var entries: [Entry] = []

    var fds: [Int32] { entries.map { $0.connection } }

    func mayKeep(uid: uid_t) -> Bool {
        entries.count < Self.total && entries.filter { $0.peer.uid == uid }.count < Self.perUser
    }

    mutating func keep(_ connection: Int32, peer: Peer) {
        entries.append(Entry(connection: connection, peer: peer, idleSince: MonotonicClock.millis()))
    }

    /// The entry of a connection that became readable, taken out (the caller keeps it again
    /// or closes it).
    mutating func take(_ fd: Int32) -> Entry? {
        guard let index = entries.firstIndex(where: { $0.connection == fd }) else { return nil }
        return entries.remove(at: index)
    }

    /// When the first idle one is due to close; nil when none is kept.
    var nextIdleDeadline: Int64? {
        entries.map { $0.idleSince + Self.idleMillis }.min()
    }

    mutating func closeIdle(now: Int64) {
        entries.removeAll { entry in
            guard now - entry.idleSince >= Self.idleMillis else { return false }
            Self.close(entry)
            return true
        }
    }

    static func close(_ entry: Entry) {
        Glibc.close(entry.peer.pidfd)
        Glibc.close(entry.connection)
    }
}

/// What a kept connection holds when it becomes readable.
enum KeptInput {
    /// A whole request frame (RequestPeek).
    case request(RequestPeek)
    /// Nothing after all (a wake-up with no data): left as it is.
    case nothing
    /// The peer hung up, the connection failed, or it holds something that is not a whole
    /// request. The library writes each request in one send, so a part of one is not
    /// waited for: poll would report it readable again at once, and the loop would spin.
    case gone

    static func of(_ fd: Int32, revents: Int16) -> KeptInput {
        if let request = RequestPeek.of(fd) { return .request(request) }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if n < 0 && (errno == EAGAIN || errno == EINTR) && revents & Int16(POLLHUP | POLLERR) == 0 { return .nothing }
        return .gone
    }
}
