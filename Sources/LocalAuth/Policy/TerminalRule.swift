/// The terminal half of presence: which terminal is the caller's, what a virtual console or a
/// pseudo-terminal means for who can be at the reader, and which terminal the helper may
/// end a prompt on. Pure: the helper reads the facts (/proc, stat(2), the request; its
/// Presence and TerminalInput), this decides, and the tests give it every case
/// (`Tests/LocalAuthTests/TerminalRuleTests.swift`). PresenceRule takes the place it gives.
public enum TerminalRule {
    /// Major 4, minor 1-63: a virtual console (minor 64 and up are serial lines). Its number,
    /// or nil for any other device (a pseudo-terminal, a serial line, none).
    public static func consoleNumber(_ device: UInt64) -> Int? {
        let major = (device >> 8) & 0xfff, minor = (device & 0xff) | ((device >> 12) & 0xfff00)
        return major == 4 && (1...63).contains(minor) ? Int(minor) : nil
    }

    public static func isVirtualConsole(_ device: UInt64) -> Bool { consoleNumber(device) != nil }

    /// /dev/tty (5, 0): whichever terminal controls the process that opened it.
    public static let controllingTerminalAlias = UInt64(5) << 8

    /// What the helper knows of the caller's terminal, for one request.
    public struct Facts: Equatable, Sendable {
        /// The controlling terminal (device number, 0 for none) of the process whose place
        /// counts: the caller, or for polkit's agent helper its agent.
        public var subjectTerminal: UInt64
        /// polkit's agent helper's agent: nil when the caller is no agent helper.
        public var polkitAgent: Agent?
        /// The request came on root's path (no terminal owner is imposed on it): only there
        /// does the caller's word about its terminal count.
        public var rootPath: Bool
        /// The real uid of the program that called PAM.
        public var callerUID: UInt32?
        /// The calling process's own controlling terminal; nil when it cannot be read.
        public var callerTerminal: UInt64?
        /// PAM_TTY names a terminal device (`/dev/pts/3`, `tty1`), not an X display.
        public var ttyNamesDevice: Bool
        /// That device's number when it is a character device (read on root's path only).
        public var ttyDevice: UInt64?
        /// The conversation reads a terminal (the application's stdin is one).
        public var stdinTTY: Bool
        /// A graphical display is named.
        public var display: Bool

        public enum Agent: Equatable, Sendable {
            /// The desktop's own agent (an installed program in the session's scope, or a
            /// service an installed unit file names).
            case desktops
            /// Any other (a scope, a transient unit, a unit the user wrote, a script).
            case other
        }

        public init(subjectTerminal: UInt64, polkitAgent: Agent? = nil, rootPath: Bool, callerUID: UInt32?,
                    callerTerminal: UInt64?, ttyNamesDevice: Bool = false, ttyDevice: UInt64? = nil,
                    stdinTTY: Bool = false, display: Bool = false) {
            self.subjectTerminal = subjectTerminal
            self.polkitAgent = polkitAgent
            self.rootPath = rootPath
            self.callerUID = callerUID
            self.callerTerminal = callerTerminal
            self.ttyNamesDevice = ttyNamesDevice
            self.ttyDevice = ttyDevice
            self.stdinTTY = stdinTTY
            self.display = display
        }
    }

    /// Where the prompt is: the subject's controlling terminal (a virtual console, which
    /// PresenceRule.place checks further, or any other line), else who started it.
    public static func place(_ facts: Facts) -> CallerPlace {
        if facts.subjectTerminal != 0 { return isVirtualConsole(facts.subjectTerminal) ? .console : .otherTerminal }
        if let agent = facts.polkitAgent { return agent == .desktops ? .dialog : .otherAgentDialog }
        return facts.rootPath && facts.callerUID == 0 ? .rootWithoutTerminal : .userWithoutTerminal
    }

    /// PAM_TTY is a virtual console (on the machine's own screen and keyboard) and the root
    /// caller has no controlling terminal: a greeter (GDM on Wayland names its VT in PAM_TTY
    /// and no display), whose screen is that console. Not for a peer that is not root, where
    /// the caller's word about its terminal counts for nothing.
    public static func greeterOnConsole(_ facts: Facts) -> Bool {
        guard facts.rootPath, facts.ttyNamesDevice, facts.callerTerminal == 0, let device = facts.ttyDevice else {
            return false
        }
        return isVirtualConsole(device)
    }

    /// A login manager's worker (GDM, LightDM, SDDM): run by root, no controlling terminal,
    /// on a virtual console (PAM_TTY) or a display. Never for a peer that is not root.
    public static func greeterShaped(_ facts: Facts) -> Bool {
        guard facts.rootPath, facts.callerUID == 0, facts.callerTerminal == 0 else { return false }
        return greeterOnConsole(facts) || facts.display
    }

    /// Root's `login` on the virtual console in front, before its session: its terminal is
    /// that console (`foreground`, as the kernel says). The name it vouches with (`tty2`).
    public static func foregroundLogin(_ facts: Facts, place: CallerPlace, foreground: Int?) -> String? {
        guard place == .console, facts.rootPath, facts.callerUID == 0, let vt = foreground,
              consoleNumber(facts.subjectTerminal) == vt else { return nil }
        return "tty\(vt)"
    }

    /// Why nobody is there to read a prompt (`require_presence`), or nil. A text
    /// conversation reads the terminal the application runs on; a graphical one shows a
    /// dialog. Neither: a script. A terminal named but stdin elsewhere: the password comes
    /// from a pipe (`sudo -S`, `echo … | su`) -- unless it is a greeter on its console.
    public static func nobodyThere(_ facts: Facts) -> String? {
        if facts.stdinTTY { return nil }
        if greeterOnConsole(facts) { return nil }
        if facts.ttyNamesDevice {
            return "the conversation does not read the terminal (password from a pipe)"
        }
        return facts.display ? nil : "no terminal and no graphical session"
    }

    // MARK: - Ending a prompt on the caller's terminal

    /// The file the helper may open to end a prompt: a character device that is the
    /// caller's controlling terminal (`controlling`, never 0), owned by `owner` when one is
    /// imposed (the path may come from a request a user wrote).
    public static func mayOpen(mode: UInt32, device: UInt64, fileOwner: UInt32, controlling: UInt64,
                               owner: UInt32?) -> Bool {
        controlling != 0 && (mode & 0o170000) == 0o020000 && device == controlling
            && owner.map { fileOwner == $0 } ?? true
    }

    /// A descriptor that reads the caller's terminal: the device itself, or /dev/tty (sudo
    /// reads that, and it is the caller's controlling terminal).
    public static func readsTerminal(descriptorDevice: UInt64, terminal: UInt64) -> Bool {
        descriptorDevice == terminal || descriptorDevice == controllingTerminalAlias
    }

    /// What a thread waits in, from /proc/PID/task/TID/syscall (the call's number, then its
    /// arguments in hex; which descriptors a poll waits on is not shown there).
    public enum Wait: Equatable, Sendable {
        /// read(2), readv(2), pread(2) on this descriptor.
        case read(descriptor: Int)
        /// poll(2), select(2) and their p- forms: taken as waiting on standard input, as
        /// vlock does.
        case poll
    }

    /// The wait in `line`, with the system call numbers of this architecture; nil when the
    /// thread is in none of them (running, or another call).
    public static func wait(syscallLine line: String, readCalls: Set<Int>, pollCalls: Set<Int>) -> Wait? {
        let words = line.split(separator: " ")
        guard words.count > 1, let call = Int(words[0]) else { return nil }
        if pollCalls.contains(call) { return .poll }
        guard readCalls.contains(call),
              let descriptor = Int(words[1].dropFirst(2), radix: 16) else { return nil }
        return .read(descriptor: descriptor)
    }

    /// The descriptor whose device says whether the wait is for the terminal.
    public static func descriptor(of wait: Wait) -> Int {
        switch wait {
        case .read(let d): return d
        case .poll: return 0
        }
    }
}
