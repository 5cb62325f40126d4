#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth
import LogindClient

/// polkit's authentication agents (pkttyagent, GNOME's and KDE's dialogs, the agent run0 and
/// systemctl start) run the setuid `polkit-agent-helper-1`, which runs the `polkit-1` stack
/// with pipes on stdin and stdout and an emptied environment: the helper's own stdin and
/// display never show anyone. Who can be at the reader is a question about the agent, the
/// agent helper's parent: polkitd asks only the agent registered for the subject's session
/// or process, so the agent's session is the subject's (Presence asks logind about it).
///
/// polkit 127 and later start the agent helper from a socket instead
/// (polkit-agent-helper.socket, Accept=yes): the agent connects, the service manager runs
/// the helper on that connection, and the agent is the peer of the helper's stdin, while
/// its parent is the service manager.
struct PolkitAgent {
    /// `polkit_agent_socket`, set once the configuration is read (main.swift).
    nonisolated(unsafe) static var helperSocket = Options().polkitAgentSocket

    let pid: Int32
    /// True when the agent was found at the other end of the helper's socket.
    let bySocket: Bool
    /// A pidfd of the agent, held while presence is judged: the facts read by its pid must
    /// be about it, not about a process that took the pid after it ended (Presence checks
    /// `stillRunning` once they are read). The helper serves one request; it ends with it.
    private let pin: Int32

    /// The agent of this request, looked for once: the helper serves one request, and
    /// every part that asks (presence, the messages, the dialog's ticket) must see the same
    /// agent without repeating the lookup's system calls.
    static func of(_ request: HelperRequest) -> PolkitAgent? {
        if let memo = found, memo.caller == request.callerPID { return memo.agent }
        let agent = PolkitAgent(request)
        found = (request.callerPID, agent)
        return agent
    }

    nonisolated(unsafe) private static var found: (caller: Int32?, agent: PolkitAgent?)?

    /// The agent, when the caller is polkit's agent helper (whatever directory the system
    /// keeps it in). Only on the root path: polkit's agent helper runs as root.
    private init?(_ request: HelperRequest) {
        guard request.terminalOwner == nil, let caller = request.callerPID, caller > 0,
              Self.executable(of: caller)?.hasSuffix("/polkit-agent-helper-1") == true else { return nil }
        if let agent = Self.peerOfStandardInput(of: caller) {
            (pid, pin) = agent
            bySocket = true
            return
        }
        guard let parent = ProcStat(pid: caller)?.parent else { return nil }
        // The parent pinned, then the caller's parent read again: had the agent ended
        // before the pidfd was open, the caller would have been handed to another parent.
        let pin = parent > 1 ? la_pidfd_open(parent) : -1
        guard parent <= 1 || (pin >= 0 && ProcStat(pid: caller)?.parent == parent) else {
            if pin >= 0 { close(pin) }
            return nil
        }
        pid = parent
        self.pin = pin
        bySocket = false
    }

    /// Whether the agent still runs: false once its pidfd says it ended (or none is held
    /// for a real agent). pid 0 or 1 is no agent, and has nothing to outlive.
    var stillRunning: Bool {
        guard pid > 1 else { return true }
        guard pin >= 0 else { return false }
        var p = pollfd(fd: pin, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 0
    }

    /// The process at the other end of `caller`'s stdin when that is a connection accepted
    /// on polkit's agent helper socket, as the kernel recorded it at connect(2). Any other
    /// socket on stdin counts for nothing: a user who runs the setuid helper with stdin
    /// connected to some desktop process's socket (the session bus) must not get that
    /// process judged as the agent. Only through localauthd, which passed the caller's
    /// pidfd: a helper the module starts inside the socket-activated agent helper shares
    /// its sandbox (a read-only file system: no try could be counted), so there the agent
    /// stays unfound and the password is asked.
    /// The agent is pinned by the pidfd the kernel took at its connect(2) (SO_PEERPIDFD,
    /// Linux 6.5; polkit 127 came later): without one, no agent is found.
    private static func peerOfStandardInput(of caller: Int32) -> (pid: Int32, pin: Int32)? {
        guard let pidfd = ServicePeer.pidfd(for: caller) else { return nil }
        defer { close(pidfd) }
        let input = la_pidfd_getfd(pidfd, 0)
        guard input >= 0 else { return nil }
        defer { close(input) }
        var cred = la_peer_cred()
        guard la_socket_domain(input) == AF_UNIX, SocketPath.local(of: input) == helperSocket,
              la_socket_peer_cred(input, &cred) == 0, cred.pid > 0 else { return nil }
        let pin = la_socket_peer_pidfd(input)
        guard pin >= 0 else { return nil }
        return (cred.pid, pin)
    }

    /// With `require_presence`: why nobody can be at the reader for this agent beyond what
    /// logind already said (PresenceRule), or nil when someone can.
    func refusal(log: LogSink) -> EvaluationError? {
        // pid 1 (or 0): an agent helper started by the service manager for a socket
        // (polkit-agent-helper.socket), whose agent is not its parent.
        guard pid > 1 else {
            return EvaluationError(.notInteractive, reason: .noTerminal,
                           cause: "polkit's agent helper has no agent process (socket-activated)")
        }
        guard !LoginRecords.logindRuns else { return nil }
        // Without logind: what the module reports for other callers, asked of the agent.
        log.log(.info, "no logind: presence for polkit from the agent's terminal and display (pid \(pid))")
        if let stat = ProcStat(pid: pid), stat.terminal != 0 { return nil }
        if Self.namesDisplay(pid) { return nil }
        return EvaluationError(.notInteractive, reason: .noTerminal,
                       cause: "the polkit agent (pid \(pid)) has no terminal and no graphical session")
    }

    /// The desktop's own agent (GNOME Shell's, Plasma's, one its session starts), judged
    /// only from what root or the service manager put in place, never from a file under the
    /// user's /run/user/UID (the user can add or remove files there, and a file missing there,
    /// or hidden from this sandbox, reads the same as one never made):
    /// - its executable is a program the system installed (RootOwned.installedProgram): a
    ///   root's file in root's directories, not an interpreter, whose script could be anyone's;
    /// - and it runs in a logind session's own scope, or in a service of the user's manager
    ///   whose name an installed unit file carries (InstalledUserUnit): systemd makes no
    ///   transient unit under such a name, so it is never what `systemd-run --user` started
    ///   from a remote login. Read from the agent's cgroup (/proc/PID/cgroup, sd-login).
    /// Anything else is another agent: one in a scope (a terminal's shell, `systemd-run --user
    /// --scope`), in a transient unit, in a unit the user wrote, or a script; any program of
    /// the user's, a remote login's included, can register an agent there.
    /// What this cannot tell: the cgroups of the user's manager are delegated to the user,
    /// who can move a process of theirs into another of their own units; someone holding
    /// the user's account from elsewhere can so dress an installed agent program up as the
    /// desktop's. What stops a remote login's agent is rule 5 of PresenceRule
    /// (remote_login_guard); this names the prompt for it.
    var isTheDesktops: Bool {
        guard RootOwned.installedProgram(of: pid) != nil else { return false }
        if case .session = LoginRecords.session(of: pid) { return true }
        guard let (unit, _) = LoginRecords.userUnit(of: pid) else { return false }
        return InstalledUserUnit.file(for: unit) != nil
    }

    private static func executable(of pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// DISPLAY or WAYLAND_DISPLAY, not empty, in the agent's environment (as the module
    /// looks at the application's).
    private static func namesDisplay(_ pid: Int32) -> Bool {
        let fd = open("/proc/\(pid)/environ", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return bytes.split(separator: 0).contains { entry in
            for name in ["DISPLAY=", "WAYLAND_DISPLAY="] where entry.starts(with: name.utf8) {
                if entry.count > name.utf8.count { return true }
            }
            return false
        }
    }
}
