#if canImport(Glibc)
import Glibc
#endif

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
///    at this prompt; root's own callers are exempt: they are the lock screen and the greeter;
///    so is the user's installed screen locker while its session IS locked, below);
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
///
/// The user's installed screen locker (`CallerPlace.screenLocker`: Plasma's, ScreenLocker's
/// list) asking while its session is locked gets the scan: the person who wakes a locked
/// screen is the one it asks, as for root's lock screens. Everything else holds as for any
/// program of the user: the session local, on a seat, active and the user's own (rule 3),
/// and since a remote login of the user can start such a program too, rules 4 and 5 refuse
/// it (`drivableRemotely`); a match there is no local unlock (`atTheMachine`) and it never
/// wins the reader (LockScreenRule: not root's). Unlocked, it is any program of the user.
public enum PresenceRule {
    /// Whether the wait for a finger ends when the vouching session becomes locked or idle:
    /// not for root's callers (they are the lock screen and the greeter), nor for the user's
    /// screen locker asking while its session is locked (it asks because it is).
    public static func watchesLockAndIdle(_ facts: PresenceFacts) -> Bool {
        if facts.caller == .rootWithoutTerminal { return false }
        return !(facts.caller == .screenLocker && facts.vouching.session?.locked == true)
    }

    /// Why no finger may be asked for, or nil when one may.
    public static func refusal(_ facts: PresenceFacts) -> EvaluationError? {
        var facts = facts
        facts.caller = place(facts)
        if let refusal = lidRefusal(facts) { return refusal }
        return vouchingRefusal(facts) ?? remoteLoginRefusal(facts)
    }

    /// Where the caller is, once its claim to a virtual console is checked. A VT as controlling
    /// terminal is the machine's own keyboard and screen (rules 4 and 5 spare it) only when
    /// the session that vouches is a local one on a seat, the user's own, and that VT is its
    /// terminal: a device node proves nothing by itself. A process of the user's remote login
    /// (or one it left in the user's manager) can open a VT the user owns from an earlier
    /// console login and make it its controlling terminal; it is then a terminal like any
    /// pseudo-terminal (`otherTerminal`): nobody need be looking at it.
    /// Root's `login` on the VT in front, before its session (`foregroundConsole`), is at the
    /// console it names. Where logind does not run there is no session to ask: the VT counts
    /// only while it is the one in front (what the screen shows, so a prompt there is seen
    /// by whoever would touch the reader); one in the background is any terminal.
    public static func place(_ facts: PresenceFacts) -> CallerPlace {
        guard facts.caller == .console else { return facts.caller }
        guard let vt = facts.console else { return .otherTerminal }
        switch facts.vouching {
        case .callerSession(let s):
            let ownConsole = s.remote == false && s.remoteHost.isEmpty && !s.seat.isEmpty
                && s.uid != nil && s.uid == facts.user && (s.vt == vt || s.tty == "tty\(vt)")
            return ownConsole ? .console : .otherTerminal
        case .foregroundConsole(let name):
            return name == "tty\(vt)" ? .console : .otherTerminal
        case .logindAbsent:
            return facts.foregroundConsole == vt ? .console : .otherTerminal
        case .displaySession, .seatSession, .nobody:
            return .otherTerminal
        }
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
        switch RemoteRule.origin(.session(s)) {
        case .remoteSession(.remoteUnknown):
            return no(.remoteSession, "logind could not say whether \(name) is remote")
        case .remoteSession(.remote(let host)):
            return no(.remoteSession, "\(name) is remote\(host.isEmpty ? "" : " (from \(host))")")
        default: break
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
        // The user's screen locker, asking while the session is locked: its screen is the
        // one in front (idle or not: a locked screen is usually idle when it is woken).
        if locked && facts.caller == .screenLocker { return nil }
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
    /// The number of the virtual console that is the caller's controlling terminal (`place`).
    public var console: Int?
    /// The virtual console in front, as the kernel says (read only where logind does not run).
    public var foregroundConsole: Int?

    public init(vouching: Vouching, caller: CallerPlace, user: UInt32?, userSessions: [LogindSession] = [],
                lid: Lid = .open, lidClosed: Options.LidClosedChoice = .password, remoteLogin: RemoteLogin? = nil,
                console: Int? = nil, foregroundConsole: Int? = nil) {
        self.vouching = vouching
        self.caller = caller
        self.user = user
        self.userSessions = userSessions
        self.lid = lid
        self.lidClosed = lidClosed
        self.remoteLogin = remoteLogin
        self.console = console
        self.foregroundConsole = foregroundConsole
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

    /// From a user's state, when the remote login is the newer of the two (UserState orders
    /// them; `now` and `boot`: the caller's wall clock and boot id).
    public init?(_ state: UserState, now: Timestamp, boot: String?) {
        guard let at = state.remoteLoginSinceUnlock(now: now, boot: boot) else { return nil }
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

    /// The session whose hints logind's bus is asked for, and whose lock counts.
    public var session: LogindSession? {
        switch self {
        case .callerSession(let s), .displaySession(let s), .seatSession(let s): return s
        case .logindAbsent, .foregroundConsole, .nobody: return nil
        }
    }
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
    /// Its terminal (`tty3`; empty for none) and virtual console number (nil for none).
    public var tty: String
    public var vt: Int?

    public init(id: String, uid: UInt32?, remote: Bool?, remoteHost: String = "", seat: String,
                sessionClass: String = "user", active: Bool?, locked: Bool? = false, idle: Bool? = false,
                tty: String = "", vt: Int? = nil) {
        self.id = id
        self.uid = uid
        self.remote = remote
        self.remoteHost = remoteHost
        self.seat = seat
        self.sessionClass = sessionClass
        self.active = active
        self.locked = locked
        self.idle = idle
        self.tty = tty
        self.vt = vt
    }

    /// A login someone elsewhere may be using: remote as logind says (or unknown), a remote
    /// host named (loopback too: `ssh -R` tunnels arrive from 127.0.0.1, which logind calls
    /// local), or an interactive session on no seat (sshd, `machinectl shell`).
    public var reachesFromElsewhere: Bool { RemoteRule.origin(.session(self)).fromElsewhere }
}

/// Where the caller's prompt is, as far as it matters for who can drive it.
public enum CallerPlace: Equatable, Sendable, CustomStringConvertible {
    /// Its controlling terminal is a virtual console of this machine (tty1-63), which a local
    /// session of the user on a seat has as its own (`PresenceRule.place`).
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
    /// The user's installed screen locker (ScreenLocker: a root's program of that list,
    /// running as the user with no terminal): a program of the user's as above, except that
    /// PresenceRule lets it scan while its session is locked.
    case screenLocker

    /// Whether a remote login of the same user could have started it or be typing into it.
    public var drivableRemotely: Bool {
        switch self {
        case .otherTerminal, .userWithoutTerminal, .otherAgentDialog, .screenLocker: return true
        case .console, .rootWithoutTerminal, .dialog: return false
        }
    }

    /// The machine's own keyboard and screen, with nothing of the user's in between: a
    /// virtual console, root's greeter or lock screen. A success here is a local unlock.
    public var atTheMachine: Bool {
        switch self {
        case .console, .rootWithoutTerminal: return true
        case .otherTerminal, .userWithoutTerminal, .dialog, .otherAgentDialog, .screenLocker: return false
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
        case .screenLocker: return "the user's screen locker"
        }
    }
}

/// The lid switch. `.open` also when there is none.
public enum Lid: Equatable, Sendable {
    case open
    case closed
    case unknown(String)
}

// MARK: - Is it remote?

/// "Is it remote?", the one rule: where a PAM handle (its PAM_RHOST and PAM_TTY) or a
/// logind session comes from. Pure: the host name is a fact the caller reads
/// (`RemoteRule.handle`), and the tests give it every combination
/// (`Tests/LocalAuthTests/RemoteRuleTests.swift`). The helper's Presence, AuthSucc and
/// RemoteLogins, PresenceRule's sessions and localauthd's RemoteHostAnswer and LogindWatch
/// all ask it.
///
/// * PAM_RHOST empty, `localhost`, the loopback addresses or this machine's own host name
///   (matched whole, ignoring case: sudo's `pam_rhost` flag sets it) is this machine;
///   anything else is another machine, and nobody there can touch the reader.
/// * sshd's handle (PAM_TTY `ssh`) is a login from elsewhere even when PAM_RHOST is this
///   machine: an `ssh -R` tunnel arrives from loopback.
/// * Any PAM_RHOST, loopback included, or PAM_TTY `ssh` makes the handle networked: the
///   account phase there proves no password (a public key passes it after a wrong one).
/// * A logind session someone elsewhere may be using: remote as logind says (or unknown), a
///   remote host named (loopback too: `ssh -R` tunnels arrive from 127.0.0.1, which logind
///   calls local), or an interactive session on no seat (sshd, `machinectl shell`).
public enum RemoteRule {
    /// What there is to judge.
    public enum Signs: Equatable, Sendable {
        /// A PAM handle's PAM_RHOST and PAM_TTY, and this machine's host name (nil when it
        /// cannot be read or is empty: then only the loopback names are this machine).
        case handle(rhost: String, tty: String, hostName: String?)
        case session(LogindSession)
    }

    /// Where the handle or session comes from.
    public static func origin(_ signs: Signs) -> Origin {
        switch signs {
        case .handle(let rhost, let tty, let hostName):
            let thisMachine = ["", "localhost", "127.0.0.1", "::1"].contains(rhost)
                || hostName.map { rhost.lowercased() == $0.lowercased() } ?? false
            if !thisMachine { return .anotherMachine(rhost: rhost) }
            if tty == "ssh" { return .sshd(rhost: rhost) }
            return rhost.isEmpty ? .here : .namesThisMachine(rhost: rhost)
        case .session(let s):
            guard let remote = s.remote else { return .remoteSession(.remoteUnknown) }
            if remote || !s.remoteHost.isEmpty { return .remoteSession(.remote(host: s.remoteHost)) }
            if s.seat.isEmpty && s.sessionClass == "user" { return .remoteSession(.noSeat) }
            return .here
        }
    }

    /// `origin` of a PAM handle, with this machine's host name read now.
    public static func handle(rhost: String, tty: String) -> Origin {
        origin(.handle(rhost: rhost, tty: tty, hostName: hostName()))
    }

    private static func hostName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }
}

/// Where a PAM handle or a logind session comes from (RemoteRule).
public enum Origin: Equatable, Sendable {
    /// Nothing names another place.
    case here
    /// PAM_RHOST names this machine on a handle that is not sshd's (sudo's `pam_rhost`
    /// flag, a loopback address): networked as a handle, but no login from elsewhere.
    case namesThisMachine(rhost: String)
    /// sshd's handle (PAM_TTY `ssh`) whose PAM_RHOST is this machine or empty: `ssh
    /// localhost`, an `ssh -R` tunnel.
    case sshd(rhost: String)
    /// PAM_RHOST names another machine.
    case anotherMachine(rhost: String)
    /// A logind session someone elsewhere may be using.
    case remoteSession(SessionSign)

    public enum SessionSign: Equatable, Sendable {
        /// logind could not say whether it is remote.
        case remoteUnknown
        /// Remote as logind says, or a remote host named (empty: none named).
        case remote(host: String)
        /// An interactive session on no seat.
        case noSeat
    }

    /// PAM_RHOST names another machine: nobody there can touch the reader.
    public var isAnotherMachine: Bool {
        if case .anotherMachine = self { return true }
        return false
    }

    /// A login from elsewhere: another machine, sshd's handle (a loopback tunnel too), a
    /// remote logind session. A success there is no local unlock.
    public var fromElsewhere: Bool {
        switch self {
        case .anotherMachine, .sshd, .remoteSession: return true
        case .here, .namesThisMachine: return false
        }
    }

    /// Why a PAM handle is networked (any PAM_RHOST, loopback included, or sshd's PAM_TTY
    /// `ssh`), in the log's words; nil when it is not.
    public var networked: String? {
        switch self {
        case .anotherMachine, .namesThisMachine: return "PAM_RHOST is set"
        case .sshd(let rhost): return rhost.isEmpty ? "PAM_TTY is ssh" : "PAM_RHOST is set"
        case .here, .remoteSession: return nil
        }
    }
}
