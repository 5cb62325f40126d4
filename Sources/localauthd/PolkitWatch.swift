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
/// go by: a connection of its own made a monitor (org.freedesktop.DBus.Monitoring, which the
/// bus daemon allows to root only), its rules naming polkitd's unique name of the moment:
/// the calls polkitd makes on the agent interface (BeginAuthentication, CancelAuthentication)
/// and the answers to polkitd (the agent's return or error, or the daemon's error when the
/// agent left the bus) that end one; and pkexec's CheckAuthorization, whose `program` detail
/// polkitd keeps to itself. A second, ordinary connection follows who owns
/// `org.freedesktop.PolicyKit1` (NameOwner: the daemon's word only) and asks the daemon for
/// each agent's and each such caller's process (GetConnectionUnixProcessID). When polkitd
/// changes hands the monitor is made again for the new owner and what the old one had is
/// forgotten.
///
/// A call is taken only when the daemon says polkitd's unique name sent it (the monitor's
/// rule, and the sender checked again here): any local uid can address a BeginAuthentication
/// of its own to any agent, or to itself. What is kept is bounded (PolkitPending). Nothing
/// here waits on the loop but the monitor's making (bounded by the bus timeout) and, for
/// polkit's agent helper only, the daemon's answers about processes asked for just before
/// (`answerWithinMillis`); a monitor that fails says one line and the service goes on
/// without names.
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
    /// The monitor, and the owner its rules name (nil: none made, or it failed for this owner).
    private var monitor: Bus?
    private(set) var monitoredOwner: String?
    /// When the monitor was made (CLOCK_BOOTTIME ticks, /proc's unit for a start time).
    private var monitorMadeAt: UInt64 = 0
    var table = PolkitPending()
    /// Calls on the agent interface not sent by polkitd: said at most once an interval.
    var forged = DropTally()

    private init(address: String, timeoutSeconds: Double, asker: Bus, log: LogSink) {
        self.address = address
        self.timeoutSeconds = timeoutSeconds
        self.asker = asker
        self.log = log
    }

    /// Connected to the bus of root's configuration and following polkitd's name; nil (one
    /// line) where there is no bus.
    static func start(options: Options, log: LogSink) -> PolkitWatch? {
        do {
            let bus = try Bus(address: options.dbusAddress, timeoutSeconds: max(options.busTimeout, 1))
            let watch = PolkitWatch(address: options.dbusAddress, timeoutSeconds: max(options.busTimeout, 1),
                                    asker: bus, log: log)
            watch.polkitd = try NameOwner(service, on: bus, report: { [weak log] in log?.log(.warning, $0) })
            return watch
        } catch {
            log.log(.notice, "polkit's requests not followed (\(options.dbusAddress)): \(error.summary); "
                    + "touches for polkit are not named")
            return nil
        }
    }

    /// The descriptors to poll: the asker's, then the monitor's (-1 while there is none).
    var fds: [Int32] { [asker.fileDescriptor ?? -1, monitor?.fileDescriptor ?? -1] }

    /// Reads everything that came, without blocking: the asker's answers and polkitd's owner
    /// first (a new owner is known before its first call, which the daemon sent to the
    /// monitor after announcing the owner), then the monitor's copies. Throws when the
    /// asker's connection is gone (the service then stops following polkit, one line).
    func follow() throws(BusError) {
        try asker.dispatch()
        let owner = polkitd?.current
        if owner != monitoredOwner { remonitor(owner) }
        readMonitor()
    }

    /// A monitor for `owner`'s calls, the old one closed. One that fails is tried again only
    /// when polkitd changes hands (not at every wake-up).
    private func remonitor(_ owner: String?) {
        monitor?.close()
        monitor = nil
        monitoredOwner = owner
        if !table.entries.isEmpty { log.log(.info, "polkitd changed hands: its \(table.entries.count) pending authentication(s) forgotten") }
        table.forgetAll()
        guard let owner else { return }
        do {
            let bus = try Bus(address: address, timeoutSeconds: timeoutSeconds, monitor: true)
            // Taken before the call: an agent that started in the same tick counts as older.
            let madeAt = Peer.bootTicks()
            try bus.becomeMonitor(rules: Self.rules(owner: owner))
            monitor = bus
            monitorMadeAt = madeAt
            log.log(.info, "polkit's requests followed: a monitor of polkitd's calls (\(LogWords.word(owner)))")
        } catch {
            log.log(.warning, "polkit's requests not followed: the system bus refused a monitor (\(error.summary)); "
                    + "touches for polkit are not named")
        }
    }

    /// The monitor's rules: polkitd's calls on the agent interface, the answers to it, and
    /// the CheckAuthorization calls of pkexec's action made to it (pkexec's program is in
    /// their details, and polkitd does not pass it on to the agent).
    static func rules(owner: String) -> [String] {
        ["type='method_call',sender='\(owner)',interface='\(agentInterface)'",
         "type='method_return',destination='\(owner)'",
         "type='error',destination='\(owner)'",
         "type='method_call',destination='\(owner)',interface='\(authorityInterface)',member='CheckAuthorization',"
            + "arg1='\(execAction)'"]
    }

    private func readMonitor() {
        guard let bus = monitor else { return }
        do {
            while let message = try bus.nextMessage() { take(message) }
        } catch {
            log.log(.warning, "polkit's requests no longer followed: the monitor's connection is gone (\(error.summary))")
            monitor?.close()
            monitor = nil
            table.forgetAll()
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
            guard monitor != nil else { return nil }
            agentPID = pid
            let newer = ProcStat(pid: pid).map { $0.startTime > monitorMadeAt } ?? false
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
