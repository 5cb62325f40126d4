#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// What a fingerprint success may be reused for (`reuse_duration`): not a terminal's name,
/// which the next login on tty1 or the next window that gets pts/3 inherits, but that
/// terminal's device together with the login session using it: the session leader's pid
/// and start time (as sudo's time stamps do). Empty, so never reused, when there is no
/// controlling terminal or session, and for a peer that is not root, where the caller is not
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
