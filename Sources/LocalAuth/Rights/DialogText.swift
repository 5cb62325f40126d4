/// The text of a right's polkit dialog (the helper's RightsDialog). The program chooses its
/// reason (`localized_reason`); the agent shows it as it is, so what could mislead is taken
/// out: format characters (Cf: bidi overrides that reverse what follows, zero-width
/// characters), controls (Cc) and line and paragraph separators (Zl, Zp); the rest is one
/// line, capped, and in quotation marks it cannot close. Who asks comes after it, from the
/// kernel (the program's full path and pid), in words the program does not choose.
/// Pure: Tests/LocalAuthTests/DialogTextTests.swift.
public enum DialogText {
    /// Unicode scalars of the reason shown, the ellipsis included.
    public static let reasonLimit = 160

    /// The dialog's message.
    public static func message(reason bytes: [UInt8], program: String, pid: Int32) -> String {
        let reason = reason(bytes)
        let who = "\(oneLine(program)) (pid \(pid))"
        return reason.isEmpty ? "\(who) asks for a secret it saved behind your fingerprint"
                              : "\u{201C}\(reason)\u{201D} \u{2014} asked by \(who)"
    }

    /// The reason as shown: one line of at most `reasonLimit` scalars, the last an ellipsis
    /// when it was cut (CleanText, the one cleaning of a caller's words).
    public static func reason(_ bytes: [UInt8]) -> String {
        CleanText.line(bytes, limit: reasonLimit)
    }

    static func oneLine(_ text: String) -> String { CleanText.oneLine(text) }
}
