#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import SystemBus

/// What polkit asks each authentication for, seen by root on the system bus, so that the
/// touch's prompt can name it (PolkitPurpose, in the spare handoff).
///
/// polkitd calls each agent's `BeginAuthentication(action_id, message, icon_name, details,
/// cookie, identities)`; the agent runs the setuid `polkit-agent-helper-1`, where the PAM
/// module runs, and hands it only the cookie, which PAM never sees. So root watches the calls
/// go by, on connections of its own made monitors (org.freedesktop.DBus.Monitoring, which the
/// bus daemon allows to root only):
/// - `calls`, made once before polkitd's name is followed: polkitd's calls on the agent
///   interface (BeginAuthentication, CancelAuthentication; the rule names polkitd's
///   well-known name, which the daemon matches against the sender's names of the moment) and
///   pkexec's CheckAuthorization, whose `program` detail polkitd keeps to itself;
/// - `answers`, made for polkitd's unique name of the moment: the answers to it (the agent's
///   return or error, or the daemon's error when the agent left the bus) that end one.
/// An ordinary connection (`asker`) follows who owns `org.freedesktop.PolicyKit1` (NameOwner:
/// the daemon's word only) and asks the daemon for each agent's and each such caller's
/// process (GetConnectionUnixProcessID). When polkitd changes hands, what the old one had is
/// forgotten; one that took the name while `calls` was in place is seen whole, one that ran
/// before is known whole only for agents started since (PolkitPending's `agentIsNewer`).
///
/// A call is taken only from polkitd's unique name of the moment (the sender is checked
/// here too): any local uid can address a BeginAuthentication of its own to any agent, or to
/// itself. What is kept is bounded (PolkitPending). Nothing here waits on the loop but a
/// monitor's making (bounded by the bus timeout) and, for polkit's agent helper only, the
/// daemon's answers about processes asked for just before (`answerWithinMillis`); a monitor
/// that fails says one line and the service goes on without names.
final class PolkitWatch {
    static let service = "org.freedesktop.PolicyKit1"
    static let agentInterface = "org.freedesktop.PolicyKit1.AuthenticationAgent"
    static let authorityInterface = "org.freedesktop.PolicyKit1.Authority"
    static let execAction = "org.freedesktop.policykit.exec"

    private let address: String
    private let timeoutSeconds: Double
    let log: LogSink
    /// The ordinary connection: polkitd's owner, the agents' processes.
    let asker: Bus
    private var polkitd: NameOwner?
    /// The monitor of polkitd's calls (to the agents, by its well-known name, and pkexec's to
    /// it), made once before polkitd's name is followed; nil when the bus refused it.
    private var calls: Bus?
    /// When `calls` was made (CLOCK_BOOTTIME ticks, /proc's unit for a start time).
    private var callsMadeAt: UInt64 = 0
    /// The monitor of the answers to polkitd, for its unique name of the moment.
    private var answers: Bus?
    /// polkitd's unique name the table and `answers` are for.
    private(set) var currentOwner: String?
    /// A unique name that took polkitd's name while `calls` was in place (the daemon's
    /// NameOwnerChanged): every authentication it began was seen.
    private var appearedWhileWatched: String?
    /// The current owner is such a one; else (polkitd ran before localauthd watched) only
    /// agents started after `callsMadeAt` are known whole.
    private var watchedFromItsStart = false
    var table = PolkitPending()
    /// Calls on the agent interface not sent by polkitd: said at most once an interval.
    var forged = DropTally()

    private init(address: String, timeoutSeconds: Double, asker: Bus, log: LogSink) {
        self.address = address
        self.timeoutSeconds = timeoutSeconds
        self.asker = asker
        self.log = log
    }

    /// Connected to the bus of root's configuration, the calls' monitor made, then polkitd's
    /// name followed (in this order: an owner announced later took the name while the
    /// monitor was in place); nil (one line) where there is no bus.
    static func start(options: Options, log: LogSink) -> PolkitWatch? {
        do {
            let timeout = max(options.busTimeout, 1)
            let bus = try Bus(address: options.dbusAddress, timeoutSeconds: timeout)
            let watch = PolkitWatch(address: options.dbusAddress, timeoutSeconds: timeout, asker: bus, log: log)
            watch.makeCallsMonitor()
            watch.polkitd = try NameOwner(service, on: bus, report: { [weak log] in log?.log(.warning, $0) },
                                          changed: { [weak watch] _, new in
                guard let watch, !new.isEmpty, watch.calls != nil else { return }
                watch.appearedWhileWatched = new
            })
            return watch
        } catch {
            log.log(.notice, "polkit's requests not followed (\(options.dbusAddress)): \(error.summary); "
                    + "touches for polkit are not named")
            return nil
        }
    }

    /// The descriptors to poll: the asker's, the calls' monitor's, the answers' (-1: none).
    var fds: [Int32] { [asker.fileDescriptor ?? -1, calls?.fileDescriptor ?? -1, answers?.fileDescriptor ?? -1] }

    /// Reads everything that came, without blocking: the asker's answers and polkitd's owner
    /// first (a new owner is known before its first call, which the daemon sent to the
    /// monitor after announcing the owner), then the monitors' copies. Throws when the
    /// asker's connection is gone (the service then stops following polkit, one line).
    func follow() throws(BusError) {
        try asker.dispatch()
        let owner = polkitd?.current
        if owner != currentOwner { ownerChanged(owner) }
        if !read(calls, "calls") { calls = nil }
        if !read(answers, "answers") { answers = nil }
    }

    private func makeCallsMonitor() {
        do {
            let bus = try Bus(address: address, timeoutSeconds: timeoutSeconds, monitor: true)
            // Taken before the call: an agent that started in the same tick counts as older.
            let madeAt = Peer.bootTicks()
            try bus.becomeMonitor(rules: Self.callRules)
            calls = bus
            callsMadeAt = madeAt
        } catch {
            log.log(.warning, "polkit's requests not followed: the system bus refused a monitor (\(error.summary)); "
                    + "touches for polkit are not named")
        }
    }

    /// polkitd changed hands (or its first owner is known): what the old one had is
    /// forgotten, and the answers' monitor is made for the new one. One that fails is tried
    /// again only at the next change (not at every wake-up).
    private func ownerChanged(_ owner: String?) {
        answers?.close()
        answers = nil
        currentOwner = owner
        watchedFromItsStart = owner != nil && owner == appearedWhileWatched
        if !table.entries.isEmpty { log.log(.info, "polkitd changed hands: its \(table.entries.count) pending authentication(s) forgotten") }
        table.forgetAll()
        guard let owner, calls != nil else { return }
        do {
            let bus = try Bus(address: address, timeoutSeconds: timeoutSeconds, monitor: true)
            try bus.becomeMonitor(rules: Self.answerRules(owner: owner))
            answers = bus
            log.log(.info, "polkit's requests followed: a monitor of polkitd's calls (\(LogWords.word(owner))"
                    + (watchedFromItsStart ? ", watched from its start)" : ", running before: agents started since are named)"))
        } catch {
            log.log(.warning, "polkit's requests not followed: the system bus refused a monitor (\(error.summary)); "
                    + "touches for polkit are not named")
        }
    }

    /// The calls' monitor's rules: polkitd's calls on the agent interface (the daemon matches
    /// the well-known name against the sender's names of the moment; the sender is checked
    /// again against the owner), and the CheckAuthorization calls of pkexec's action
    /// (pkexec's program is in their details, and polkitd does not pass it on to the agent).
    static let callRules = [
        "type='method_call',sender='\(service)',interface='\(agentInterface)'",
        "type='method_call',interface='\(authorityInterface)',member='CheckAuthorization',arg1='\(execAction)'",
    ]

    /// The answers to polkitd's calls (a destination is matched by unique name only).
    static func answerRules(owner: String) -> [String] {
        ["type='method_return',destination='\(owner)'", "type='error',destination='\(owner)'"]
    }

    /// Everything a monitor copied so far; false when its connection is gone (one line):
    /// the caller drops it, with what the table knew (its ends would not be seen).
    private func read(_ monitor: Bus?, _ which: String) -> Bool {
        guard let monitor else { return true }
        do {
            while let message = try monitor.nextMessage() { take(message) }
            return true
        } catch {
            log.log(.warning, "polkit's requests no longer followed: the monitor of its \(which) is gone (\(error.summary))")
            monitor.close()
            table.forgetAll()
            return false
        }
    }

    /// The bus daemon's answers about processes asked for just now (the agent's call came
    /// with this very request, on a machine slow to wake the loop), waited for at most
    /// `answerWithinMillis`: the daemon answers from its own table at once. Only for polkit's
    /// agent helper, and only while a question is open.
    static let answerWithinMillis: Int64 = 250

    private func awaitProcesses() throws(BusError) {
        let deadline = MonotonicClock.millis() + Self.answerWithinMillis
        while table.awaitingProcesses, MonotonicClock.millis() < deadline {
            _ = try asker.wait(until: deadline, extra: [])
            try asker.dispatch()
        }
    }

    /// What to hand a request's helper when its peer is polkit's agent helper: the one
    /// authentication its agent has pending, or nil (and a line saying why nothing is named).
    func purpose(for peer: Peer, agentSocket: String) -> PolkitPurpose? {
        guard let agent = PolkitAgentHelper.agent(of: peer, agentSocket: agentSocket) else { return nil }
        do {
            try follow()
            try awaitProcesses()
        } catch {
            log.log(.warning, "polkit's requests no longer followed: \(error.summary)")
        }
        let found: PolkitPending.Found
        let agentPID: Int32
        switch agent {
        case .noParentAgent:
            log.log(.info, "pid \(peer.pid): polkit's agent helper has no agent (its stdin is no connection from one "
                    + "and its parent is pid 1): its authentication is not named")
            return nil
        case .process(let pid):
            guard calls != nil, answers != nil else { return nil }
            agentPID = pid
            let newer = watchedFromItsStart || ProcStat(pid: pid).map { $0.startTime > callsMadeAt } ?? false
            found = table.found(agentPID: pid, agentIsNewer: newer, now: MonotonicClock.millis()) {
                RootOwned.installedProgram(of: $0)?.hasSuffix("/pkexec") == true
            }
        }
        let who = "pid \(peer.pid) (its polkit agent: pid \(agentPID))"
        switch found {
        case .one(let purpose):
            log.log(.info, "\(who): polkit's agent helper answers \(LogWords.word(purpose.action))"
                    + (purpose.program.map { " for \(LogWords.word($0))" } ?? "") + ": named to its helper")
            return purpose
        case .none: log.log(.info, "\(who): no pending polkit authentication of its agent seen: not named")
        case .several(let n): log.log(.info, "\(who): its polkit agent has \(n) authentications pending: not named")
        case .agentsUnknown(let n): log.log(.info, "\(who): \(n) pending polkit authentication(s) of an agent not known yet: not named")
        case .forgotten: log.log(.info, "\(who): an authentication of its polkit agent was forgotten unanswered: not named")
        case .olderThanTheWatch:
            log.log(.info, "\(who): the agent is older than root's watch of polkitd (it may have authentications "
                    + "begun before): not named")
        }
        return nil
    }
}
