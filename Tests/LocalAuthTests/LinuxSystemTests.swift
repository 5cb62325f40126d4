import Testing
@testable import LocalAuth

/// The shadow file's rule, as the helper and localauthd read it (whole, split here).
@Suite struct LinuxSystemTests {
    private func usable(_ text: String, _ user: String) -> Bool? {
        LinuxSystem.usablePassword(in: Array(text.utf8), for: user)
    }

    @Test func aHashIsUsableALockOrAnEmptyFieldIsNot() {
        let shadow = "root:*:20228:0:99999:7:::\nalice:$y$j9T$abc:20228:0:99999:7:::\n"
            + "bob:!$y$j9T$abc:20228::::::\ncarol::20228::::::\ndave:*::::::\n"
        #expect(usable(shadow, "alice") == true)
        #expect(usable(shadow, "bob") == false)
        #expect(usable(shadow, "carol") == false)
        #expect(usable(shadow, "dave") == false)
        #expect(usable(shadow, "root") == false)
    }

    @Test func noEntryIsUnknownAndNamesMatchWhole() {
        let shadow = "alice2:$y$x:1::::::\nbroken line\n\nali:$y$x:1::::::\n"
        #expect(usable(shadow, "alice") == nil)
        #expect(usable(shadow, "ali") == true)
        #expect(usable("", "alice") == nil)
        #expect(usable("alice", "alice") == nil)   // no password field at all
    }
}
