#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// A right's authorization for a program without a terminal (one started from a desktop
/// launcher): the prompt is the desktop's polkit dialog for the product's action
/// (PolkitDialog), whose `polkit-1` stack runs pam_localauth (the finger) and pam_unix (the
/// password) on root's own path, with its presence, lockout and tries.
///
/// polkit's yes is not taken as it is (DialogProof): the dialog has a ticket of its own
/// (RightsDialogTicket), into which the helper serving polkit's `polkit-1` stack records
/// its fingerprint match or, after pam_unix, its proven password (`authsucc`; DialogMatch).
/// The right is granted only for exactly one authentication there: a finger, or for a right
/// whose requirement allows it (`.default`) the password. The same user's `sudo` or lock
/// screen during the dialog writes into no ticket.
/// Presence (the program's own) and the right's preflight (lockout, enrollment, the
/// enrolled set of a `.biometry(.current)` right) are judged before the dialog, as on the
/// terminal path; the enrolled set again after it.
extension RightsMode.Context {
    /// The library says it cannot prompt (`stdin_tty=0`: no /dev/tty), or the kernel says
    /// the program has no controlling terminal.
    var promptsInDialog: Bool {
        !request.wire.caller.stdinTTY || ProcStat(pid: caller.callerPID)?.terminal == 0
    }

    func authorizeInDialog(_ record: RightRecord) throws -> Frame {
        let presence = Presence.judge(request, options: options, log: log)
        if let refusal = presence.refusal { return HelperResult.frame(.failure(refusal)) }
        let preflight = AppMode.preflight(request, policy: policy(record), unprivileged: true, options: options, log: log)
        guard Self.succeeded(preflight) else { return preflight }

        let ticket = try openTicket()
        defer { closeTicket(ticket) }
        let answer = askPolkit(record)
        log.log(.info, "polkit dialog for right \(LogWords.word(record.identifier)): \(answer)")
        switch answer {
        case .authorized:
            break
        case .notAuthorized(let dismissed):
            throw dismissed
                ? RightsMode.Refusal(code: .userCancel, reason: "dialog-dismissed", cause: "the user dismissed the polkit dialog")
                : RightsMode.Refusal(code: .authenticationFailed, reason: "dialog-failed",
                                     cause: "the polkit dialog ended without authentication")
        case .noAgent:
            throw RightsMode.Refusal(code: .notInteractive, reason: "no-agent",
                                     cause: "the program has no terminal and no polkit authentication agent is registered for it")
        case .unreachable(let why):
            throw RightsMode.Refusal(code: .notInteractive, reason: "polkit-unreachable",
                                     cause: "the program has no terminal and polkitd cannot show a dialog: \(why)")
        case .timedOut:
            throw RightsMode.Refusal(code: .systemCancel, reason: "dialog-timeout", cause: "the polkit dialog was not answered in time")
        case .interrupted(let fd):
            // The program's socket: its cancel or its end; else the pidfd: it ended.
            let e = fd == channel.input ? AppWakeSource(channel: channel, fallbackOffered: false).interruption() : nil
            let why = e ?? EvaluationError(.appCancel, cause: "the program ended during the polkit dialog")
            throw RightsMode.Refusal(code: why.code, reason: "dialog-cancelled", cause: why.cause)
        }
        let method = try proof(try readTicket(ticket), record: record)
        return try grant(record, method: method)
    }

    /// What the dialog's yes rests on (DialogProof), and for `.biometry(.current)` the
    /// enrolled set again after the match.
    private func proof(_ ticket: DialogTicket, record: RightRecord) throws -> EvaluationMachine.Outcome.Method {
        switch DialogProof.judge(ticket, allowsPassword: record.requirement.allowsPassword) {
        case .fingerprint:
            if record.requirement == .biometryCurrentSet, try currentDomainState() != record.domainState {
                throw invalidated()
            }
            return .fingerprint
        case .password:
            return .password
        case .passwordNotAllowed:
            throw RightsMode.Refusal(code: .authenticationFailed, reason: "password-not-allowed",
                                     cause: "the dialog was passed with the password, and this right needs the finger")
        case .none:
            throw RightsMode.Refusal(code: .authenticationFailed, reason: "no-proof",
                                     cause: "polkit said yes, but no finger matched and no password was entered in the dialog")
        case .several(let n):
            throw RightsMode.Refusal(code: .authenticationFailed, reason: "several-proofs",
                                     cause: "polkit said yes, but \(n) agents' polkit dialogs of this user passed "
                                         + "while this one was open: which one was this dialog's is unknown")
        }
    }

    private func askPolkit(_ record: RightRecord) -> PolkitDialog.Answer {
        let subject = PolkitDialog.Subject(pid: caller.callerPID, startTime: binding.startTime, uid: caller.uid)
        let dialog = PolkitDialog(address: options.dbusAddress, busTimeout: options.busTimeout, log: log)
        let pin = CallerPin(caller: caller.callerPID)
        defer { pin?.close() }
        // Our own cancel comes before the hard deadline ends the helper (polkitd would then
        // drop the dialog with our connection anyway).
        let deadline = MonotonicClock.millis() + max(1000, min(HardDeadline.remainingMillis, 3_600_000) - 5000)
        return dialog.ask(subject, details: details(), deadline: deadline,
                          watch: [channel.input] + (pin.map { [$0.descriptor] } ?? []))
    }

    /// The dialog's text: the program's reason, cleaned and quoted, then who asks, its full
    /// path and pid from the kernel (DialogText); polkit honours `polkit.message` from a root
    /// caller, and the agent shows it in place of the action's message.
    private func details() -> [(String, String)] {
        var reason: [UInt8] = []
        if case .right(_, .authorize(_, let hex?)) = request.wire { reason = Hex.decode(hex) ?? [] }
        let message = DialogText.message(reason: reason, program: binding.path, pid: caller.callerPID)
        return [("polkit.message", message), ("program", binding.path)]
    }

    static func succeeded(_ frame: Frame) -> Bool {
        (try? Answer.decode(frame.payload).get())?.isSuccess == true
    }
}
