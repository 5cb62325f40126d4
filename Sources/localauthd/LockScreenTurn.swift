#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The lock screen wins the reader (LockScreenRule): the service tells the helpers that lose
/// to end their scan (SIGUSR2; LockScreenSignal in the helper: the try given back, the
/// password next), and holds the lock screen's own request until they have ended, so that
/// its claim does not find the reader still theirs. A held request starts when its losers
/// have been reaped, or after `holdMillis` whatever they do (a helper that is not scanning
/// ignores the signal and ends on its own bounds; the lock screen then finds the reader as
/// it is, and at worst is told it is busy: the password).
struct LockScreenTurn {
    struct Held {
        let waiting: Waiting
        let request: RequestPeek
        let claim: ReaderClaim
        let losers: [pid_t]
        let until: Int64
    }

    private(set) var held: [Held] = []
    static let holdMillis: Int64 = 5000
    static let agentHoldMillis: Int64 = 300

    /// The claim of a request, from the peer and the request (nil: not come yet).
    static func claim(_ peer: Peer, _ request: RequestPeek?) -> ReaderClaim {
        let caller = request?.request.caller
        let user = caller.flatMap { $0.user.isEmpty ? nil : $0.user }
        var claim = ReaderClaim.of(peerUID: UInt32(peer.uid), userName: user,
                                   // The kernel's real uid (read at the accept), not the
                                   // request's word: a setuid program's is its user's.
                                   callerUID: String(peer.realUID), tty: caller?.tty,
                                   display: caller?.display == true,
                                   callerHasTerminal: peer.uid == 0 ? ProcStat(pid: peer.pid).map { $0.terminal != 0 } : nil)
        // Only a lock screen's account is looked up (root's own program, seldom): an
        // application's request names its user by uid, and the two must meet.
        if claim.kind == .lockScreen, let name = claim.userName, let entry = getpwnam(name) {
            claim.uid = UInt32(entry.pointee.pw_uid)
        }
        return claim
    }

    /// Before a helper starts: a lock screen whose user has other scans running tells them to
    /// end and is held (true: the caller keeps the connection open and starts nothing now).
    mutating func holdsBack(_ waiting: Waiting, _ request: RequestPeek, _ claim: ReaderClaim,
                            running: [Worker], log: LogSink) -> Bool {
        let losing = LockScreenRule.losers(to: claim, among: running.map(\.claim)).map { running[$0] }
        let losers = losing.map(\.pid)
        guard !losers.isEmpty else { return false }
        for pid in losers { kill(pid, SIGUSR2) }
        // An ssh-agent connection's helper lives as long as its client's connection, scanning
        // or not: told to end its scan, it is given a moment to release the reader, not
        // waited for to exit.
        let holdFor = losing.allSatisfy(\.agent) ? Self.agentHoldMillis : Self.holdMillis
        log.log(.notice, "a lock screen of \(claim.userName ?? "?") (pid \(waiting.peer.pid)): "
                + "\(losers.count) other running request(s) of that user told to end their scan; it starts once they have")
        held.append(Held(waiting: waiting, request: request, claim: claim, losers: losers,
                         until: MonotonicClock.millis() + holdFor))
        return true
    }

    /// A helper that has started: it remembers its claim, and is told at once to end its scan
    /// when a lock screen of its user runs or waits for its turn.
    func started(_ worker: Worker, _ claim: ReaderClaim, running: [Worker], log: LogSink) -> Worker {
        var worker = worker
        worker.claim = claim
        if LockScreenRule.getsNoScan(claim, among: running.map(\.claim) + held.map(\.claim)) {
            kill(worker.pid, SIGUSR2)
            log.log(.notice, "uid \(worker.uid) helper pid \(worker.pid): no scan, a lock screen of that user is asking")
        }
        return worker
    }

    /// The held requests whose losers have all ended, or whose time is up: theirs to start now.
    mutating func due(running: [Worker]) -> [Held] {
        let now = MonotonicClock.millis()
        let alive = Set(running.map(\.pid))
        let ready = held.filter { $0.until <= now || $0.losers.allSatisfy { !alive.contains($0) } }
        held.removeAll { entry in ready.contains { $0.waiting.connection == entry.waiting.connection } }
        return ready
    }

    /// When the loop must wake to start a held request whose losers have not ended.
    var nextDeadline: Int64? { held.map(\.until).min() }
}
