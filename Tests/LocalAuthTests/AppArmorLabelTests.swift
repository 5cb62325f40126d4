import Testing
@testable import LocalAuth

/// AppArmorLabel: the profile a right is bound to, read from the kernel's label text.
@Suite struct AppArmorLabelTests {
    private func profile(_ text: String) -> String?? {
        switch AppArmorLabel.profile(fromAttr: text) {
        case .success(let name): return .some(name)
        case .failure: return .none
        }
    }

    @Test func unconfinedHasNoProfile() {
        #expect(profile("unconfined\n") == .some(nil))
        #expect(profile("unconfined") == .some(nil))
    }

    @Test func theModeIsDroppedAndTheNameKept() {
        #expect(profile("secret-vault (enforce)\n") == .some("secret-vault"))
        #expect(profile("secret-vault (complain)\n") == .some("secret-vault"))
        #expect(profile("/usr/bin/vault (enforce)\n") == .some("/usr/bin/vault"))
        #expect(profile("a//&b (enforce)\n") == .some("a//&b"))
        // A name with brackets of its own: only the last bracket is the mode.
        #expect(profile("vault (beta) (enforce)\n") == .some("vault (beta)"))
        // The kernel's text may end in a NUL.
        #expect(profile("vault (enforce)\n\0") == .some("vault"))
    }

    @Test func malformedTextIsRefused() {
        #expect(profile("") == .none)
        #expect(profile("\n") == .none)
        #expect(profile(" (enforce)") == .none)
        #expect(profile("va\u{1B}ult (enforce)") == .none)
        #expect(profile("two\nlines (enforce)") == .none)
    }

    @Test func theBindingNamesTheProfileBeforeTheProgram() {
        #expect(AppArmorLabel.bound("/usr/bin/vault", profile: nil) == "/usr/bin/vault")
        #expect(AppArmorLabel.bound("/usr/bin/vault", profile: "vault") == "apparmor:vault:/usr/bin/vault")
        #expect(AppArmorLabel.bound("flatpak:org.example.Vault:/app/bin/vault", profile: "vault")
                == "apparmor:vault:flatpak:org.example.Vault:/app/bin/vault")
    }
}
