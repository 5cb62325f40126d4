/// Root's record of a user's newest remote login, for PresenceRule's rule 5: kept in the
/// user's state file (only root writes it), so it outlives the login itself, a restart of
/// localauthd and a reboot. Written by the helper (sshd's account phase, a remote session
/// seen open during a request) and by localauthd as logind announces each new session.
///
/// Only users who already have a state file get one: a user without has never used the
/// finger here, and their first finger needs the password first anyway (PolicyRules).
public enum RemoteLoginRecord {
    public enum Outcome: Equatable, Sendable {
        case recorded
        /// Nothing written, and why (no state yet, a damaged state): neither needs it.
        case skipped(String)
        /// The store failed: the rule may miss this login.
        case failed(String)
    }

    /// A remote login of `user` now, `from` one word (a host, `ssh`, a logind session).
    /// Synced: it tightens, and lost to a power cut it would give the finger back.
    public static func record(_ user: UserName, from: String, stateDir: String,
                              now: Timestamp = SystemClock().now()) -> Outcome {
        let boot = BootStamp.now(bootID: LinuxSystem().bootID())
        var skipped: String?
        do {
            try FileStateStore(directory: stateDir).update(user, durability: .synced) { stored in
                guard case .state(var state) = stored else {
                    skipped = stored == .fresh ? "no state yet (the finger has never been used)"
                                               : "the state is damaged (the finger needs the password anyway)"
                    return nil
                }
                state.lastRemoteLoginAt = now
                state.lastRemoteLoginBoot = boot
                state.lastRemoteLoginFrom = LogWords.word(from)
                return state
            }
        } catch {
            return .failed("\(error)")
        }
        return skipped.map { .skipped($0) } ?? .recorded
    }
}
