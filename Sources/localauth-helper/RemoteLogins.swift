#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// Root's records for PresenceRule's rule 5, in the user's state file (only root writes it):
/// the newest remote login and the newest local unlock. logind's `LockedHint` and `IdleHint`
/// are the user's own to set, and a remote session that has ended leaves nothing in logind,
/// so what a remote login may have left behind is judged from these.
///
/// * A remote login is recorded (RemoteLoginRecord) by localauthd as logind announces the
///   session, by sshd's account phase (`account optional pam_localauth.so`: `mode=authsucc
///   proof=account` on a networked handle), and whenever a request sees a remote logind
///   session of the user open.
/// * A local unlock is a finger at the machine itself (a virtual console, the greeter, the lock
///   screen: `CallerPlace.atTheMachine`), or a proven password on a handle that is no login
///   from elsewhere (AuthSucc): whoever types the password has all the password gives anyway.
enum RemoteLogins {
    /// The fact for the rule, or nil (the guard off, nothing recorded, an unlock since).
    static func fact(_ user: UserName, options: Options) -> RemoteLogin? {
        guard options.remoteLoginGuard else { return nil }
        guard case .state(let state)? = try? FileStateStore(directory: options.stateDir).load(user) else { return nil }
        return RemoteLogin(state, now: SystemClock().now(), boot: LinuxSystem().bootID())
    }

    /// A remote login now, `from` one word (a host, `ssh`, a logind session): nil once
    /// recorded, else why not.
    static func recordLogin(_ user: UserName, from: String, options: Options, log: LogSink) -> String? {
        switch RemoteLoginRecord.record(user, from: from, stateDir: options.stateDir) {
        case .recorded: return nil
        case .skipped(let why): return "remote login of \(user) not recorded: \(why)"
        case .failed(let error):
            log.log(.error, "the remote login of \(user) could not be recorded: \(error)")
            return "could not be recorded: \(error)"
        }
    }

    /// What the account phase recorded: `said` goes into the result's cause.
    struct AccountPhase {
        let recorded: Bool
        let said: String
    }

    /// The account phase (`mode=authsucc proof=account`) of a login from elsewhere is
    /// recorded by AuthSucc, as PasswordProofRule.remoteLogin says.
}

extension HelperRequest {
    /// Where the handle comes from, as the one remote rule judges it (RemoteRule): its
    /// PAM_RHOST and PAM_TTY.
    var origin: Origin { RemoteRule.handle(rhost: rhost, tty: tty) }
}
