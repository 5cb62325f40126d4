/// Text from the wire made fit for a prompt or a log line: names a client sends (a user, a
/// namespace) and names a file gives (known_hosts) reach a terminal or a dialog, where a
/// control character could rewrite what is shown and a bidirectional override could
/// reorder it.
public enum SSHText {
    /// Whether `scalar` may be shown as it is.
    public static func isShowable(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        if v < 0x20 || (0x7f...0x9f).contains(v) { return false }          // C0, DEL, C1
        if (0x202a...0x202e).contains(v) || (0x2066...0x2069).contains(v) { return false }  // bidi embeddings, isolates
        if v == 0x200e || v == 0x200f || v == 0x061c { return false }        // bidi marks
        return true
    }

    /// `bytes` as UTF-8 (invalid sequences as U+FFFD) with every unshowable scalar as "?".
    public static func display(_ bytes: [UInt8]) -> String {
        display(String(decoding: bytes, as: UTF8.self))
    }

    public static func display(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { isShowable($0) ? $0 : "?" }))
    }

    /// Whether every scalar of `text` is showable.
    public static func isShowable(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy(isShowable)
    }
}
