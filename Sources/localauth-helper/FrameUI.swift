import LocalAuth
import LocalAuthProtocol

/// How the user is asked while the reader waits.
enum PromptStyle {
    /// Messages only; Ctrl-C skips to the password (no terminal to end a prompt on).
    case messages
    /// "Press Enter to use your password" while the reader waits (a terminal we can end
    /// the prompt on): Enter skips at once, a finger ends the prompt by itself.
    case enterToSkip(TerminalInput)
    /// "Password or fingerprint" at once (`prompt=concurrent`): a typed password goes to
    /// the next module. With a terminal, a finger ends the prompt; without one (a graphical
    /// dialog) the user presses Enter after touching.
    case concurrent(TerminalInput?)

    var terminal: TerminalInput? {
        switch self {
        case .messages: return nil
        case .enterToSkip(let t): return t
        case .concurrent(let t): return t
        }
    }
}

/// The user interface of an evaluation, through the module's PAM conversation. While a
/// prompt is up, messages cannot be shown: with Enter-to-skip the prompt is ended (the
/// newline) to show them and asked again; with the concurrent prompt they wait until the
/// user answers, since ending it would submit a half-typed password.
final class FrameUI: AuthenticationUI {
    private let channel: FrameChannel
    private let language: Language
    private let style: PromptStyle
    private let log: LogSink
    /// PAM_SILENT: only what the user must act on is shown (PAM_SILENT never stops prompts).
    private let silent: Bool
    /// False for polkit's agent helper: "Fingerprint recognized" would be its last line
    /// before SUCCESS, and polkit's agent library (pkttyagent, GNOME Shell, KDE) reads one
    /// line per wake-up and ends the session as failed when the helper's exit comes with
    /// lines still unread. On a busy machine the agent wakes after the helper has exited,
    /// so a genuine match was shown as "Sorry, that didn't work" and the dialog asked again.
    private let announcesMatch: Bool
    /// False where the person at the terminal may not be the account's owner (login, su):
    /// the account's state (locked out, password required, enrollment changed) is not told.
    /// Asked only when such a line is to be shown (it looks the user up).
    private lazy var toOwner: Bool = isOwner()
    private let isOwner: () -> Bool
    /// What the touch approves (TouchPurpose): said once, just before the reader first asks
    /// for the finger, so that a refusal before any scan never names what was not asked.
    private var purpose: TouchPurpose?
    /// A prompt frame was sent and its answer has not been read yet.
    private(set) var promptOpen = false
    private var deferred: [(UserMessage, Bool)] = []

    init(channel: FrameChannel, language: Language, style: PromptStyle, silent: Bool,
         announcesMatch: Bool = true, isOwner: @escaping () -> Bool = { true }, purpose: TouchPurpose? = nil,
         log: LogSink) {
        self.silent = silent
        self.purpose = purpose.flatMap { $0.isShown ? $0 : nil }
        self.announcesMatch = announcesMatch
        self.isOwner = isOwner
        self.channel = channel
        self.language = language
        self.style = style
        self.log = log
    }

    func show(_ original: UserMessage, error: Bool) {
        let message = !original.tellsAccountState || toOwner ? original : .fingerprintUnavailable
        if silent && message.isChatter { return }
        if case .matched = message, !announcesMatch { return }
        // With a prompt, the prompt itself says how to skip; without one, Ctrl-C does.
        if case .fallbackHint = message, style.terminal != nil || isConcurrent { return }
        guard promptOpen else {
            if case .placeFinger = message, let purpose {
                channel.send(Frame(.info, text: purpose.text(language)))
                self.purpose = nil
            }
            send(message, error: error)
            if case .placeFinger = message { openPrompt() }
            return
        }
        switch style {
        case .enterToSkip(let terminal) where terminal.callerIsReading(within: FrameUI.readingGraceMillis):
            closePrompt()
            send(message, error: error)
            // The same verification goes on (a retry), or a new one asks for the finger:
            // either way the prompt that says how to skip comes back.
            if message.keepsThePromptOpen { openPrompt() }
        case .enterToSkip:
            // The caller is not reading its prompt now (suspended, in the background): the
            // line waits until the prompt is answered.
            if message.endsTheScan { deferred.append((message, error)) }
        case .concurrent, .messages:
            // Per-try lines would only pile up behind the password prompt.
            if message.endsTheScan { deferred.append((message, error)) }
        }
    }

    func askPassword(prompt: String) -> [UInt8]? {
        guard channel.send(Frame(.promptEchoOff, text: prompt)) else { return nil }
        do {
            let reply = try channel.receive()
            return reply.kind == .answer ? reply.payload : nil
        } catch {
            return nil
        }
    }

    /// The module read the prompt's answer (the wake source got it).
    func promptAnswered() { promptOpen = false }

    /// After the evaluation: ends a prompt still open (a match, or Enter-to-skip after a
    /// failure) or waits for the user to finish typing (concurrent prompt after a failure),
    /// then shows what was held back. Returns how the prompt was answered, if it was.
    func settle(matched: Bool) -> Frame.Kind? {
        var answer: Frame.Kind?
        if promptOpen {
            if matched || isEnterToSkip { answer = closePrompt() } else { answer = awaitAnswer() }
        }
        for (message, error) in deferred { send(message, error: error) }
        deferred = []
        return answer
    }

    // MARK: - Prompts

    private var isEnterToSkip: Bool {
        if case .enterToSkip = style { return true }
        return false
    }

    private var isConcurrent: Bool {
        if case .concurrent = style { return true }
        return false
    }

    private func openPrompt() {
        let frame: Frame
        switch style {
        case .messages: return
        case .enterToSkip:
            frame = Frame(.skipPrompt, text: UserMessage.pressEnterToSkip.text(language))
        case .concurrent(let terminal):
            frame = Frame(.scanPrompt, text: UserMessage.passwordOrFinger(pressEnter: terminal == nil).text(language))
        }
        promptOpen = channel.send(frame)
    }

    /// Presses Enter for the user, once, and reads the answer that produces. Only while the
    /// caller is blocked reading its terminal in the foreground: by then the conversation
    /// has flushed the input it flushes before a prompt, so the one newline is what it
    /// reads. Until then (the user suspended it, or it runs in the background) nothing is
    /// pressed; it is looked at again every `lookInterval` ms, and the user may answer the
    /// prompt themselves meanwhile. The reader is already released at this point (the
    /// evaluation is over), so nothing is held while it waits.
    @discardableResult
    private func closePrompt() -> Frame.Kind? {
        guard let terminal = style.terminal else { return awaitAnswer() }
        var logged = false
        while !channel.waitReadable(milliseconds: 0) {
            if terminal.callerIsReading() {
                if !terminal.pressEnter() { log.log(.warning, "could not end the prompt on the terminal") }
                break
            }
            if !logged {
                log.log(.info, "the caller is not reading its terminal (suspended or in the background): waiting to end its prompt")
                logged = true
            }
            _ = channel.waitReadable(milliseconds: FrameUI.lookInterval)
        }
        let answer = awaitAnswer()
        terminal.dropUnread()
        return answer
    }

    /// How often a caller that is not reading its terminal is looked at again.
    static let lookInterval: Int32 = 100

    /// How long a caller in the foreground is given to get to its read before a line is
    /// held back as for a suspended one (a busy machine, a prompt just being written).
    static let readingGraceMillis: Int64 = 250

    /// Blocks until the module relays the prompt's answer (the user typed or pressed Enter).
    private func awaitAnswer() -> Frame.Kind? {
        defer { promptOpen = false }
        do {
            let frame = try channel.receive()
            return frame.kind
        } catch {
            log.log(.warning, "no answer to the prompt: \(error)")
            return nil
        }
    }

    private func send(_ message: UserMessage, error: Bool) {
        channel.send(Frame(error ? .error : .info, text: message.text(language)))
    }
}

extension UserMessage {
    /// Lines after which the reader waits for a finger again: the skip prompt follows them.
    var keepsThePromptOpen: Bool {
        switch self {
        case .retry, .placeFinger: return true
        default: return false
        }
    }

    /// Lines that tell the state of the account being authenticated: how many failures it
    /// has, which rule wants its password, whether its enrolled fingers changed.
    var tellsAccountState: Bool {
        switch self {
        case .lockedOut, .passwordRequired, .enrollmentChanged: return true
        default: return false
        }
    }

    /// Lines that only comment (PAM_SILENT drops them); all others tell the user what to do.
    var isChatter: Bool {
        switch self {
        case .reason, .matched, .waitingForFinger: return true
        default: return false
        }
    }

    /// Messages that say how the scan ended (kept for after the prompt), as opposed to
    /// per-try lines.
    var endsTheScan: Bool {
        switch self {
        case .placeFinger, .retry, .notRecognized, .fallbackHint, .waitingForFinger, .reason: return false
        default: return true
        }
    }
}

/// The module's side of the pipe while the reader waits: Ctrl-C arrives as a cancel frame,
/// a prompt's answer as `A` (Enter: skip), `T` (a password was typed for the next module)
/// or `N` (the conversation failed), and the module going away ends the evaluation.
final class ModuleWakeSource: WakeSource {
    private let channel: FrameChannel
    private let ui: FrameUI
    /// Ctrl-C means "use my password" unless no fallback is offered (then it is a cancel).
    private let fallbackOffered: Bool

    init(channel: FrameChannel, ui: FrameUI, fallbackOffered: Bool) {
        self.channel = channel
        self.ui = ui
        self.fallbackOffered = fallbackOffered
    }

    var fd: Int32 { channel.input }

    func interruption() -> EvaluationError? {
        let frame: Frame
        do {
            frame = try channel.receive()
        } catch {
            return EvaluationError(.appCancel, cause: "the module went away: \(error)")
        }
        switch frame.kind {
        case .cancel:
            return fallbackOffered
                ? EvaluationError(.userFallback, cause: "Ctrl-C: the user chose the password")
                : EvaluationError(.userCancel, cause: "Ctrl-C: the user cancelled")
        case .typed:
            ui.promptAnswered()
            return EvaluationError(.userFallback, reason: .passwordTyped, cause: "a password was typed while the reader waited")
        case .answer:
            ui.promptAnswered()
            return EvaluationError(.userFallback, cause: "Enter: the user chose the password")
        case .noAnswer:
            ui.promptAnswered()
            return EvaluationError(.appCancel, cause: "the conversation failed at the prompt")
        default:
            return EvaluationError(.appCancel, cause: "unexpected frame from the module while scanning")
        }
    }
}
