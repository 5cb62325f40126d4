/// What is remembered about one user between authentications.
public struct UserState: Equatable, Sendable {
    /// Failed matches since the last match or password, across prompts, services, restarts.
    public var consecutiveFailures = 0
    /// The last successful password authentication (the `authsucc` line), if any.
    public var lastPasswordAt: Timestamp?
    /// The last fingerprint match, and where (terminal or seat), for the reuse window.
    public var lastFingerprintAt: Timestamp?
    public var lastFingerprintTerminal: String?
    /// The boot during which the password was last entered (Apple: password after restart).
    public var bootID: String?
    /// The settings switch: fingerprint login turned on by the user.
    public var optedIn = false
    /// The enrolled set's domain state that fingerprints are trusted for (recorded when the
    /// switch is turned on, or when the password is entered if no switch is required).
    public var trustedDomainState: String?
    /// Wrong passwords the helper checked itself (from a peer that is not root) since the last right
    /// one: kept for the log and `status`, never a reason to refuse the password.
    public var passwordFailures = 0
    /// Root's own records for "who can be at the reader" (PresenceRule's remote-login rule):
    /// the newest remote login of the user (sshd's account phase, or a remote logind session
    /// seen open), how it came (one word: the remote host, `ssh`, `logind`), and the newest
    /// local unlock (a finger at a virtual console, the greeter or the lock screen, or the
    /// password typed here, not in a login from elsewhere). Written only by root's helper: logind's
    /// `LockedHint` and `IdleHint` are the user's own to set, these are not.
    public var lastRemoteLoginAt: Timestamp?
    public var lastRemoteLoginFrom: String?
    public var lastLocalUnlockAt: Timestamp?
    /// The same two events on CLOCK_BOOTTIME with their boot (nil in files written before):
    /// what orders them, where the wall clock may have been set back in between.
    public var lastRemoteLoginBoot: BootStamp?
    public var lastLocalUnlockBoot: BootStamp?

    public init() {}

    /// The newest remote login, when it is not older than the newest local unlock
    /// (PresenceRule's rule 5). `now` and `boot`: the wall clock and the boot id of the caller.
    /// The safe answer, where the order is in doubt, is the remote login (the password):
    /// - in one boot, CLOCK_BOOTTIME orders them (never set back; a tie counts as remote);
    /// - an event of the running boot is newer than any of an earlier boot's;
    /// - otherwise the wall clock, where an unlock stamped later than `now` (the clock set
    ///   back since, by hand, by NTP, from a wrong RTC) orders nothing: a remote login after
    ///   the step would look older than it, and lift the rule.
    public func remoteLoginSinceUnlock(now: Timestamp, boot: String?) -> Timestamp? {
        guard let remote = lastRemoteLoginAt else { return nil }
        guard let unlock = lastLocalUnlockAt else { return remote }
        let r = lastRemoteLoginBoot, u = lastLocalUnlockBoot
        if let r, let u, r.bootID == u.bootID { return r.millis >= u.millis ? remote : nil }
        if let boot, let r, r.bootID == boot { return remote }   // the unlock was in an earlier boot
        if let boot, let r, let u, u.bootID == boot, r.bootID != boot { return nil }
        if unlock > now { return remote }
        return remote >= unlock ? remote : nil
    }

    /// The most recent successful authentication of either kind.
    public var lastSuccessAt: Timestamp? {
        switch (lastPasswordAt, lastFingerprintAt) {
        case let (p?, f?): return max(p, f)
        case let (p, f): return p ?? f
        }
    }
}

/// A user's state as read from the store.
public enum StoredState: Equatable, Sendable {
    /// No file: a user never seen.
    case fresh
    case state(UserState)
    /// The file exists but cannot be trusted (corrupt, truncated, a symlink, wrong owner
    /// or mode). It never unlocks anything: fingerprints are refused until the password.
    case damaged(cause: String)

    /// The state to build on: fresh and damaged start from empty.
    public var userState: UserState {
        if case .state(let s) = self { return s }
        return UserState()
    }
}
