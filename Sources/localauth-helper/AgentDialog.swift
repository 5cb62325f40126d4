#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// A signature for a requester without a terminal (an editor's git, a desktop's ssh): the
/// desktop's polkit dialog, as a right's authorization takes it (RightsDialog): presence and
/// the preflight of the key's policy first, a dialog ticket of its own (DialogTickets), and
/// polkit's yes counted only for what DialogProof finds in the ticket: one finger, or for a
/// key that allows it the password. The dialog's text is the prompt root built.
struct AgentDialog {
    let peer: AgentPeer
    let options: Options
    let request: HelperRequest
    let watch: [Int32]
    let log: LogSink

    func approve(_ record: SSHKeyRecord, prompt: AgentPrompt,
                 language: Language) -> AgentVerdict {
        let policy: Request.Policy = record.requirement.allowsPassword ? .owner : .biometrics
        let preflight = AppMode.preflight(request, policy: policy, unprivileged: true, options: options, log: log)
        guard let answer = try? Answer.decode(preflight.payload).get(), answer.isSuccess else {
            let answer = try? Answer.decode(preflight.payload).get()
            return .denied(.refused(answer?.name ?? "biometryNotAvailable", "preflight: \(answer?.cause ?? "?")"))
        }
        let tickets = DialogTickets(stateDirectory: options.stateDir)
        tickets.sweep(isAlive: DialogMatch.isAlive)
        guard let me = ProcStat(pid: getpid()), let peerStat = ProcStat(pid: peer.pid) else {
            return .denied(.refused("biometryNotAvailable", "the helper's or the requester's start time cannot be read"))
        }
        let path: String
        do {
            path = try tickets.create(DialogTicket(user: peer.name.value, createdAt: BootClock.nanos(),
                                                   dialog: .init(pid: getpid(), startTime: me.startTime)))
        } catch {
            return .denied(.refused("biometryNotAvailable", "no ticket for the dialog: \(error)"))
        }
        defer { tickets.remove(path) }
        let dialog = PolkitDialog(address: options.dbusAddress, busTimeout: options.busTimeout, log: log)
        // One line: an agent may show a message's first line only.
        let message = prompt.lines(language).joined(separator: " \u{2014} ")
        let deadline = MonotonicClock.millis() + max(1000, min(HardDeadline.remainingMillis, 3_600_000) - 5000)
        let asked = dialog.ask(PolkitDialog.Subject(pid: peer.pid, startTime: peerStat.startTime, uid: peer.uid),
                               details: [("polkit.message", message), ("program", prompt.chain.names.first ?? "?")],
                               deadline: deadline, watch: watch)
        log.log(.info, "polkit dialog for SSH key \(LogWords.word(record.name)): \(asked)")
        switch asked {
        case .authorized: break
        case .notAuthorized(let dismissed):
            return .denied(.refused(dismissed ? "userCancel" : "authenticationFailed", "the polkit dialog ended without authentication"))
        case .noAgent:
            return .denied(.refused("notInteractive", "no terminal, and no polkit authentication agent is registered for the requester"))
        case .unreachable(let why):
            return .denied(.refused("notInteractive", "no terminal, and polkitd cannot show a dialog: \(why)"))
        case .timedOut:
            return .denied(.refused("systemCancel", "the polkit dialog was not answered in time"))
        case .interrupted:
            return .denied(.refused("appCancel", "the requester ended or closed during the polkit dialog"))
        }
        let ticket: DialogTicket
        do { ticket = try tickets.read(path) } catch {
            return .denied(.refused("biometryNotAvailable", "the dialog's ticket cannot be read: \(error)"))
        }
        switch DialogProof.judge(ticket, allowsPassword: record.requirement.allowsPassword) {
        case .fingerprint: return .approved(.fingerprint)
        case .password: return .approved(.password)
        case .passwordNotAllowed:
            return .denied(.refused("authenticationFailed", "the dialog was passed with the password, and this key needs the finger"))
        case .none:
            return .denied(.refused("authenticationFailed", "polkit said yes, but no finger matched and no password was entered in the dialog"))
        case .several(let n):
            return .denied(.refused("authenticationFailed", "polkit said yes, but \(n) dialogs of this user passed meanwhile"))
        }
    }
}
