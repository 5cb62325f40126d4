/// "The lock screen wins the reader." Pure: localauthd sees every request, tells each one's
/// claim on the reader (`ReaderClaim.of`) from what it knows of it, and this decides which
/// running requests lose; the service does the signalling (`Sources/localauthd/LockScreenTurn.swift`),
/// the tests give it every combination (`Tests/LocalAuthTests/LockScreenRuleTests.swift`).
///
/// The person who wakes a locked screen touches the reader to unlock it. Another request of
/// the same user that scans at that moment -- a `sudo` or an application started from a
/// session whose `LockedHint` the user's own code cleared (`SetLockedHint` is allowed to the
/// session's user), or anything else started while the screen was locked -- would take that
/// touch for itself. So:
/// 1. a lock-screen request (a greeter's or a lock screen's: root's own program, no terminal)
///    ends every other running scan of its user: each gives its try back and ends in the
///    password, never a success;
/// 2. another request of that user while the lock screen's runs gets no scan: a session that
///    looks unlocked while its user's lock screen is asking is a contradiction, not an unlock.
/// Two lock-screen requests of one user leave each other alone (a greeter's conversation
/// started again), so one that only looks like a lock screen cannot end the real one.
public enum LockScreenRule {
    /// Indices into `running` of the requests `new` ends.
    public static func losers(to new: ReaderClaim, among running: [ReaderClaim]) -> [Int] {
        guard new.kind == .lockScreen else { return [] }
        return running.indices.filter { running[$0].kind == .other && sameUser(running[$0], new) }
    }

    /// Whether `new` gets no scan: a lock-screen request of its user runs.
    public static func getsNoScan(_ new: ReaderClaim, among running: [ReaderClaim]) -> Bool {
        new.kind == .other && running.contains { $0.kind == .lockScreen && sameUser($0, new) }
    }

    /// The same account: by name where both names are known (root's callers), by uid where
    /// both uids are. A request whose user is not known yet (a root peer that has not written
    /// its request) counts as every user's: the safe side is the password.
    static func sameUser(_ a: ReaderClaim, _ b: ReaderClaim) -> Bool {
        if a.userName == nil && a.uid == nil || b.userName == nil && b.uid == nil { return true }
        if let x = a.userName, let y = b.userName, x == y { return true }
        if let x = a.uid, let y = b.uid, x == y { return true }
        return false
    }
}

/// One request's claim on the reader, as localauthd can tell it before a helper runs.
public struct ReaderClaim: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// A greeter or a lock screen: root's own program (real and effective uid 0) with no
        /// controlling terminal, showing on a virtual console (PAM_TTY) or a display -- the
        /// shape the helper's presence rule spares the lock and idle hints (TerminalRule.greeterShaped).
        case lockScreen
        /// Everything else: sudo, su, login, polkit's agent helper, an application, a screen
        /// locker that runs as the user (its requests are the user's own program's, which
        /// the user's other code can imitate; it gains nothing here).
        case other
    }

    public var kind: Kind
    /// The account authenticated as a root peer's request names it (PAM_USER).
    public var userName: String?
    /// The account's uid: a peer that is not root is served for its own uid only.
    public var uid: UInt32?

    public init(kind: Kind, userName: String?, uid: UInt32?) {
        self.kind = kind
        self.userName = userName
        self.uid = uid
    }

    /// What the service knows: the peer's (effective) uid from the kernel; the rest from the
    /// request, which only a root peer's module wrote with authority (a peer that is not
    /// root is never a lock screen here, and its account is its uid, whatever it names).
    /// `callerHasTerminal`: the peer process's controlling terminal (/proc), nil unknown.
    public static func of(peerUID: UInt32, userName: String?, callerUID: String?, tty: String?, display: Bool,
                          callerHasTerminal: Bool?) -> ReaderClaim {
        guard peerUID == 0 else { return ReaderClaim(kind: .other, userName: nil, uid: peerUID) }
        let shaped = callerUID == "0" && callerHasTerminal == false
            && (display || tty.map(isVirtualConsoleName) == true)
        return ReaderClaim(kind: shaped && userName != nil ? .lockScreen : .other, userName: userName, uid: nil)
    }

    /// `tty1`...`tty63` or `/dev/tty1`...: the names PAM_TTY gives a virtual console.
    static func isVirtualConsoleName(_ tty: String) -> Bool {
        let name = tty.hasPrefix("/dev/") ? String(tty.dropFirst(5)) : tty
        guard name.hasPrefix("tty"), let n = Int(name.dropFirst(3)), String(n) == String(name.dropFirst(3)) else {
            return false
        }
        return (1...63).contains(n)
    }
}
