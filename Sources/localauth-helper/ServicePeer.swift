#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import Synchronization

/// The peer's pidfd that localauthd passes on fd 3: taken from the connection itself
/// (SO_PEERPIDFD) or pinned at accept (Peer.swift), it is the caller CallerPin holds on
/// this path. The caller is not the helper's parent here, so no parent check can stand in.
enum ServicePeer {
    static let descriptor: Int32 = 3
    /// The pid the pidfd on fd 3 refers to, once adopted; 0 when not started by the service.
    private static let adopted = Atomic<Int32>(0)

    /// True when fd 3 is a pidfd of `pid` (its fdinfo's `Pid:` line; a pidfd of a process
    /// that ended says -1 there, and is refused).
    static func adopt(pid: Int32) -> Bool {
        guard pidOfDescriptor() == pid else { return false }
        adopted.store(pid, ordering: .relaxed)
        return true
    }

    /// A new descriptor of the peer's pidfd, when `pid` is the adopted peer.
    static func pidfd(for pid: Int32) -> Int32? {
        guard pid > 0, adopted.load(ordering: .relaxed) == pid else { return nil }
        let fd = fcntl(descriptor, F_DUPFD_CLOEXEC, 4)
        return fd >= 0 ? fd : nil
    }

    private static func pidOfDescriptor() -> Int32? {
        ProcField.value("Pid", in: "/proc/self/fdinfo/\(descriptor)").flatMap { Int32($0) }
    }
}
