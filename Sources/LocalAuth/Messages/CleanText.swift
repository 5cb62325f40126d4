/// The one cleaning of text a process chose before it is shown or logged: a right's reason
/// (DialogText), a command line sudo or su runs, a file name, polkit's message (TouchPurpose).
/// What could mislead is taken out: format characters (Cf: bidi overrides that reverse what
/// follows, zero-width characters) dropped; controls (Cc: ESC, CR, LF, tabs) and line and
/// paragraph separators (Zl, Zp) a space; runs of white space one space; double quotation
/// marks and backquotes `'`, so the text cannot seem to close the quotes it is shown in. The
/// rest is one line of at most `limit` scalars, the last an ellipsis when it was cut; invalid
/// UTF-8 is U+FFFD. Bounded whatever the input: only the first `budget` bytes are read.
/// Pure: Tests/LocalAuthTests/CleanTextTests.swift.
public enum CleanText {
    /// Unicode scalars shown by default, the ellipsis included.
    public static let limit = 160
    /// Bytes read at most: beyond it the text is cut anyway.
    public static let budget = 4096

    /// The mark at a cut: an ellipsis, or `...` where the text may be shown on the Linux
    /// console, whose font has no ellipsis (the prompts, TouchPurpose).
    public enum CutMark: String, Sendable {
        case ellipsis = "\u{2026}"
        case dots = "..."
    }

    /// `cut`: the bytes are already a part of a longer text (the mark is added whatever
    /// their length).
    public static func line(_ bytes: [UInt8], limit: Int = CleanText.limit, mark: CutMark = .ellipsis,
                            cut alreadyCut: Bool = false) -> String {
        let cutAnyway = alreadyCut || bytes.count > budget
        let text = oneLine(String(decoding: bytes.prefix(budget), as: UTF8.self))
        return cut(text, limit: limit, mark: mark, cutAnyway: cutAnyway)
    }

    public static func line(_ text: String, limit: Int = CleanText.limit, mark: CutMark = .ellipsis) -> String {
        line(Array(text.utf8.prefix(budget + 1)), limit: limit, mark: mark)
    }

    /// Scalars, not characters: one character can carry any number of combining marks.
    static func cut(_ text: String, limit: Int, mark: CutMark, cutAnyway: Bool) -> String {
        var scalars = Array(text.unicodeScalars.map { quotes.contains($0) ? "'" : $0 })
        let marks = Array(mark.rawValue.unicodeScalars)
        if scalars.count > limit || cutAnyway {
            scalars = Array(scalars.prefix(max(limit - marks.count, 0)))
            while scalars.last == " " { scalars.removeLast() }
            scalars.append(contentsOf: marks)
        }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars)
        return String(out)
    }

    /// Quotation marks in a caller's text become `'`.
    static let quotes: Set<Unicode.Scalar> = ["\"", "`", "\u{201C}", "\u{201D}", "\u{201E}", "\u{201F}",
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

    /// A program's arguments as one line: joined by spaces, an argument that is empty or
    /// holds white space or a control in single quotes, then cleaned and cut. Reads only
    /// as many arguments as can show (4000 arguments or 10 kB cost no more than `budget`).
    /// `cut`: the list itself was cut before it came here (a command line read in part).
    public static func arguments(_ argv: [String], limit: Int = CleanText.limit, mark: CutMark = .ellipsis,
                                 cut alreadyCut: Bool = false) -> String {
        var joined: [UInt8] = []
        for argument in argv {
            if joined.count > budget { break }
            if !joined.isEmpty { joined.append(0x20) }
            let bytes = Array(argument.utf8.prefix(budget + 1))
            let quoted = bytes.isEmpty || bytes.contains { $0 <= 0x20 || $0 == 0x7f }
                || argument.unicodeScalars.contains { $0.properties.isWhitespace }
            if quoted { joined.append(0x27) }
            joined += bytes
            if quoted { joined.append(0x27) }
        }
        return line(joined, limit: limit, mark: mark, cut: alreadyCut)
    }
}
