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
    /// when it was cut. Scalars, not characters: one character can carry any number of
    /// combining marks.
    public static func reason(_ bytes: [UInt8]) -> String {
        // Cut first, so that a huge reason costs nothing.
        let budget = 4096
        let text = oneLine(String(decoding: bytes.prefix(budget), as: UTF8.self))
        var scalars = Array(text.unicodeScalars.map { quotes.contains($0) ? "'" : $0 })
        if scalars.count > reasonLimit || bytes.count > budget {
            scalars = Array(scalars.prefix(reasonLimit - 1))
            while scalars.last == " " { scalars.removeLast() }
            scalars.append("\u{2026}")
        }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars)
        return String(out)
    }

    /// Double quotation marks in the reason become `'`, so it cannot seem to end the quote.
    static let quotes: Set<Unicode.Scalar> = ["\"", "\u{201C}", "\u{201D}", "\u{201E}", "\u{201F}",
                                               "\u{00AB}", "\u{00BB}", "\u{2033}", "\u{FF02}"]

    /// Format characters dropped; controls and separators a space; runs of white space one
    /// space; none at either end.
    static func oneLine(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .format:
                continue
            case .control, .lineSeparator, .paragraphSeparator, .spaceSeparator:
                pendingSpace = !out.isEmpty
            default:
                if scalar.properties.isWhitespace {
                    pendingSpace = !out.isEmpty
                    continue
                }
                if pendingSpace { out.append(" ") }
                pendingSpace = false
                out.append(scalar)
            }
        }
        return String(out)
    }
}
