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
/// `perUserLimit` connections of theirs are held or served at once. Over the rate, a
/// connection whose message is for a helper waits here (held, and counted against the
/// limit) until its user's next start: `ssh-keygen -Y sign` for each commit of a long
/// `git rebase` inside a key's reuse window is answered a little later, never cut off
/// (a closed agent connection kills it with SIGPIPE). Only the limit refuses.
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
        /// Its next message is for a helper (left unread): it waits for its user's rate.
        var forHelper = false
        /// When its user's rate allows the next start (0: not waiting yet).
        var due: Int64 = 0
    }

    init(listener: Listener, perUserLimit: Int, startBurst: Int = 64, startsPerSecond: Int = 32) {
        self.listener = listener
        self.perUserLimit = perUserLimit
        self.startBurst = startBurst
        self.startsPerSecond = max(1, startsPerSecond)
        rate = HelperStartRate(userBurst: startBurst, userPerSecond: max(1, startsPerSecond))
    }

    /// Why a pinned peer's new connection is refused, nil when it is taken. Counted by the
    /// peer's own uid (an ssh-agent peer is served its uid's keys, whatever its real uid):
    /// the helpers serving its connections and the connections held here.
    func refusal(_ peer: Peer, running: [Worker]) -> String? {
        let already = running.filter { $0.agent && $0.uid == peer.uid }.count
            + held.filter { $0.waiting.peer.uid == peer.uid }.count
        return already >= perUserLimit ? "\(already) agent connections of this user are open already (the limit)" : nil
    }

    /// Its own share of agent starts: root's own ssh is a user's here.
    private static func share(_ peer: Peer) -> uid_t { peer.uid == 0 ? uid_t.max - 1 : peer.uid }

    /// The connections whose message is for a helper that their user's rate lets start now,
    /// in the order they came: taken out of `held`. The others stay held, `due` when their
    /// user's next start is; `began` are those that began to wait just now (a log line).
    mutating func takeDue(now: Int64 = MonotonicClock.millis()) -> (start: [Waiting], began: [Waiting]) {
        var start: [Waiting] = [], began: [Waiting] = []
        var spent: Set<uid_t> = []
        var i = 0
        while i < held.count {
            guard held[i].forHelper else { i += 1; continue }
            let share = Self.share(held[i].waiting.peer)
            if !spent.contains(share), rate.take(share: share, now: now) {
                start.append(held.remove(at: i).waiting)
                continue
            }
            spent.insert(share)   // the ones behind wait too: first come, first started
            if held[i].due == 0 { began.append(held[i].waiting) }
            held[i].due = rate.nextToken(share: share, now: now)
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
        // end is watched (POLLHUP and POLLERR come unasked).
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
                + held.filter(\.forHelper).map(\.due)).min()
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
