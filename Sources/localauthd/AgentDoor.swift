#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The ssh-agent door: `/run/localauth/ssh-agent` (localauth-ssh-agent.socket, or
/// `--agent-listen PATH`), one for every user. Its peers are pinned as the main socket's
/// are (Peer.swift), and each connection goes at once, unread, to a helper of its own that
/// speaks the ssh-agent protocol until the client closes (AgentMode in the helper): ssh
/// opens its agent connection before it needs it, so there is no request to wait for here.
///
/// Agent connections have a limit and a rate of their own per user, apart from the
/// requests' (Shares.swift, RateLimit.swift): a user's `git fetch` in a loop, or many
/// forwarded sessions, never takes the slots their `sudo` needs, and never more than
/// `perUserLimit` root helpers of theirs serve the agent at once.
struct AgentDoor {
    let listener: Listener
    let perUserLimit: Int
    /// Helper starts per user; more than the requests' rate, since `ssh-add -L`, `git
    /// fetch` and an editor's git integration open connections without a person behind
    /// each one (none of them scans before its own evaluation's rules say so).
    private var rate: HelperStartRate

    init(listener: Listener, perUserLimit: Int) {
        self.listener = listener
        self.perUserLimit = perUserLimit
        rate = HelperStartRate(userBurst: 32, userPerSecond: 16)
    }

    /// Why a pinned peer's agent connection gets no helper, nil when it gets one. Counted
    /// by the peer's own uid: an ssh-agent peer is served for its uid's keys, whatever its
    /// real uid.
    mutating func refusal(_ peer: Peer, running: [Worker]) -> String? {
        let already = running.filter { $0.agent && $0.uid == peer.uid }.count
        if already >= perUserLimit {
            return "\(already) agent connections of this user are served already (the limit)"
        }
        // Root's agent connections (root's own ssh) are a user's: a share of their own.
        guard rate.take(share: peer.uid == 0 ? uid_t.max - 1 : peer.uid) else {
            return "over its rate of agent connections (32 at once, 16 a second)"
        }
        return nil
    }
}
