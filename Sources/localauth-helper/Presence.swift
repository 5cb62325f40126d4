#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LogindClient

/// Whether a person can be at the reader: the facts for PresenceRule, gathered from the
/// request, /proc and logind, then the older terminal checks (`require_presence`). Every
/// refusal goes straight to the password; only "also signed in remotely" is told to the
/// person (Authenticate), everything else is in the log line.
enum Presence {
    struct Verdict {
        var refusal: EvaluationError?
        /// Ends the wait for a finger when the vouching session is locked, idle or left.
        var watch: WakeSource?
        /// Where the prompt is: a match at the machine itself is a local unlock (RemoteLogins).
        var place: CallerPlace?
    }

    static func judge(_ request: HelperRequest, options: Options, log: LogSink) -> Verdict {
        if case .anotherMachine(let rhost) = request.origin {
            return Verdict(refusal: EvaluationError(.notInteractive, reason: .remoteSession,
                                            cause: "remote host \(LogWords.short(rhost))"))
        }
        guard let subject = Subject(request) else {
            return Verdict(refusal: EvaluationError(.notInteractive, reason: .noSession,
                                            cause: "the calling process could not be pinned (it ended, or is not the caller)"))
        }
        defer { subject.pin.close() }
        if let agent = subject.polkit, agent.bySocket {
            log.log(.info, "polkit's agent helper runs on a connection from its agent: judged for pid \(agent.pid), the peer of its stdin")
        }
        let terminal = terminalFacts(request, subject)
        let gathered = gather(request, subject, terminal, options, log: log)
        if let refusal = PresenceRule.refusal(gathered.facts) { return Verdict(refusal: refusal) }
        if gathered.facts.vouching == .logindAbsent {
            log.log(.info, "logind is not running: whether someone is at the reader is judged from the terminal and PAM_RHOST only")
        }
        // An installed screen locker is a graphical program by what it is: its environment
        // need not name a display (kscreenlocker's greeter gets kwin's socket as WAYLAND_SOCKET).
        if gathered.facts.caller != .screenLocker,
           let refusal = terminalRefusal(terminal, subject, options: options, log: log) {
            return Verdict(refusal: refusal)
        }
        // Every fact above was read about the pinned process, not a later one with its pid.
        guard subject.pin.stillRunning else {
            return Verdict(refusal: EvaluationError(.systemCancel, cause: "the calling process ended while presence was judged"))
        }
        guard subject.polkit?.stillRunning ?? true else {
            return Verdict(refusal: EvaluationError(.systemCancel, cause: "the polkit agent ended while presence was judged"))
        }
        return Verdict(refusal: nil,
                       watch: gathered.hints?.watch(lockAndIdle: PresenceRule.watchesLockAndIdle(gathered.facts)),
                       place: gathered.facts.caller)
    }

    /// The process whose place and session count: the caller, or for polkit's agent helper
    /// the agent that started it (polkitd asks the agent registered for the subject).
    struct Subject {
        let pid: Int32
        let pin: CallerPin
        let polkit: PolkitAgent?
        let stat: ProcStat

        init?(_ request: HelperRequest) {
            guard let caller = request.callerPID, caller > 0,
                  let pin = CallerPin(caller: caller) else { return nil }
            let agent = PolkitAgent.of(request)
            let pid = agent?.pid ?? caller
            // A socket-activated agent helper's parent is the service manager: its own
            // facts stand in (no terminal), and the rule finds no agent.
            guard let stat = ProcStat(pid: pid > 1 ? pid : caller) else {
                pin.close()
                return nil
            }
            self.pid = pid
            self.pin = pin
            self.polkit = agent
            self.stat = stat
        }
    }

    private struct Gathered {
        var facts: PresenceFacts
        var hints: LogindHints?
    }

    /// sd-login's facts first, with logind's bus hints taken as harmless: a caller refused on
    /// those alone (SSH, a service, another user's session) never touches a bus. Then the
    /// hints (locked, idle, the lid), one round trip, and the rule again with them.
    private static func gather(_ request: HelperRequest, _ subject: Subject, _ terminal: TerminalRule.Facts,
                               _ options: Options, log: LogSink) -> Gathered {
        var place = TerminalRule.place(terminal)
        if place == .userWithoutTerminal, ScreenLockerCaller.of(request) != nil { place = .screenLocker }
        let uid = getpwnam(request.user.value).map { UInt32($0.pointee.pw_uid) }
        var facts = PresenceFacts(vouching: vouching(subject, terminal, place), caller: place, user: uid,
                                  lidClosed: options.lidClosed, console: consoleNumber(subject.stat.terminal))
        if facts.vouching == .logindAbsent, place == .console { facts.foregroundConsole = foregroundConsole() }
        // The place as the rule checks it (a VT claimed, PresenceRule.place): what is watched
        // and recorded as a local unlock below is that one.
        facts.caller = PresenceRule.place(facts)
        if facts.vouching == .logindAbsent {
            facts.lid = lidClosed(options.lidPath) ? .closed : .open
            facts.remoteLogin = RemoteLogins.fact(request.user, options: options)
            return Gathered(facts: facts)
        }
        if let uid { facts.userSessions = LoginRecords.sessions(of: uid).map(LoginRecords.record(of:)) }
        // A remote session open now is a remote login now: recorded, so that the rule still
        // holds once it has ended, for whatever it left behind.
        if let remote = facts.userSessions.first(where: { $0.reachesFromElsewhere }) {
            _ = RemoteLogins.recordLogin(request.user, from: "logind-session-\(remote.id)", options: options, log: log)
        }
        facts.remoteLogin = RemoteLogins.fact(request.user, options: options)
        facts.vouching = facts.vouching.with(locked: false, idle: false)
        if PresenceRule.refusal(facts) != nil { return Gathered(facts: facts) }
        let hints = LogindHints(address: options.dbusAddress, timeoutSeconds: options.busTimeout,
                                session: facts.vouching.session?.id, log: log)
        facts.vouching = facts.vouching.with(locked: hints.locked, idle: hints.idle)
        facts.lid = hints.lidClosed.map { $0 ? .closed : .open } ?? .unknown(hints.failure ?? "no answer")
        return Gathered(facts: facts, hints: hints)
    }

    /// The terminal's facts for TerminalRule: the subject's controlling terminal, and on
    /// root's path only the caller's own and what PAM_TTY names (a user's word about its
    /// terminal counts for nothing).
    static func terminalFacts(_ request: HelperRequest, _ subject: Subject?) -> TerminalRule.Facts {
        let rootPath = request.terminalOwner == nil
        var callerTerminal: UInt64?
        var ttyDevice: UInt64?
        if rootPath, let pid = request.callerPID, pid > 0 {
            callerTerminal = ProcStat(pid: pid)?.terminal
            var st = stat()
            if callerTerminal == 0, let path = request.ttyDevicePath, stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFCHR {
                ttyDevice = UInt64(st.st_rdev)
            }
        }
        return TerminalRule.Facts(
            subjectTerminal: subject?.stat.terminal ?? 0,
            polkitAgent: subject?.polkit.map { $0.isTheDesktops ? .desktops : .other },
            rootPath: rootPath, callerUID: request.callerUID, callerTerminal: callerTerminal,
            ttyNamesDevice: request.ttyDevicePath != nil, ttyDevice: ttyDevice,
            stdinTTY: request.stdinTTY, display: request.display)
    }

    static func vouching(_ subject: Subject, _ terminal: TerminalRule.Facts, _ place: CallerPlace) -> Vouching {
        guard LoginRecords.logindRuns else { return .logindAbsent }
        if subject.polkit != nil && subject.pid <= 1 {
            return .nobody("polkit's agent helper has no agent process (socket-activated)")
        }
        switch LoginRecords.session(of: subject.pid) {
        case .session(let id): return .callerSession(LoginRecords.record(of: id))
        case .failed(let why): return .nobody("logind could not say which session the caller is in: \(why)")
        case .none: break
        }
        if let manager = LoginRecords.userUnit(of: subject.pid) {
            guard let display = LoginRecords.displaySession(of: manager.uid) else {
                return .nobody("the caller runs in \(LogWords.short(manager.unit)) of uid \(manager.uid)'s manager, "
                               + "and that user has no display session")
            }
            return .displaySession(LoginRecords.record(of: display))
        }
        // Root's greeter authenticates before pam_systemd gives it a session: the person is
        // whoever sits at seat0, in front of its active session.
        if place == .rootWithoutTerminal, TerminalRule.greeterShaped(terminal) {
            guard let active = LoginRecords.activeSession(of: "seat0") else { return .nobody("seat0 has no active session") }
            return .seatSession(LoginRecords.record(of: active))
        }
        // Root's login on the virtual console in front (a getty's, before its session).
        if let console = TerminalRule.foregroundLogin(terminal, place: place,
                                                      foreground: place == .console ? foregroundConsole() : nil) {
            return .foregroundConsole(console)
        }
        return .nobody("the caller is in no login session and not in a user manager (a service, cron, a container)")
    }

    /// The older checks, kept where logind runs too: a script, `sudo -S`, a polkit agent
    /// with neither terminal nor display, where `require_presence` asks for someone there.
    static func terminalRefusal(_ terminal: TerminalRule.Facts, _ subject: Subject, options: Options,
                                log: LogSink) -> EvaluationError? {
        guard options.requirePresence else { return nil }
        if let agent = subject.polkit { return agent.refusal(log: log) }
        guard let why = TerminalRule.nobodyThere(terminal) else { return nil }
        return EvaluationError(.notInteractive, reason: .noTerminal, cause: why)
    }

    static func consoleNumber(_ device: UInt64) -> Int? { TerminalRule.consoleNumber(device) }

    /// The virtual console in front, as the kernel says (`tty2`).
    static func foregroundConsole() -> Int? {
        let fd = open("/sys/class/tty/tty0/active", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 3 else { return nil }
        let text = buffer[0..<n].prefix { $0 != UInt8(ascii: "\n") }
        guard text.starts(with: "tty".utf8) else { return nil }
        return Int(String(decoding: text.dropFirst(3), as: UTF8.self))
    }

    /// ACPI's lid state file says `state:      closed`: where logind does not run to ask.
    static func lidClosed(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return false }
        return String(decoding: buffer[0..<n], as: UTF8.self).includes("closed")
    }
}

extension Vouching {
    func with(locked: Bool?, idle: Bool?) -> Vouching {
        func filled(_ s: LogindSession) -> LogindSession {
            var s = s
            s.locked = locked
            s.idle = idle
            return s
        }
        switch self {
        case .callerSession(let s): return .callerSession(filled(s))
        case .displaySession(let s): return .displaySession(filled(s))
        case .seatSession(let s): return .seatSession(filled(s))
        case .logindAbsent, .foregroundConsole, .nobody: return self
        }
    }
}

/// What logind says about a process's session type, for the question "is a display there"
/// (x11, wayland) about a peer that is not root.
enum LoginSession {
    static func type(of pid: Int32) -> String? {
        guard LoginRecords.logindRuns, case .session(let id) = LoginRecords.session(of: pid) else { return nil }
        return LoginRecords.type(of: id)
    }
}
