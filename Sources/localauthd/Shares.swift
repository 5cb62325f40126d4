#if canImport(Glibc)
import Glibc
#endif

/// Whose share of the service a connection counts against (its limit of requests at once,
/// ServiceArguments, and its rate of helper starts, HelperStartRate). A root peer is
/// counted against its REAL uid: sudo, su and polkit's agent helper run as root for the user
/// who invoked them, so each counts toward that user's share, and a user's setuid-shaped
/// program cannot take the slots of root's own callers. Root's pool (uid 0) is left to
/// callers whose real uid is root too: the greeter, login, cron. A peer that is not root is
/// counted by its uid, as it always was.
extension Peer {
    var share: uid_t { uid == 0 ? realUID : uid }

    /// How the peer is named in a line about its share: a root peer counted against a
    /// user's share says so.
    var described: String {
        uid == 0 && realUID != 0 ? "uid \(realUID) (a root peer, pid \(pid))" : "uid \(uid) (pid \(pid))"
    }
}

extension ServiceArguments {
    /// Requests at once for the share `uid` (`Peer.share`).
    func limit(ofShare uid: uid_t) -> Int {
        uid == 0 ? rootLimit : perUserLimit
    }
}
