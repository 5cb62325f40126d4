/// The polkit authentications under way, as root saw polkitd begin and end them on the system
/// bus (localauthd's PolkitWatch), and the one rule that names one to a touch: the agent of a
/// `polkit-agent-helper-1` that asks has exactly ONE pending authentication, whose agent's
/// process root knows. None, several, or one whose agent is not known yet: nothing is named
/// (the prompt says "a polkit request"), never a guess.
///
/// Why one: polkit's agent helper is handed only the cookie (on its stdin, which root does
/// not read), so with two authentications of one agent under way the helper could be
/// answering either. Bounded: at most `capacity` entries, each forgotten `lifetimeMillis`
/// after it began, every text cut to `textBytes` as it is kept. An entry forgotten before its
/// end was seen (the table full, its time up) leaves a mark on its agent (`Forgotten`: its
/// serial and cookie only) until that end comes: meanwhile the agent is named nothing, since
/// one authentication it still has would otherwise look like its only one. Pure: the clock
/// is given.
public struct PolkitPending: Sendable {
    public static let capacity = 64
    public static let lifetimeMillis: Int64 = 300_000
    /// Bytes kept of each text polkitd sent (CleanText cuts further when it is shown).
    public static let textBytes = 4096
    /// Marks of authentications forgotten before their end (serial, cookie, agent: small).
    public static let forgottenCapacity = 256

    /// One BeginAuthentication call of polkitd's, as the bus carried it.
    public struct Authentication: Equatable, Sendable {
        /// The agent's unique bus name (the call's destination).
        public let agent: String
        /// The call's serial on polkitd's connection: its reply names it.
        public let serial: UInt64
        public let cookie: String
        public let action: String
        public let message: String
        /// The `program` detail, when polkitd passed one on (it does not for pkexec's: then
        /// `Program` below, from pkexec's own call).
        public let program: String?
        /// polkitd's `polkit.caller-pid` detail: the process that asked polkitd (pkexec), as
        /// the bus daemon told polkitd.
        public let callerPID: Int32?
        /// Monotonic ms when it was seen.
        public let seenAt: Int64

        public init(agent: String, serial: UInt64, cookie: String, action: String, message: String,
                    program: String?, callerPID: Int32?, seenAt: Int64) {
            self.agent = PolkitPending.bounded(agent)
            self.serial = serial
            self.cookie = PolkitPending.bounded(cookie)
            self.action = PolkitPending.bounded(action)
            self.message = PolkitPending.bounded(message)
            self.program = program.map(PolkitPending.bounded)
            self.callerPID = callerPID.flatMap { $0 > 0 ? $0 : nil }
            self.seenAt = seenAt
        }
    }

    /// pkexec's CheckAuthorization call to polkitd, which carries the program it runs (its
    /// `program` detail: the absolute path pkexec resolved); polkitd keeps it to itself and
    /// tells the agent only the message made from it. Only a call whose sender's process is
    /// the system's pkexec is taken for the program (`found`'s `isPkexec`): any process can
    /// call CheckAuthorization with details of its choosing.
    public struct Program: Equatable, Sendable {
        /// The caller's unique bus name.
        public let sender: String
        public let program: String
        public let seenAt: Int64

        public init(sender: String, program: String, seenAt: Int64) {
            self.sender = PolkitPending.bounded(sender)
            self.program = PolkitPending.bounded(program)
            self.seenAt = seenAt
        }
    }

    /// What root knows of an agent's process, by its unique name.
    public enum AgentProcess: Equatable, Sendable {
        /// Asked of the bus daemon, not answered yet.
        case asked
        case pid(Int32)
        /// The daemon could not say (the agent left the bus, or the question failed).
        case unknown
    }

    /// What the rule found for one agent process.
    public enum Found: Equatable, Sendable {
        case one(PolkitPurpose)
        /// No authentication of this agent is pending.
        case none
        /// Several are: which one the agent helper answers is not known.
        case several(Int)
        /// An authentication whose agent's process is not known (yet) is pending: it could be
        /// this agent's.
        case agentsUnknown(Int)
        /// The agent has an authentication the table forgot before its end.
        case forgotten
        /// The agent's process is older than root's watch of this polkitd: it may have been
        /// given authentications before root watched, which the table cannot know.
        case olderThanTheWatch
    }

    /// What is kept of an authentication forgotten before its end: enough to see that end.
    public struct Forgotten: Equatable, Sendable {
        public let agent: String
        public let serial: UInt64
        public let cookie: String
    }

    public private(set) var entries: [Authentication] = []
    public private(set) var agents: [String: AgentProcess] = [:]
    public private(set) var forgotten: [Forgotten] = []
    public private(set) var programs: [Program] = []
    /// The processes of the callers of `programs`, by unique name (as `agents`).
    public private(set) var callers: [String: AgentProcess] = [:]

    public init() {}

    /// A BeginAuthentication seen. The oldest is forgotten when the table is full (returned,
    /// for the log). Returns also whether the agent's process must be asked for.
    public mutating func began(_ authentication: Authentication) -> (forgotten: Authentication?, askAgent: Bool) {
        expire(now: authentication.seenAt)
        var dropped: Authentication?
        if entries.count >= Self.capacity {
            dropped = entries[0]
            forget(0)
        }
        entries.append(authentication)
        let ask = agents[authentication.agent] == nil
        if ask { agents[authentication.agent] = .asked }
        return (dropped, ask)
    }

    /// Whether a process (an agent's, a caller's) was asked of the bus daemon and not
    /// answered yet.
    public var awaitingProcesses: Bool {
        agents.values.contains(.asked) || callers.values.contains(.asked)
    }

    /// A pkexec-shaped CheckAuthorization seen (bounded as the entries; a caller's later
    /// call replaces its earlier one). Returns whether the caller's process must be asked for.
    public mutating func checked(_ program: Program) -> Bool {
        expire(now: program.seenAt)
        programs.removeAll { $0.sender == program.sender }
        if programs.count >= Self.capacity { programs.removeFirst() }
        programs.append(program)
        let ask = callers[program.sender] == nil
        if ask { callers[program.sender] = .asked }
        return ask
    }

    /// The bus daemon's answer about a caller's process (nil: it had none to give).
    public mutating func caller(_ name: String, is pid: Int32?) {
        guard callers[name] != nil else { return }
        callers[name] = pid.map { $0 > 0 ? .pid($0) : .unknown } ?? .unknown
    }

    /// The bus daemon's answer about an agent's process (nil: it had none to give).
    public mutating func agent(_ name: String, is pid: Int32?) {
        guard agents[name] != nil else { return }
        agents[name] = pid.map { $0 > 0 ? .pid($0) : .unknown } ?? .unknown
    }

    /// polkitd's CancelAuthentication(cookie): that authentication is over.
    @discardableResult
    public mutating func cancelled(cookie: String) -> Bool {
        forgotten.removeAll { $0.cookie == cookie }
        return remove { $0.cookie == cookie }
    }

    /// A method return or error to polkitd answering its call `serial`, sent by `sender`:
    /// the authentication is over when the answer is its agent's, or the bus daemon's (the
    /// agent left the bus without answering). Anyone else's answer ends nothing.
    @discardableResult
    public mutating func answered(serial: UInt64, by sender: String) -> Bool {
        forgotten.removeAll { $0.serial == serial && ($0.agent == sender || sender == Self.busDaemon) }
        return remove { $0.serial == serial && ($0.agent == sender || sender == Self.busDaemon) }
    }

    /// polkitd changed hands (restarted): every authentication it had is gone with it.
    public mutating func forgetAll() {
        entries = []
        agents = [:]
        forgotten = []
        programs = []
        callers = [:]
    }

    /// The one rule: what to name for the agent whose process is `pid`, at `now`. The program
    /// is the `program` detail polkitd passed on, or else the one of the caller's own
    /// CheckAuthorization when the caller is pkexec (`isPkexec`, asked of the system) and
    /// made exactly one such call: never one another process wrote. `agentIsNewer`: the
    /// agent's process started after root began watching this polkitd (localauthd or polkitd
    /// started again, or polkitd activated by the very call that asks, leave authentications
    /// root never saw with the agents that ran then).
    public mutating func found(agentPID pid: Int32, agentIsNewer: Bool, now: Int64,
                               isPkexec: (Int32) -> Bool) -> Found {
        expire(now: now)
        guard agentIsNewer else { return .olderThanTheWatch }
        let unknown = entries.filter { agents[$0.agent].map(Self.isPID) != true }
        if !unknown.isEmpty { return .agentsUnknown(unknown.count) }
        // A mark of this agent's, or of an agent whose process is not known (it could be
        // this one).
        if forgotten.contains(where: { agents[$0.agent] == .pid(pid) || agents[$0.agent].map(Self.isPID) != true }) {
            return .forgotten
        }
        let mine = entries.filter { agents[$0.agent] == .pid(pid) }
        switch mine.count {
        case 0: return .none
        case 1:
            let only = mine[0]
            let program = only.program ?? only.callerPID.flatMap { programOf(caller: $0, isPkexec: isPkexec) }
            guard let purpose = PolkitPurpose(action: only.action, message: only.message, program: program) else {
                return .none
            }
            return .one(purpose)
        default: return .several(mine.count)
        }
    }

    public static let busDaemon = "org.freedesktop.DBus"

    /// The program of the one CheckAuthorization the process `pid` made, when it is pkexec.
    private func programOf(caller pid: Int32, isPkexec: (Int32) -> Bool) -> String? {
        let made = programs.filter { callers[$0.sender] == .pid(pid) }
        guard made.count == 1, isPkexec(pid) else { return nil }
        return made[0].program
    }

    private static func isPID(_ process: AgentProcess) -> Bool {
        if case .pid = process { return true }
        return false
    }

    /// Entries past their lifetime (or from a clock that went back) are forgotten.
    private mutating func expire(now: Int64) {
        while let index = entries.firstIndex(where: { now - $0.seenAt >= Self.lifetimeMillis || $0.seenAt > now }) {
            forget(index)
        }
        programs.removeAll { now - $0.seenAt >= Self.lifetimeMillis || $0.seenAt > now }
        let calling = Set(programs.map(\.sender))
        callers = callers.filter { calling.contains($0.key) }
    }

    /// An entry dropped before its end: its mark stays (bounded: the oldest mark goes first).
    private mutating func forget(_ index: Int) {
        let entry = entries.remove(at: index)
        forgotten.append(Forgotten(agent: entry.agent, serial: entry.serial, cookie: entry.cookie))
        if forgotten.count > Self.forgottenCapacity { forgotten.removeFirst() }
        pruneAgents()
    }

    @discardableResult
    private mutating func remove(where matches: (Authentication) -> Bool) -> Bool {
        let before = entries.count
        entries.removeAll(where: matches)
        pruneAgents()
        return entries.count != before
    }

    /// Only agents with an authentication pending or forgotten are remembered (bounded
    /// with them).
    private mutating func pruneAgents() {
        let named = Set(entries.map(\.agent) + forgotten.map(\.agent))
        agents = agents.filter { named.contains($0.key) }
    }

    /// At most `textBytes` of `text`, cut at a scalar's start.
    static func bounded(_ text: String) -> String {
        guard text.utf8.count > textBytes else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if out.utf8.count + String(scalar).utf8.count > textBytes { break }
            out.unicodeScalars.append(scalar)
        }
        return out
    }
}
