/// Where an evaluation's prompts appear — a Linux addition with no Apple counterpart. On
/// Apple's platforms the system draws the dialog; here the application's process does. By
/// default (`LAContext.userInterface` nil) it is the controlling terminal
/// (`LATerminalInterface`); a graphical program sets its own.
///
/// The calls of one evaluation come on that evaluation's private queue, in this order:
/// `evaluationWillBegin`, any number of `show` and `askPassword`, `evaluationDidEnd`.
/// `dismiss` may come at any time from any thread (the context was invalidated or the task
/// cancelled): a blocked `askPassword` must then return nil promptly.
public protocol LAUserInterface: AnyObject {
    /// Whether a person can answer here (a terminal in the foreground, a window). When
    /// false and no graphical session is named either, evaluations fail with `notInteractive`.
    var canInteract: Bool { get }

    /// The evaluation starts: show the reason and the buttons. `choose` reports a button the
    /// user pressed while the reader waits (it may be called from any thread, more than once).
    func evaluationWillBegin(_ prompt: LAPrompt, choose: @escaping @Sendable (LAUserChoice) -> Void)

    /// A line about the reader: "Place your right index finger on the fingerprint reader",
    /// "Fingerprint not recognized - 2 tries left", "Biometry is locked out" in words, ...
    func show(_ message: String, isError: Bool)

    /// `deviceOwnerAuthentication` asks for the account password (checked by the system's
    /// root side, never here). Returns what was typed, or nil when the user cancelled. The
    /// bytes are wiped after they are sent.
    func askPassword(_ prompt: String) -> [UInt8]?

    /// Ends any prompt at once; may be called from any thread.
    func dismiss()

    /// The evaluation ended (before its reply is called).
    func evaluationDidEnd()
}

/// What the dialog shows.
public struct LAPrompt: Sendable {
    public let policy: LAPolicy
    /// The application's `localizedReason`.
    public let reason: String
    /// The fallback button's title; nil when no fallback is offered (`localizedFallbackTitle == ""`).
    public let fallbackTitle: String?
    /// The cancel button's title.
    public let cancelTitle: String
}

/// A button the user pressed while the reader waits.
public enum LAUserChoice: Sendable {
    /// The fallback button: `userFallback`, or the password for `deviceOwnerAuthentication`.
    case fallback
    /// The cancel button: `userCancel`.
    case cancel
}
