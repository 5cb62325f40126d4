/// "Who is at the reader": whether the person at this machine's reader can be the person
/// authenticating, with nobody else driving the request. Pure: the helper gathers the facts
/// from logind (sd-login and logind's bus API, `Sources/LogindClient`), this decides, and the
/// tests give it every combination (`Tests/LocalAuthTests/PresenceRuleTests.swift`).
///
/// A scan needs, in this order:
/// 1. the lid open, unless the administrator says the reader is elsewhere (`lid_closed = scan`);
/// 2. a session that vouches for the caller (`Vouching`): its own, or for a caller in its
///    user's manager (desktop terminals, GNOME's polkit agent) that user's display session;
/// 3. that session local, on a seat and the seat's active one, its user the one
///    authenticated, not locked and not idle (a locked or idle session's person is not looking
///    at this prompt; root's own callers are exempt: they are the lock screen and the greeter);
/// 4. while the user also has a remote session open, a caller no remote person can drive: a
///    virtual console, root's own greeter or lock screen, a desktop's polkit dialog. A
///    pseudo-terminal (tmux, screen, a desktop terminal, `systemd-run --user --pty`) or a
///    program the user started without a terminal could be typed into or started from that
///    remote login.
/// 5. while root's records show a remote login of the user newer than the user's last local
///    unlock (`remote_login_guard`, default on), a caller at the machine itself: a virtual
///    console, or root's own greeter or lock screen. A remote login may have left something
///    behind that outlives it (its own polkit agent, a timer's job, a cleared `LockedHint`),
///    and only root's records of the unlock that followed are the user's own word that
///    someone is back at the machine. Where logind does not run, this rule holds too.
/// Any question logind could not answer is a "no". Where logind does not run, only the lid
/// and rule 5 count here; the terminal and PAM_RHOST checks of the helper decide the rest.
public enum PresenceRule {
    /// Why no finger may be asked for, or nil when one may.
    public static func refusal(_ facts: PresenceFacts) -> EvaluationError? {
        if let refusal = lidRefusal(facts) { return refusal }
        return vouchingRefusal(facts) ?? remoteLoginRefusal(facts)
    }

    static func vouchingRefusal(_ facts: PresenceFacts) -> EvaluationError? {
        switch facts.vouching {
        case .logindAbsent, .foregroundConsole:
            return nil
        case .nobody(let why):
            return EvaluationError(.notInteractive, reason: .noSession, cause: why)
        case .seatSession(let session):
            return sessionRefusal(session, facts, requireSameUser: false)
        case .callerSession(let session), .displaySession(let session):
            return sessionRefusal(session, facts, requireSameUser: true)
                ?? remoteSessionRefusal(facts, vouching: session)
        }
    }

    /// Rule 5: a remote login newer than the last local unlock, and a caller that is not at
    /// the machine itself. A desktop's dialog counts as not at the machine here: the agent
    /// that shows it is the user's own program, which a remote login can start.
    static func remoteLoginRefusal(_ facts: PresenceFacts) -> EvaluationError? {
        guard let remote = facts.remoteLogin, !facts.caller.atTheMachine else { return nil }
        let unlock = remote.lastUnlock.map { "the last local unlock at \($0)" } ?? "no local unlock recorded"
        return no(.remoteLoginSinceUnlock, "the user signed in remotely (\(remote.from)) at \(remote.at), "
                  + "\(unlock), and the caller (\(facts.caller.description)) could be driven from that login")
    }

    static func lidRefusal(_ facts: PresenceFacts) -> EvaluationError? {
        guard facts.lidClosed == .password else { return nil }
        switch facts.lid {
        case .open: return nil
        case .closed: return EvaluationError(.biometryNotAvailable, reason: .lidClosed, cause: "the lid is closed")
        case .unknown(let why):
            return EvaluationError(.biometryNotAvailable, reason: .lidClosed, cause: "whether the lid is closed is not known: \(why)")
        }
    }

    static func sessionRefusal(_ s: LogindSession, _ facts: PresenceFacts, requireSameUser: Bool) -> EvaluationError? {
        let name = "logind session \(s.id)"
        guard let remote = s.remote else { return no(.remoteSession, "logind could not say whether \(name) is remote") }
        if remote || !s.remoteHost.isEmpty {
            return no(.remoteSession, "\(name) is remote\(s.remoteHost.isEmpty ? "" : " (from \(s.remoteHost))")")
        }
        if s.seat.isEmpty { return no(.notActive, "\(name) is on no seat") }
        guard s.active == true else { return no(.notActive, "\(name) is not the active one on \(s.seat)") }
        // A greeter authenticates whoever sits down; every other session vouches for its user only.
        let greeter = facts.caller == .rootWithoutTerminal && s.sessionClass == "greeter"
        if requireSameUser && !greeter {
            guard let uid = s.uid, let user = facts.user, uid == user else {
                return no(.otherUser, "\(name) belongs to uid \(s.uid.map(String.init) ?? "?"), "
                          + "not to the user authenticated (uid \(facts.user.map(String.init) ?? "?"))")
            }
        }
        // The lock screen and the greeter are root's own callers: the person who wakes a
        // locked or idle screen is the one they ask.
        guard facts.caller != .rootWithoutTerminal else { return nil }
        guard let locked = s.locked else { return no(.sessionLocked, "logind could not say whether \(name) is locked") }
        if locked { return no(.sessionLocked, "\(name) is locked") }
        guard let idle = s.idle else { return no(.sessionIdle, "logind could not say whether \(name) is idle") }
        if idle { return no(.sessionIdle, "\(name) is idle") }
        return nil
    }

    /// A caller that someone elsewhere could be driving, while the user has a remote session.
    static func remoteSessionRefusal(_ facts: PresenceFacts, vouching: LogindSession) -> EvaluationError? {
        guard facts.caller.drivableRemotely else { return nil }
        let remote = facts.userSessions.filter { $0.id != vouching.id && $0.reachesFromElsewhere }
        guard let first = remote.first else { return nil }
        let also = remote.count > 1 ? " and \(remote.count - 1) more" : ""
        return no(.remoteSessionOpen, "the user also has remote logind session \(first.id)\(also) open, "
                  + "and the caller (\(facts.caller.description)) could be driven from it")
    }

    private static func no(_ reason: EvaluationError.Reason, _ cause: String) -> EvaluationError {
        EvaluationError(.notInteractive, reason: reason, cause: cause)
    }
}

/// Everything the rule needs, gathered by the helper for one request.
public struct PresenceFacts: Equatable, Sendable {
    public var vouching: Vouching
    public var caller: CallerPlace
    /// The uid of the account being authenticated; nil when it has no entry.
    public var user: UInt32?
    /// Every logind session of that uid (for "also signed in remotely").
    public var userSessions: [LogindSession]
    public var lid: Lid
    public var lidClosed: Options.LidClosedChoice
    /// Root's record of a remote login newer than the last local unlock (rule 5); nil when
    /// there is none or `remote_login_guard` is off.
    public var remoteLogin: RemoteLogin?

    public init(vouching: Vouching, caller: CallerPlace, user: UInt32?, userSessions: [LogindSession] = [],
                lid: Lid = .open, lidClosed: Options.LidClosedChoice = .password, remoteLogin: RemoteLogin? = nil) {
        self.vouching = vouching
        self.caller = caller
        self.user = user
        self.userSessions = userSessions
        self.lid = lid
        self.lidClosed = lidClosed
        self.remoteLogin = remoteLogin
    }
}

/// A remote login of the user that no local unlock has followed (root's state file).
public struct RemoteLogin: Equatable, Sendable {
    public var at: Timestamp
    /// How it came, one word (`ssh`, a host, `logind`).
    public var from: String
    public var lastUnlock: Timestamp?

    public init(at: Timestamp, from: String, lastUnlock: Timestamp?) {
        self.at = at
        self.from = from
        self.lastUnlock = lastUnlock
    }

    /// From a user's state, when the remote login is the newer of the two.
    public init?(_ state: UserState) {
        guard let at = state.remoteLoginSinceUnlock else { return nil }
        self.init(at: at, from: state.lastRemoteLoginFrom ?? "?", lastUnlock: state.lastLocalUnlockAt)
    }
}

/// The session whose person is taken to be at the reader.
public enum Vouching: Equatable, Sendable {
    /// logind is not running (containers, no systemd).
    case logindAbsent
    /// The caller's own session (`sd_pid_get_session`).
    case callerSession(LogindSession)
    /// The caller is in no session but in its user's manager (`sd_pid_get_user_unit`): that
    /// user's display session (`sd_uid_get_display`), as polkit decides for such processes.
    case displaySession(LogindSession)
    /// Root's greeter (a login manager's worker, before `pam_systemd` gives it a session):
    /// the active session of the seat it shows on.
    case seatSession(LogindSession)
    /// Root's `login` on a virtual console that is the one in front (`/sys/class/tty/tty0/active`),
    /// in no session yet: whoever types there is at the machine.
    case foregroundConsole(String)
    /// Nothing vouches, with why (in no session and not in a user manager, a user manager
    /// whose user has no display session, a question sd-login could not answer).
    case nobody(String)
}

/// What logind says about one session. nil: logind could not say.
public struct LogindSession: Equatable, Sendable {
    public var id: String
    public var uid: UInt32?
    public var remote: Bool?
    public var remoteHost: String
    /// Empty: on no seat.
    public var seat: String
    /// `user`, `greeter`, `lock-screen`, `background`, ...
    public var sessionClass: String
    /// The seat's active session.
    public var active: Bool?
    /// `LockedHint` and `IdleHint`, from logind's bus API (not in sd-login).
    public var locked: Bool?
    public var idle: Bool?

    public init(id: String, uid: UInt32?, remote: Bool?, remoteHost: String = "", seat: String,
                sessionClass: String = "user", active: Bool?, locked: Bool? = false, idle: Bool? = false) {
        self.id = id
        self.uid = uid
        self.remote = remote
        self.remoteHost = remoteHost
        self.seat = seat
        self.sessionClass = sessionClass
        self.active = active
        self.locked = locked
        self.idle = idle
    }

    /// A login someone elsewhere may be using: remote as logind says (or unknown), a remote
    /// host named (loopback too: `ssh -R` tunnels arrive from 127.0.0.1, which logind calls
    /// local), or an interactive session on no seat (sshd, `machinectl shell`).
    public var reachesFromElsewhere: Bool {
        if remote != false || !remoteHost.isEmpty { return true }
        return seat.isEmpty && sessionClass == "user"
    }
}

/// Where the caller's prompt is, as far as it matters for who can drive it.
public enum CallerPlace: Equatable, Sendable, CustomStringConvertible {
    /// Its controlling terminal is a virtual console of this machine (tty1-63).
    case console
    /// A pseudo-terminal or another line (tmux, screen, ssh, a desktop terminal, a serial line).
    case otherTerminal
    /// Root's own program with no terminal: a login manager's worker, GNOME's lock screen.
    case rootWithoutTerminal
    /// polkit's agent helper for an agent with no terminal: the desktop's own dialog (an
    /// installed program in the session's scope, or in a service of the user's manager that
    /// an installed unit file names).
    case dialog
    /// polkit's agent helper for any other agent with no terminal: one started in a scope, a
    /// transient unit or a unit the user wrote (`systemd-run --user`, a terminal's shell), or
    /// a script, which a remote login can do.
    case otherAgentDialog
    /// A program the user started with no terminal (a screen locker that runs as the user,
    /// sudo with an askpass program, an application).
    case userWithoutTerminal

    /// Whether a remote login of the same user could have started it or be typing into it.
    public var drivableRemotely: Bool {
        switch self {
        case .otherTerminal, .userWithoutTerminal, .otherAgentDialog: return true
        case .console, .rootWithoutTerminal, .dialog: return false
        }
    }

    /// The machine's own keyboard and screen, with nothing of the user's in between: a
    /// virtual console, root's greeter or lock screen. A success here is a local unlock.
    public var atTheMachine: Bool {
        switch self {
        case .console, .rootWithoutTerminal: return true
        case .otherTerminal, .userWithoutTerminal, .dialog, .otherAgentDialog: return false
        }
    }

    public var description: String {
        switch self {
        case .console: return "a virtual console"
        case .otherTerminal: return "a pseudo-terminal"
        case .rootWithoutTerminal: return "root's program with no terminal"
        case .dialog: return "a polkit dialog"
        case .otherAgentDialog: return "a polkit agent that is not the desktop's own"
        case .userWithoutTerminal: return "the user's program with no terminal"
        }
    }
}

/// The lid switch. `.open` also when there is none.
public enum Lid: Equatable, Sendable {
    case open
    case closed
    case unknown(String)
}
