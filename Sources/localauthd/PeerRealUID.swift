#if canImport(Glibc)
import Glibc
#endif
import CLinux

extension Peer {
    /// The Peer, with its real uid when it is root (`Uid:`'s first field in
    /// /proc/PID/status). Read through the pid the pidfd pins, and kept only when the pidfd's
    /// process still runs after the read: the pid cannot have been reused in between, so the
    /// status read was the peer's. A peer that is not root is not read (its effective uid is
    /// its share, and an application's preflight would pay for the read).
    static func withRealUID(_ cred: la_peer_cred, pidfd: Int32, source: String) -> Result<Peer, Problem> {
        guard cred.uid == 0 else {
            return .success(Peer(uid: cred.uid, realUID: cred.uid, pid: cred.pid, pidfd: pidfd, source: source))
        }
        guard let real = realUID(of: cred.pid), stillRuns(pidfd) else {
            close(pidfd)
            return .failure(Problem(text: "pid \(cred.pid) (uid \(cred.uid)) ended before its request was taken"))
        }
        return .success(Peer(uid: cred.uid, realUID: real, pid: cred.pid, pidfd: pidfd, source: source))
    }
}
