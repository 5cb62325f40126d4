#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

/// A peer that is polkit's agent helper, and its agent: the process whose pending
/// authentication the helper answers (PolkitWatch names it).
///
/// The peer is pinned (its pidfd): a root process running the system's
/// `polkit-agent-helper-1` (RootOwned: a root's file in root's directories, the very file it
/// runs). Its agent is its parent, which starts it for one authentication and writes it the
/// cookie. polkit 127 and later may start the helper from a socket instead
/// (polkit-agent-helper.socket, `Accept=yes`): its parent is then the service manager and
/// the agent is the peer of its stdin, taken only when that stdin was accepted on polkit's
/// agent helper socket (`polkit_agent_socket`), as the request's helper judges it
/// (PolkitAgent): any other socket a user leaves on the setuid helper's stdin names no agent,
/// and the parent is the agent then.
enum PolkitAgentHelper {
    enum Agent: Equatable {
        case process(Int32)
        /// Its stdin is no connection from an agent and its parent is pid 1 (or 0): its agent
        /// ended.
        case noParentAgent
    }

    static let executableName = "polkit-agent-helper-1"

    /// nil when the peer is not polkit's agent helper (or ended, or its agent could not be
    /// read for certain). `agentSocket`: the configuration's `polkit_agent_socket`.
    static func agent(of peer: Peer, agentSocket: String) -> Agent? {
        guard peer.uid == 0, let exe = RootOwned.installedProgram(of: peer.pid),
              exe.hasSuffix("/\(executableName)"),
              let parent = ProcStat(pid: peer.pid)?.parent else { return nil }
        // A connection from polkit's agent helper socket on its stdin first (the service
        // manager that started it is no agent), as the request's helper judges it.
        if let agent = peerOfStandardInput(peer, agentSocket: agentSocket) { return agent }
        guard parent > 1 else { return .noParentAgent }
        // The parent pinned, then the peer's parent read again while the peer is pinned: had
        // the agent ended before the pidfd was open, the peer would have another parent now.
        let pin = la_pidfd_open(parent)
        guard pin >= 0 else { return nil }
        defer { close(pin) }
        guard ProcStat(pid: peer.pid)?.parent == parent, Peer.stillRuns(peer.pidfd) else { return nil }
        return .process(parent)
    }

    /// The process at the other end of the peer's stdin, when that is a connection accepted
    /// on polkit's agent helper socket, as the kernel recorded it at connect(2), and still
    /// running (its pidfd, SO_PEERPIDFD).
    private static func peerOfStandardInput(_ peer: Peer, agentSocket: String) -> Agent? {
        let input = la_pidfd_getfd(peer.pidfd, 0)
        guard input >= 0 else { return nil }
        defer { close(input) }
        var cred = la_peer_cred()
        guard la_socket_domain(input) == AF_UNIX, SocketPath.local(of: input) == agentSocket,
              la_socket_peer_cred(input, &cred) == 0, cred.pid > 1 else { return nil }
        let pin = la_socket_peer_pidfd(input)
        guard pin >= 0 else { return nil }
        defer { close(pin) }
        guard Peer.stillRuns(pin), Peer.stillRuns(peer.pidfd) else { return nil }
        return .process(cred.pid)
    }
}
