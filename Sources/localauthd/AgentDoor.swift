#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The ssh-agent door: `/run/localauth/ssh-agent` (localauth-ssh-agent.socket, or
/// `--agent-listen PATH`), one for every user. Its peers are pinned as the main socket's
/// are (Peer.swift); then each connection is held here until its first message:
/// * SSH_AGENTC_REQUEST_IDENTITIES is answered here, from root's store, with the public
///   keys of the peer's own uid (as a preflight is answered without a helper): `ssh-add -L`
///   and the listing ssh and ssh-keygen do first start no root process;
/// * anything else goes, unread, with the connection to a helper of its own, which speaks
///   the ssh-agent protocol until the client closes (AgentMode in the helper): signatures,
///   session binds, and every judgement of what the client wrote.
///
/// Agent connections have a limit and a rate of their own per user, apart from the
/// requests' (Shares.swift, RateLimit.swift): a user's `git fetch` in a loop, or many
/// forwarded sessions, never takes the slots their `sudo` needs, and never more than
/// `perUserLimit` helpers serve a user's connections at once. Over the limit or the rate,
/// a connection whose message is for a helper waits here (held, only its end watched)
/// until one of its user's helpers ends and the rate allows the next start, first come
/// first served: `git submodule update --jobs 16` over SSH, or `ssh-keygen -Y sign` for
/// each commit of a long `git rebase` inside a key's reuse window, is answered a little
/// later, never cut off (ssh goes on without a closed agent and its login fails; ssh-keygen
/// dies of SIGPIPE). Only the bounds on what is held refuse (`heldPerUser`, `heldInAll`).
struct AgentDoor {
    let listener: Listener
    let perUserLimit: Int
    /// Helper starts per user: more than the requests' rate (a signature inside a key's
    /// reuse window is one helper, and git signs in bursts), bounded all the same
    /// (`--agent-start-rate`, 64 and 32 a second unless it says otherwise).
    let startBurst: Int
    let startsPerSecond: Int
    private var rate: HelperStartRate
    private(set) var held: [Held] = []
    /// Connections one user may have held here at once (waiting for a helper, or for their
    /// first message): each holds two descriptors (the connection, the peer's pidfd), so a
    /// hostile user's thousands of connections are refused past this, not kept.
    static let heldPerUser = 64
    /// And all users' together: 2048 descriptors, far under the limit localauthd raises
    /// its own to at start (DescriptorLimit.swift), whatever the number of users.
    static let heldInAll = 1024
    /// A held connection silent this long is closed (the helper's own bound, AgentMode).
    static let idleMillis: Int64 = 600_000
    /// The start of a frame is looked at again this much later (poll would say readable):
    /// at once the first time, since OpenSSH writes a message's length and its body in two
    /// writes, then less often (a client that stalls mid-frame costs a wake-up per 20 ms).
    static let firstRecheckMillis: Int64 = 1
    static let recheckMillis: Int64 = 20

    /// A pinned connection whose next message has not come (or was REQUEST_IDENTITIES).
    struct Held {
        let waiting: Waiting
        var idleUntil: Int64
        var recheckAt: Int64 = 0
        /// How often the start of the current frame was looked at.
        var rechecks = 0
        /// Its next message is for a helper (left unread): it waits for its user's limit
        /// and rate.
        var forHelper = false
        /// What it waits for (nil: not waiting yet).
        var waits: Wait?
        /// When its user's rate allows the next start (waiting for the rate).
        var due: Int64 = 0
    }

    enum Wait: Equatable {
        /// `perUserLimit` helpers serve its user's connections: one of them must end.
        case limit
        /// Its user's rate of helper starts: until `due`.
        case rate
    }

    init(listener: Listener, perUserLimit: Int, startBurst: Int = 64, startsPerSecond: Int = 32) {
        self.listener = listener
        self.perUserLimit = perUserLimit
        self.startBurst = startBurst
        self.startsPerSecond = max(1, startsPerSecond)
        rate = HelperStartRate(userBurst: startBurst, userPerSecond: max(1, startsPerSecond))
    }

    /// Why a pinned peer's new connection is refused, nil when it is taken (held): only
    /// when too many are held already, its user's (counted by the peer's own uid: an
    /// ssh-agent peer is served its uid's keys, whatever its real uid) or everyone's.
    func refusal(_ peer: Peer) -> String? {
        guard held.count < Self.heldInAll else {
            return "\(held.count) agent connections of all users are held already (localauthd's bound)"
        }
        let already = held.filter { $0.waiting.peer.uid == peer.uid }.count
        return already >= Self.heldPerUser ? "\(already) agent connections of this user are held already (the bound)" : nil
    }

    /// Its own share of agent starts: root's own ssh is a user's here.
    private static func share(_ peer: Peer) -> uid_t { peer.uid == 0 ? uid_t.max - 1 : peer.uid }

    /// The connections whose message is for a helper that their user's limit (the agent
    /// helpers in `running`) and rate let start now, in the order they came: taken out of
    /// `held`. The others stay held, waiting for a helper of their user's to end or for
    /// `due`; `began` are those that began to wait just now, and why (a log line).
    mutating func takeDue(running: [Worker], now: Int64 = MonotonicClock.millis())
        -> (start: [Waiting], began: [(Waiting, Wait)]) {
        var start: [Waiting] = [], began: [(Waiting, Wait)] = []
        var served: [uid_t: Int] = [:]
        for worker in running where worker.agent { served[worker.uid, default: 0] += 1 }
        var stopped: [uid_t: Wait] = [:]
        var i = 0
        while i < held.count {
            guard held[i].forHelper else { i += 1; continue }
            let peer = held[i].waiting.peer
            // The ones behind a connection that waits wait too, for the same: first come,
            // first started.
            let wait: Wait
            if let same = stopped[peer.uid] {
                wait = same
            } else if served[peer.uid, default: 0] >= perUserLimit {
                wait = .limit
            } else if rate.take(share: Self.share(peer), now: now) {
                served[peer.uid, default: 0] += 1
                start.append(held.remove(at: i).waiting)
                continue
            } else {
                wait = .rate
            }
            stopped[peer.uid] = wait
            if held[i].waits == nil { began.append((held[i].waiting, wait)) }
            held[i].waits = wait
            held[i].due = wait == .rate ? rate.nextToken(share: Self.share(peer), now: now) : 0
            i += 1
        }
        return (start, began)
    }

    mutating func hold(_ waiting: Waiting) {
        held.append(Held(waiting: waiting, idleUntil: MonotonicClock.millis() + Self.idleMillis))
    }

    var pollFDs: [pollfd] {
        let now = MonotonicClock.millis()
        // A connection waiting for its helper is readable (its message, unread): only its
        // end is watched (POLLHUP and POLLERR come unasked); one that ends is closed and its
        // place freed (serve).
        return held.map { pollfd(fd: $0.waiting.connection,
                                 events: $0.forHelper ? 0 : $0.recheckAt > now ? pollReadHangUp : Int16(POLLIN) | pollReadHangUp,
                                 revents: 0) }
    }

    /// What a held connection's readiness led to.
    enum Step {
        /// Still held (answered, or not a whole message yet).
        case held
        /// Closed here (the client went away).
        case closed
        /// Its next message is for a helper: it waits for one (takeDue).
        case forHelper
    }

    /// Answers REQUEST_IDENTITIES as often as they come first; at the first other message
    /// the connection is for a helper (takeDue). `identities` gives the answer's body for a uid.
    mutating func serve(_ fd: Int32, revents: Int16, identities: (uid_t) -> [UInt8]) -> Step {
        guard let index = held.firstIndex(where: { $0.waiting.connection == fd }) else { return .held }
        if held[index].forHelper {
            // Its client went away while it waited: nobody is left to answer.
            return revents & Int16(POLLHUP | POLLERR) != 0 ? close(at: index) : .forHelper
        }
        while true {
            var buffer = [UInt8](repeating: 0, count: 8)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
            let hungUp = revents & (Int16(POLLHUP | POLLERR) | pollReadHangUp) != 0
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { return close(at: index) }
            // Nothing yet: poll says so when something comes (no recheck needed).
            if n < 0 { held[index].recheckAt = 0; return .held }
            switch AgentPeek.classify(Array(buffer[0..<max(0, n)])) {
            case .notYet where hungUp:
                return close(at: index)
            case .notYet:
                held[index].recheckAt = MonotonicClock.millis()
                    + (held[index].rechecks == 0 ? Self.firstRecheckMillis : Self.recheckMillis)
                held[index].rechecks += 1
                return .held
            case .message:
                held[index].forHelper = true
                held[index].recheckAt = 0
                return .forHelper
            case .requestIdentities:
                var taken = [UInt8](repeating: 0, count: AgentPeek.requestIdentities.count)
                _ = taken.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                let answer = identities(held[index].waiting.peer.uid)
                let sent = answer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                guard sent == answer.count else { return close(at: index) }
                held[index].idleUntil = MonotonicClock.millis() + Self.idleMillis
                held[index].recheckAt = 0
                held[index].rechecks = 0
            }
        }
    }

    private mutating func close(at index: Int) -> Step {
        held.remove(at: index).waiting.release()
        return .closed
    }

    /// Closes the connections silent past their bound; how many.
    mutating func closeIdle(now: Int64 = MonotonicClock.millis()) -> Int {
        let idle = held.filter { $0.idleUntil <= now }
        held.removeAll { $0.idleUntil <= now }
        idle.forEach { $0.waiting.release() }
        return idle.count
    }

    var nextDeadline: Int64? {
        let now = MonotonicClock.millis()
        return (held.map(\.idleUntil) + held.map(\.recheckAt).filter { $0 > now }
                + held.filter { $0.waits == .rate }.map(\.due)).min()
    }
}

/// The first bytes of an agent connection, as localauthd decides on them: a pure function
/// of the bytes, so that nothing a client writes is read twice in two ways.
enum AgentPeek {
    /// uint32 1, SSH_AGENTC_REQUEST_IDENTITIES (11).
    static let requestIdentities: [UInt8] = [0, 0, 0, 1, 11]

    enum Kind: Equatable {
        /// Not enough to tell yet.
        case notYet
        /// A whole REQUEST_IDENTITIES frame first.
        case requestIdentities
        /// Anything else: the helper reads and judges it.
        case message
    }

    static func classify(_ bytes: [UInt8]) -> Kind {
        guard bytes.count >= 4 else {
            return bytes.elementsEqual(requestIdentities.prefix(bytes.count)) ? .notYet : .message
        }
        guard bytes.prefix(4).elementsEqual(requestIdentities.prefix(4)) else { return .message }
        guard bytes.count >= 5 else { return .notYet }
        return bytes[4] == requestIdentities[4] ? .requestIdentities : .message
    }
}
