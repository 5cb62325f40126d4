#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

/// The calling process, held by a pidfd while presence is judged. A pid alone names whatever
/// process has it at the moment it is read: a caller killed mid-request (its own sudo, by the
/// user) could leave its pid to a process in another session. The pidfd stays bound to the
/// caller; once it is open, the pid is checked to belong to the caller (our parent where the
/// module started us; through localauthd the pidfd is the peer's own), and after every fact is read, the pidfd
/// says whether the caller still runs, so no fact was read about a successor.
struct CallerPin {
    private let fd: Int32

    /// nil when the pid cannot be pinned, or is not the caller's any more.
    init?(caller pid: Int32) {
        // Through localauthd the caller is the connection's peer, whose pidfd came with us.
        if let inherited = ServicePeer.pidfd(for: pid) {
            self.fd = inherited
            return
        }
        if ServicePeer.isServicePeer { return nil }
        let fd = la_pidfd_open(pid)
        guard fd >= 0 else { return nil }
        guard getppid() == pid else {
            Glibc.close(fd)
            return nil
        }
        self.fd = fd
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
