#if canImport(Glibc)
import Glibc
#endif
import CSystemd
import LocalAuth

/// Whether a person can be at the reader. Every refusal here goes straight to the
/// password without a message (only the log says why): scripts, cron, `sudo -S`, SSH and a
/// closed laptop must never wait for a finger nobody can give.
enum Presence {
    static func refusal(_ request: HelperRequest, options: Options, log: LogSink) -> LAError? {
        if request.isRemote {
            return LAError(.notInteractive, reason: .remoteSession, cause: "remote host \(printable(request.rhost))")
        }
        var session = LoginSession.facts(of: request.callerPID)
        if session == .noSession, greeterShaped(request) {
            // A login manager's worker authenticates before pam_systemd puts it in a session:
            // the person is whoever sits at seat0, in front of its active session.
            session = LoginSession.activeSession(ofSeat: "seat0")
        }
        if let refusal = LoginSessionRule.refusal(session) { return refusal }
        if session == .logindAbsent {
            log.log(.info, "logind is not running: whether someone is at the reader is judged from the terminal and PAM_RHOST only")
        }
        if let agent = PolkitAgent(request) {
            if let refusal = agent.refusal(requirePresence: options.requirePresence, log: log) { return refusal }
        } else if options.requirePresence, let why = nobodyThere(request) {
            return LAError(.notInteractive, reason: .noTerminal, cause: why)
        }
        if !options.lidExternalReader && lidClosed(options.lidPath) {
            return LAError(.biometryNotAvailable, reason: .lidClosed, cause: "the lid is closed (\(options.lidPath))")
        }
        return nil
    }

    /// A text conversation reads the terminal the application runs on; a graphical one
    /// shows a dialog. Neither: a script. A terminal named but stdin elsewhere: the password
    /// comes from a pipe (`sudo -S`, `echo … | su`) -- unless the terminal is a virtual
    /// console and the caller has no controlling terminal at all: a greeter (GDM on Wayland
    /// names its VT in PAM_TTY and no display), whose screen is that console.
    static func nobodyThere(_ request: HelperRequest) -> String? {
        if request.stdinTTY { return nil }
        if greeterOnConsole(request) { return nil }
        if request.ttyDevicePath != nil {
            return "the conversation does not read the terminal (password from a pipe)"
        }
        return request.display ? nil : "no terminal and no graphical session"
    }

    /// A login manager's worker (GDM, LightDM, SDDM): run by root, no controlling terminal,
    /// on a virtual console (PAM_TTY) or a display. Never on the launcher path.
    static func greeterShaped(_ request: HelperRequest) -> Bool {
        guard request.terminalOwner == nil, request.callerUID == 0, let pid = request.callerPID,
              pid > 0, ProcStat(pid: pid)?.terminal == 0 else { return false }
        return greeterOnConsole(request) || request.display
    }

    /// PAM_TTY is a virtual console (major 4, minor 1-63: on the machine's own screen and
    /// keyboard) and the root caller has no controlling terminal. Not on the launcher path,
    /// where the caller's word about its terminal counts for nothing.
    static func greeterOnConsole(_ request: HelperRequest) -> Bool {
        guard request.terminalOwner == nil, let path = request.ttyDevicePath,
              let pid = request.callerPID, pid > 0, let caller = ProcStat(pid: pid),
              caller.terminal == 0 else { return false }
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFCHR else { return false }
        let device = UInt64(st.st_rdev)
        let major = (device >> 8) & 0xfff, minor = (device & 0xff) | ((device >> 12) & 0xfff00)
        return major == 4 && (1...63).contains(minor)
    }

    /// ACPI's lid state file says `state:      closed`; logind reads the same switch.
    static func lidClosed(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return false }
        return String(decoding: buffer[0..<n], as: UTF8.self).includes("closed")
    }

    static func printable(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.prefix(64).map { $0.value < 0x20 ? "?" : $0 }))
    }
}

/// What logind says about a process's login session (LoginSessionRule decides from it).
enum LoginSession {
    static func facts(of pid: Int32?) -> LoginSessionFacts {
        guard sd_booted() > 0 else { return .logindAbsent }
        guard let pid, pid > 0 else { return .unknown("no caller process") }
        var name: UnsafeMutablePointer<CChar>?
        let r = sd_pid_get_session(pid, &name)
        if r == -ENODATA || r == -ENXIO { return .noSession }
        guard r >= 0, let name else { return .unknown(String(cString: strerror(-r))) }
        defer { free(name) }
        return .session(id: String(cString: name), remote: flag(sd_session_is_remote(name)),
                        seat: text { sd_session_get_seat(name, &$0) },
                        active: flag(sd_session_is_active(name)))
    }

    /// What logind says about the session in front of `seat` (its active one).
    static func activeSession(ofSeat seat: String) -> LoginSessionFacts {
        var name: UnsafeMutablePointer<CChar>?
        let r = sd_seat_get_active(seat, &name, nil)
        guard r >= 0, let name else { return .unknown("\(seat) has no active session") }
        defer { free(name) }
        return .session(id: String(cString: name), remote: flag(sd_session_is_remote(name)),
                        seat: seat, active: flag(sd_session_is_active(name)))
    }

    /// The session's type (`x11`, `wayland`, `tty`, ...), nil without logind or a session.
    static func type(of pid: Int32) -> String? {
        guard sd_booted() > 0 else { return nil }
        var name: UnsafeMutablePointer<CChar>?
        guard sd_pid_get_session(pid, &name) >= 0, let name else { return nil }
        defer { free(name) }
        return text { sd_session_get_type(name, &$0) }
    }

    /// sd-login's yes (> 0), no (0) or don't know (< 0).
    private static func flag(_ r: Int32) -> Bool? { r < 0 ? nil : r > 0 }

    private static func text(_ get: (inout UnsafeMutablePointer<CChar>?) -> Int32) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard get(&value) >= 0, let value else { return nil }
        defer { free(value) }
        return String(cString: value)
    }
}

/// What a fingerprint success may be reused for (`reuse_duration`): not a terminal's name,
/// which the next login on tty1 or the next window that gets pts/3 inherits, but that
/// terminal's device together with the login session using it: the session leader's pid
/// and start time (as sudo's time stamps do). Empty, so never reused, when there is no
/// controlling terminal or session, and on the launcher path, where the caller is not
/// trusted to say which session it is.
enum ReuseScope {
    static func of(_ request: HelperRequest) -> String {
        guard request.terminalOwner == nil, let pid = request.callerPID, pid > 0,
              let caller = ProcStat(pid: pid), caller.terminal != 0 else { return "" }
        let leader = getsid(pid)
        guard leader > 0, let session = ProcStat(pid: leader) else { return "" }
        return "tty=\(caller.terminal) session=\(leader)@\(session.startTime)"
    }
}
