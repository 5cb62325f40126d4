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
/// polkit's yes is not taken as it is (DialogProof): the right is granted only when root's
/// state file shows, since the dialog began, a new fingerprint match, or, for a right whose
/// requirement allows it (`.default`), a new password (`authsucc` after pam_unix).
/// Presence (the program's own) and the right's preflight (lockout, enrollment, the
/// enrolled set of a `.biometry(.current)` right) are judged before the dialog, as on the
/// terminal path; the enrolled set again after it.
extension RightsMode.Context {
    /// The library says it cannot prompt (`stdin_tty=0`: no /dev/tty), or the kernel says
    /// the program has no controlling terminal.
    var promptsInDialog: Bool {
        request.keys.value("stdin_tty") != "1" || ProcStat(pid: caller.callerPID)?.terminal == 0
    }

    func authorizeInDialog(_ record: RightRecord) throws -> Frame {
        let presence = Presence.judge(request, options: options, log: log)
        if let refusal = presence.refusal { return HelperResult.frame(.failure(refusal)) }
        let preflight = AppMode.preflight(request, policy: policy(record), unprivileged: true, options: options, log: log)
        guard Self.succeeded(preflight) else { return preflight }

        let states = FileStateStore(directory: options.stateDir)
        let before = try loadState(states)
        let began = SystemClock().now()
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
        let method = try proof(before: before, after: try loadState(states), since: began, record: record)
        return try grant(record, method: method)
    }

    /// What the dialog's yes rests on (DialogProof), and for `.biometry(.current)` the
    /// enrolled set again after the match.
    private func proof(before: UserState, after: UserState, since began: Timestamp,
                       record: RightRecord) throws -> EvaluationMachine.Outcome.Method {
        switch DialogProof.judge(before: before, after: after, began: began,
                                 allowsPassword: record.requirement.allowsPassword) {
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
        }
    }

    private func askPolkit(_ record: RightRecord) -> PolkitDialog.Answer {
        let subject = PolkitDialog.Subject(pid: caller.callerPID, startTime: binding.startTime, uid: caller.uid)
        let dialog = PolkitDialog(address: options.dbusAddress, busTimeout: options.busTimeout, log: log)
        let pin = CallerPin(caller: caller.callerPID, viaLauncher: true)
        defer { pin?.close() }
        // Our own cancel comes before the hard deadline ends the helper (polkitd would then
        // drop the dialog with our connection anyway).
        let deadline = MonotonicClock.millis() + max(1000, min(HardDeadline.remainingMillis, 3_600_000) - 5000)
        return dialog.ask(subject, details: details(), deadline: deadline,
                          watch: [channel.input] + (pin.map { [$0.descriptor] } ?? []))
    }

    /// The dialog's text: the program and its reason (polkit honours `polkit.message` from
    /// a root caller; the agent shows it in place of the action's message).
    private func details() -> [(String, String)] {
        let name = binding.path.split(separator: "/").last.map(String.init) ?? binding.path
        var reason = ""
        if let hex = request.keys.value("localized_reason"), let bytes = Hex.decode(hex) {
            // One line, no control characters: the agent shows it as it is.
            let text = String(decoding: bytes.prefix(512), as: UTF8.self).unicodeScalars
            reason = String(String.UnicodeScalarView(text.map { $0.value < 0x20 || $0.value == 0x7f ? " " : $0 }))
        }
        let message = reason.isEmpty ? "\(name) asks for a secret it saved behind your fingerprint"
                                     : "\(name): \(reason)"
        return [("polkit.message", message), ("program", binding.path)]
    }

    private func loadState(_ states: FileStateStore) throws -> UserState {
        do { return try states.load(request.user).userState } catch {
            throw RightsMode.Refusal.unavailable("the user's state cannot be read: \(error)")
        }
    }

    static func succeeded(_ frame: Frame) -> Bool {
        (try? KeyValues.parse(frame.payload))?.value("code") == String(ResultCode.successValue)
    }
}
