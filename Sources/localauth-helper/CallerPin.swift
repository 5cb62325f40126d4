#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

/// The calling process, held by a pidfd while presence is judged. A pid alone names whatever
/// process has it at the moment it is read: a caller killed mid-request (its own sudo, by the
/// user) could leave its pid to a process in another session. The pidfd stays bound to the
/// caller: it is the connection's peer's own, which localauthd handed over with the
/// connection (ServicePeer), and after every fact is read it says whether the caller still
/// runs, so no fact was read about a successor.
struct CallerPin {
    private let fd: Int32

    /// nil when the pid cannot be pinned, or is not the caller's any more.
    init?(caller pid: Int32) {
        guard let inherited = ServicePeer.pidfd(for: pid) else { return nil }
        self.fd = inherited
    }

    /// The pidfd, for a wait that ends when the caller does (it polls readable then).
    var descriptor: Int32 { fd }

    /// Whether the pinned process still runs (a pidfd polls readable once it has exited).
    var stillRunning: Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 0
    }

    func close() { Glibc.close(fd) }
}
