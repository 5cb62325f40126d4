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
        if pinByPID { return pinned(connection, cred, notAfter: acceptedAt) }
        let pidfd = la_socket_peer_pidfd(connection)
        if pidfd >= 0 { return withRealUID(cred, pidfd: pidfd, source: "SO_PEERPIDFD") }
        switch errno {
        case ENOPROTOOPT, ENODATA: return pinned(connection, cred, notAfter: acceptedAt)
        case EINVAL, ESRCH: return .failure(Problem(text: "pid \(cred.pid) (uid \(cred.uid)) ended before its request was taken"))
        case let e: return .failure(Problem(text: "SO_PEERPIDFD: \(String(cString: strerror(e)))"))
        }
    }

    /// Before Linux 6.5 (Debian 12's 6.1) the pid alone: a pidfd opened now names whichever
    /// process has the pid now. It is the peer's when that process
    /// * runs with the uid SO_PEERCRED recorded, which is the *effective* uid at connect(2):
    ///   sudo, su and polkit's agent helper are setuid, their real uid is the user's;
    /// * started no later than the connection was accepted (a process started later cannot
    ///   have connected);
    /// * holds the other end of this very connection: a descriptor of the peer socket's
    ///   inode, which the kernel's socket diagnostics name (a pid reused by another process
    ///   after the peer ended, even one that started earlier, holds no such descriptor);
    /// * and still runs after all of this was read, so every fact was read of the process the
    ///   pidfd holds, not of a successor with the same pid.
    private static func pinned(_ connection: Int32, _ cred: la_peer_cred, notAfter acceptedAt: UInt64) -> Result<Peer, Problem> {
        let pidfd = la_pidfd_open(cred.pid)
        guard pidfd >= 0 else {
            return .failure(Problem(text: "pid \(cred.pid) (uid \(cred.uid)) ended before its request was taken"))
        }
        var peerInode: UInt = 0
        guard la_unix_peer_inode(connection, &peerInode) == 0 else {
            let why = String(cString: strerror(errno))
            close(pidfd)
            return .failure(Problem(text: "pid \(cred.pid) (uid \(cred.uid)): the connection's other end is unknown (socket diagnostics: \(why))"))
        }
        // The `Uid:` line read once: its effective id proves the peer, its real id is the
        // share (Shares.swift).
        guard let stat = ProcStat(pid: cred.pid), stat.startTime <= acceptedAt,
              let ids = uids(of: cred.pid), ids.count >= 2, ids[1] == cred.uid,
              ProcessSockets.holds(pid: cred.pid, inode: peerInode),
              stillRuns(pidfd) else {
            close(pidfd)
            return .failure(Problem(text: "pid \(cred.pid) is not provably the peer (uid \(cred.uid)) that connected"))
        }
        return .success(Peer(uid: cred.uid, realUID: ids[0], pid: cred.pid, pidfd: pidfd, source: "pidfd_open"))
    }

    /// A pidfd polls readable once its process has exited.
    static func stillRuns(_ pidfd: Int32) -> Bool {
        var p = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 0
    }

    /// CLOCK_BOOTTIME in clock ticks, the unit of /proc/PID/stat's start time.
    static func bootTicks() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        let hz = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        return UInt64(now.tv_sec) * hz + UInt64(now.tv_nsec) * hz / 1_000_000_000
    }

    /// The `Uid:` line's first (real) id in /proc/PID/status.
    static func realUID(of pid: Int32) -> uid_t? {
        uids(of: pid)?.first
    }

    /// The `Uid:` line's ids: real, effective, saved, file system.
    private static func uids(of pid: Int32) -> [uid_t]? {
        guard let ids = ProcField.value("Uid", in: "/proc/\(pid)/status") else { return nil }
        let words = ids.split(whereSeparator: { $0 == "\t" || $0 == " " }).compactMap { uid_t($0) }
        return words.isEmpty ? nil : words
    }
}
