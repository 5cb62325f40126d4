#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

/// Who is on the other end of a connection, from the kernel: the uid and pid SO_PEERCRED
/// recorded at connect(2), and a pidfd of that process, which the request's helper pins as
/// its caller (CallerPin). Never a pid or uid the peer writes.
struct Peer {
    let uid: uid_t
    /// The real uid of a root peer (sudo's, su's, polkit's agent helper's: the invoking
    /// user's), read through the pinned pid (PeerRealUID.swift); for any other peer its
    /// `uid`. Which share it counts against (Shares.swift), never what it may ask.
    let realUID: uid_t
    let pid: Int32
    /// Owned by the Peer until handed to the helper.
    let pidfd: Int32
    /// How the pidfd was had: "SO_PEERPIDFD" (the kernel's, since Linux 6.5) or
    /// "pidfd_open" (older kernels, with the checks below).
    let source: String

    struct Problem: Error { let text: String }

    static func of(_ connection: Int32, pinByPID: Bool = false) -> Result<Peer, Problem> {
        // The moment of accept, before anything is read about the pid: a process that
        // started later cannot be the one that connected.
        let acceptedAt = bootTicks()
        var cred = la_peer_cred()
        guard la_socket_peer_cred(connection, &cred) == 0, cred.pid > 0 else {
            return .failure(Problem(text: "no peer credentials: \(String(cString: strerror(errno)))"))
        }
        if pinByPID { return pinned(cred, notAfter: acceptedAt) }
        let pidfd = la_socket_peer_pidfd(connection)
        if pidfd >= 0 { return withRealUID(cred, pidfd: pidfd, source: "SO_PEERPIDFD") }
        switch errno {
        case ENOPROTOOPT, ENODATA: return pinned(cred, notAfter: acceptedAt)
        case EINVAL, ESRCH: return .failure(Problem(text: "pid \(cred.pid) (uid \(cred.uid)) ended before its request was taken"))
        case let e: return .failure(Problem(text: "SO_PEERPIDFD: \(String(cString: strerror(e)))"))
        }
    }

    /// Before Linux 6.5 (Debian 12's 6.1) the pid alone: a pidfd opened now names whichever
    /// process has the pid now. It is the peer's when that process runs as the peer's uid
    /// and started no later than the connection was accepted (a pid reused after the peer
    /// ended belongs to a later process).
    private static func pinned(_ cred: la_peer_cred, notAfter acceptedAt: UInt64) -> Result<Peer, Problem> {
        let pidfd = la_pidfd_open(cred.pid)
        guard pidfd >= 0 else {
            return .failure(Problem(text: "pid \(cred.pid) (uid \(cred.uid)) ended before its request was taken"))
        }
        guard let stat = ProcStat(pid: cred.pid), stat.startTime <= acceptedAt,
              realUID(of: cred.pid) == cred.uid else {
            close(pidfd)
            return .failure(Problem(text: "pid \(cred.pid) is not provably the peer (uid \(cred.uid)) that connected"))
        }
        return withRealUID(cred, pidfd: pidfd, source: "pidfd_open")
    }

    /// CLOCK_BOOTTIME in clock ticks, the unit of /proc/PID/stat's start time.
    private static func bootTicks() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        let hz = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        return UInt64(now.tv_sec) * hz + UInt64(now.tv_nsec) * hz / 1_000_000_000
    }

    /// The `Uid:` line's first (real) id in /proc/PID/status.
    static func realUID(of pid: Int32) -> uid_t? {
        guard let ids = ProcField.value("Uid", in: "/proc/\(pid)/status"),
              let first = ids.split(whereSeparator: { $0 == "\t" || $0 == " " }).first else { return nil }
        return uid_t(first)
    }
}
