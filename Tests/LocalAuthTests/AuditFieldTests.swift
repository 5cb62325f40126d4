import Testing
@testable import SystemEvents

/// Through the launcher the terminal and the host are the user's words: in an audit record
/// they must stay one field each.
@Suite struct AuditFieldTests {
    @Test func aForgedTerminalCannotAddFields() {
        #expect(SecurityRecord.auditField("pts/1 res=success") == "pts/1?res?success")
        #expect(SecurityRecord.auditField("a\"b\nc") == "a?b?c")
    }

    @Test func ordinaryValuesPassUnchanged() {
        for value in ["/dev/pts/3", "pts/0", ":0", "tty1", "192.0.2.7", "host.example.org", "::1"] {
            #expect(SecurityRecord.auditField(value) == value)
        }
    }
}
