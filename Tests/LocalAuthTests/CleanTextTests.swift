import Testing
@testable import LocalAuth

/// CleanText: the one cleaning of a process's words before they are shown or logged.
@Suite struct CleanTextTests {
    @Test func oneLineWhateverTheControls() {
        let shown = CleanText.line("apt\u{1B}[2J\rupgrade\nnow\tplease\u{2028}x\u{202E}gnp.exe")
        #expect(shown == "apt [2J upgrade now please xgnp.exe")
        #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f })
    }

    @Test func quotesTheTextCannotClose() {
        #expect(CleanText.line("a \"b\" `c` \u{201C}d\u{201D}") == "a 'b' 'c' 'd'")
    }

    @Test func invalidUTF8IsReplaced() {
        #expect(CleanText.line([0x61, 0xFF, 0xFE, 0x62]) == "a\u{FFFD}\u{FFFD}b")
    }

    @Test func aLongTextIsCutAtTheLimitWithItsMark() {
        let dots = CleanText.line(String(repeating: "x", count: 500), limit: 20, mark: .dots)
        #expect(dots == String(repeating: "x", count: 17) + "...")
        let ellipsis = CleanText.line(String(repeating: "x", count: 500), limit: 20)
        #expect(ellipsis.unicodeScalars.count == 20 && ellipsis.hasSuffix("x\u{2026}"))
        #expect(CleanText.line("short", limit: 20, mark: .dots) == "short")
        // Already a part of a longer text: marked even when short.
        #expect(CleanText.line(Array("short".utf8), limit: 20, mark: .dots, cut: true) == "short...")
    }

    @Test func argumentsAreJoinedAndQuotedWhereTheyHoldSpaces() {
        #expect(CleanText.arguments(["apt", "install", "a b", ""]) == "apt install 'a b' ''")
        #expect(CleanText.arguments(["echo", "x\ny"]) == "echo 'x y'")
    }

    @Test func tenKilobytesAndFourThousandArgumentsAreOneShortLine() {
        let big = CleanText.arguments(["rm"] + Array(repeating: String(repeating: "a", count: 10_000), count: 1), limit: 160,
                                      mark: .dots)
        #expect(big.unicodeScalars.count == 160 && big.hasSuffix("..."))
        let many = CleanText.arguments(Array(repeating: "x\n", count: 4000), limit: 160, mark: .dots)
        #expect(many.unicodeScalars.count <= 160 && many.hasSuffix("..."))
        #expect(!many.contains("\n"))
    }

    @Test func theRightsDialogReasonIsTheSameCleaning() {
        let text = "Open \u{202E}txt.exe\nnow"
        #expect(DialogText.reason(Array(text.utf8)) == CleanText.line(text, limit: DialogText.reasonLimit))
    }
}
