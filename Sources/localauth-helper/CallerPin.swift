#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The calling process, held by a pidfd while presence is judged. A pid alone names whatever
/// process has it at the moment it is read: a caller killed mid-request (its own sudo, by the
/// user) could leave its pid to a process in another session. The pidfd stays bound to the
/// caller; once it is open, the pid is checked to belong to the caller (our parent on root's
/// path; the launcher's parent on the launcher's), and after every fact is read, the pidfd
/// says whether the caller still runs, so no fact was read about a successor.
struct CallerPin {
    private let fd: Int32

    /// nil when the pid cannot be pinned, or is not the caller's any more.
    init?(caller pid: Int32, viaLauncher: Bool) {
        let fd = la_pidfd_open(pid)
        guard fd >= 0 else { return nil }
        guard Self.isCaller(pid, viaLauncher: viaLauncher) else {
            Glibc.close(fd)
            return nil
        }
        self.fd = fd
    }

    /// The caller started us: on root's path it is our parent (the module forks and execs
    /// the helper); through the launcher it is the parent of the launcher process(es) above
    /// us, which wait for us and so still show their real parent.
    private static func isCaller(_ pid: Int32, viaLauncher: Bool) -> Bool {
        var above = getppid()
        guard viaLauncher else { return above == pid }
        // The launcher, and the child it may have forked to lead a session of its own.
        for _ in 0..<2 {
            guard let stat = ProcStat(pid: above) else { return false }
            if stat.parent == pid { return true }
            above = stat.parent
        }
        return false
    }

    /// Whether the pinned process still runs (a pidfd polls readable once it has exited).
    var stillRunning: Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 0
    }

    func close() { Glibc.close(fd) }
}
