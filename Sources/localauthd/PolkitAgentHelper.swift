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
/// (polkit-agent-helper.socket): its parent is then pid 1, and nothing is named (the agent
/// is at the other end of the helper's stdin, which localauthd does not read); an agent
/// helper whose agent ended was handed to pid 1 too.
enum PolkitAgentHelper {
    enum Agent: Equatable {
        case process(Int32)
        /// Its parent is pid 1 (or 0): started for a socket, or its agent ended.
        case noParentAgent
    }

    static let executableName = "polkit-agent-helper-1"

    /// nil when the peer is not polkit's agent helper (or ended, or its parent could not be
    /// read for certain).
    static func agent(of peer: Peer) -> Agent? {
        guard peer.uid == 0, let exe = RootOwned.installedProgram(of: peer.pid),
              exe.hasSuffix("/\(executableName)"),
              let parent = ProcStat(pid: peer.pid)?.parent else { return nil }
        guard parent > 1 else { return .noParentAgent }
        // The parent pinned, then the peer's parent read again while the peer is pinned: had
        // the agent ended before the pidfd was open, the peer would have another parent now.
        let pin = la_pidfd_open(parent)
        guard pin >= 0 else { return nil }
        defer { close(pin) }
        guard ProcStat(pid: peer.pid)?.parent == parent, Peer.stillRuns(peer.pidfd) else { return nil }
        return .process(parent)
    }
}
