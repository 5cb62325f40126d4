import Testing
@testable import LocalAuth

/// DialogText: the program's reason as the rights dialog shows it, and who asks after it.
@Suite struct DialogTextTests {
    private func reason(_ text: String) -> String { DialogText.reason(Array(text.utf8)) }

    @Test func formatCharactersAreDropped() {
        // U+202E would show what follows reversed; U+200B hides a break inside a word.
        #expect(reason("Open \u{202E}txt.exe") == "Open txt.exe")
        #expect(reason("pay\u{200B}pal") == "paypal")
        #expect(reason("a\u{FEFF}b\u{2066}c\u{2069}") == "abc")
    }

    @Test func controlsAndSeparatorsBecomeOneLine() {
        #expect(reason("one\u{2028}two\u{2029}three") == "one two three")
        #expect(reason("red \u{1B}[31mtext") == "red [31mtext")
        #expect(reason("a\n\n\tb\r\nc\u{7F}d\u{85}e") == "a b c d e")
        #expect(reason("  wide \u{3000}\u{00A0} gap  ") == "wide gap")
    }

    @Test func aLongReasonIsCutWithAnEllipsis() {
        let shown = reason(String(repeating: "x", count: 1000))
        #expect(shown.unicodeScalars.count == DialogText.reasonLimit)
        #expect(shown.hasSuffix("x\u{2026}"))
        #expect(reason(String(repeating: "y", count: DialogText.reasonLimit)).unicodeScalars.count == DialogText.reasonLimit)
        #expect(!reason(String(repeating: "y", count: DialogText.reasonLimit)).hasSuffix("\u{2026}"))
    }

    @Test func anEmptyReasonSaysWhoAsks() {
        #expect(reason("") == "")
        #expect(reason("\u{200B}\n ") == "")
        #expect(DialogText.message(reason: [], program: "/usr/bin/vault", pid: 1234)
            == "/usr/bin/vault (pid 1234) asks for a secret it saved behind your fingerprint")
    }

    @Test func theFixedPartComesAfterAQuoteTheReasonCannotClose() {
        let forged = "Open\u{201D} \u{2014} asked by /usr/bin/sudo (pid 1) \u{201C}x"
        let shown = DialogText.message(reason: Array(forged.utf8), program: "/opt/app/bin/app", pid: 77)
        #expect(shown == "\u{201C}Open' \u{2014} asked by /usr/bin/sudo (pid 1) 'x\u{201D} \u{2014} asked by /opt/app/bin/app (pid 77)")
        #expect(shown.hasSuffix(" \u{2014} asked by /opt/app/bin/app (pid 77)"))
    }
}
