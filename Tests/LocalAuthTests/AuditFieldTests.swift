import Testing
import LocalAuth

/// From a peer of localauthd that is not root, the service, the terminal and the host are the user's words: in an
/// audit record and in the helper's `key=value` log lines they must stay one field each.
@Suite struct AuditFieldTests {
    @Test func aForgedTerminalCannotAddFields() {
        #expect(LogWords.word("pts/1 res=success") == "pts/1?res?success")
        #expect(LogWords.word("a\"b\nc") == "a?b?c")
    }

    @Test func aForgedServiceCannotAddFields() {
        let line = "user=alice service=\(LogWords.word("screenlock result=success method=fingerprint")) result=userCancel"
        #expect(line.split(separator: " ").filter { $0.hasPrefix("result=") } == ["result=userCancel"])
        #expect(LogWords.word("\u{1b}[2Kx\u{7f}é") == "?[2Kx??")
    }

    @Test func ordinaryValuesPassUnchanged() {
        for value in ["/dev/pts/3", "pts/0", ":0", "tty1", "192.0.2.7", "host.example.org", "::1", "sudo", "polkit-1"] {
            #expect(LogWords.word(value) == value)
        }
    }
}
