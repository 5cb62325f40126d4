#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

/// One helper started ahead of the next request (`localauth-helper --service-spare`), so
/// that a caller does not wait for a process to start: loading the helper's libraries and
/// the Swift runtime took a few milliseconds of every sign-in. It waits on a socket pair
/// (fd 0) for its request's connection and peer pidfd (SpareWait in the helper) and knows
/// nothing of any request before that: it reads the configuration, the state and the
/// caller afterwards, as a helper started for the request does, and passes the same checks.
/// Meanwhile it readies what is no request's (`--config`: the bus the service's
/// configuration names, fprintd's readers; the helper's `Ahead`), so that a request's
/// start-up on the bus is ListEnrolledFingers, Claim and VerifyStart.
///
/// Started in the same way as every helper (Worker.spawn: the service's child, its own
/// session, default signals, the fixed environment), so a request served by a spare runs
/// in the same conditions. A spare is used only while the helper's file is the one it was
/// started from (an upgrade replaced it: a new helper is started instead), and one that
/// ended on its own is reaped and not replaced until the next request (no loop of starts).
struct SpareHelper {
    let pid: pid_t
    /// Readable once the spare has exited.
    let pidfd: Int32
    /// The service's end of the socket pair.
    let control: Int32
    /// The helper file's identity when the spare was started.
    let stamp: FileStamp

    static func start(arguments: ServiceArguments) -> Result<SpareHelper, Worker.Problem> {
        guard let stamp = FileStamp(path: arguments.helperPath) else {
            return .failure(Worker.Problem(text: "\(arguments.helperPath): \(String(cString: strerror(errno)))"))
        }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            return .failure(Worker.Problem(text: "socketpair: \(String(cString: strerror(errno)))"))
        }
        defer { close(pair[1]) }
        let devnull = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { if devnull >= 0 { close(devnull) } }
        switch Worker.spawn([arguments.helperPath, "--service-spare", "--config", arguments.configPath],
                            input: pair[1], output: devnull >= 0 ? devnull : nil,
                            pidfd: nil, helperPath: arguments.helperPath) {
        case .success(let started):
            return .success(SpareHelper(pid: started.pid, pidfd: started.pidfd, control: pair[0], stamp: stamp))
        case .failure(let problem):
            close(pair[0])
            return .failure(problem)
        }
    }

    /// Hands the request over; on success the spare is the request's helper (a Worker).
    /// On failure (it ended, or the helper file changed) it is stopped and reaped here, and
    /// the caller starts a helper as before.
    /// `agent`: the connection speaks the ssh-agent protocol (AgentDoor), said by a fifth
    /// line, `ssh-agent`, so that the helper never reads it as a request frame.
    /// `polkit`: what the request's polkit authentication asks (PolkitWatch), as four more
    /// lines `polkit\nACTION\nMESSAGE\nPROGRAM` (PolkitPurpose, cleaned: none holds a newline);
    /// never with `agent`.
    func take(_ held: Waiting, arguments: ServiceArguments, agent: Bool = false, polkit: PolkitPurpose? = nil) -> Worker? {
        guard FileStamp(path: arguments.helperPath) == stamp else {
            discard()
            return nil
        }
        let kind = agent ? "\n\(SpareHelper.agentKind)"
            : polkit.map { "\n" + $0.handoffLines.joined(separator: "\n") } ?? ""
        let text = Array("\(held.peer.uid)\n\(held.peer.pid)\n\(held.acceptedAt)\n\(arguments.configPath)\(kind)".utf8)
        let fds = [held.connection, held.peer.pidfd]
        let sent = text.withUnsafeBytes { raw in
            fds.withUnsafeBufferPointer { la_send_fds(control, raw.baseAddress, raw.count, $0.baseAddress, 2) }
        }
        guard sent == text.count else {
            discard()
            return nil
        }
        close(control)
        return Worker(pid: pid, pidfd: pidfd, uid: held.peer.uid, share: held.peer.share, agent: agent)
    }

    /// The handoff's fifth line for an ssh-agent connection (SpareWait's `agentKind`).
    static let agentKind = "ssh-agent"

    /// Lets the spare go (it sees the end of file and exits) and reaps it.
    func discard() {
        close(control)
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        close(pidfd)
    }

    /// A spare that ended on its own (seen through its pidfd): reaped.
    func reap() {
        close(control)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) < 0 && errno == EINTR {}
        close(pidfd)
    }
}
