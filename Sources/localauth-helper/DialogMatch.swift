#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The match a rights dialog may count (RightsDialog, DialogProof): a fingerprint match or
/// a proven password in the `polkit-1` stack run by polkit's agent helper, on root's path,
/// goes into the user's open dialog tickets. A match on any other service (sudo, the lock
/// screen, a program that is not root, login) never does: it was not typed or touched
/// in a polkit dialog.
enum DialogMatch {
    static let service = DialogProof.dialogService

    /// Authenticate's: what records the evaluation's new fingerprint match (its machine's
    /// `dialogMatch` action), on polkit's stack only; nil on any other service.
    static func recorder(_ request: HelperRequest, options: Options,
                         log: LogSink) -> ((DialogTicket.Match.Method) -> Void)? {
        guard DialogProof.ticketMethod(.success(.fingerprint), service: request.service) != nil else { return nil }
        return { method in record(method, request, options: options, log: log) }
    }

    /// Records the match in the user's open dialog tickets: Authenticate's finger (through
    /// `recorder`), AuthSucc's proven password (PasswordProofRule's `dialogMatch`).
    static func record(_ method: DialogTicket.Match.Method, _ request: HelperRequest, options: Options, log: LogSink) {
        guard let agent = PolkitAgent.of(request), let helper = request.callerPID,
              let agentStart = ProcStat(pid: agent.pid)?.startTime,
              let helperStart = ProcStat(pid: helper)?.startTime else { return }
        let match = DialogTicket.Match(at: BootClock.nanos(), method: method,
                                       agent: .init(pid: agent.pid, startTime: agentStart),
                                       transaction: .init(pid: helper, startTime: helperStart))
        let n = DialogTickets(stateDirectory: options.stateDir)
            .record(match, user: request.user.value, isAlive: isAlive)
        if n > 0 {
            log.log(.info, "\(method.rawValue) in polkit's dialog (agent pid \(agent.pid)) recorded for \(n) open rights dialog(s)")
        }
    }

    /// The process still runs: same pid, same start time.
    static func isAlive(_ process: DialogTicket.Process) -> Bool {
        ProcStat(pid: process.pid)?.startTime == process.startTime
    }
}
