import LocalAuth
import LocalAuthProtocol

/// The user interface of an evaluation, through the module's PAM conversation.
final class FrameUI: AuthenticationUI {
    private let channel: FrameChannel
    private let language: Language

    init(channel: FrameChannel, language: Language) {
        self.channel = channel
        self.language = language
    }

    func show(_ message: UserMessage, error: Bool) {
        channel.send(Frame(error ? .error : .info, text: message.text(language)))
    }

    func askPassword(prompt: String) -> [UInt8]? {
        guard channel.send(Frame(.promptEchoOff, text: prompt)),
              let reply = try? channel.receive(), reply.kind == .answer else { return nil }
        return reply.payload
    }
}

/// The module's side of the pipe while the reader waits: Ctrl-C arrives as a cancel frame,
/// and the module going away ends the evaluation.
final class ModuleWakeSource: WakeSource {
    private let channel: FrameChannel
    /// Ctrl-C means "use my password" unless no fallback is offered (then it is a cancel).
    private let fallbackOffered: Bool

    init(channel: FrameChannel, fallbackOffered: Bool) {
        self.channel = channel
        self.fallbackOffered = fallbackOffered
    }

    var fd: Int32 { channel.input }

    func interruption() -> LAError? {
        do {
            let frame = try channel.receive()
            guard frame.kind == .cancel else {
                return LAError(.appCancel, cause: "unexpected frame from the module while scanning")
            }
            return fallbackOffered
                ? LAError(.userFallback, cause: "Ctrl-C: the user chose the password")
                : LAError(.userCancel, cause: "Ctrl-C: the user cancelled")
        } catch {
            return LAError(.appCancel, cause: "the module went away: \(error)")
        }
    }
}
