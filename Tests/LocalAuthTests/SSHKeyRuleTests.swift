import LocalAuth
import Testing

/// SSHKeyRule: the policy a requirement evaluates, reuse, forwarding, the enrolled set,
/// and which policy changes are refused.
@Suite struct SSHKeyRuleTests {
    static let saved = String(repeating: "ab", count: 32)

    static func key(_ requirement: SSHKeyRequirement = .biometry, reuse: Int = 60, forwarding: Bool = false) -> SSHKeyRecord {
        SSHKeyRecord(name: "k", uid: 1000, requirement: requirement, reuseSeconds: reuse, forwardingAllowed: forwarding,
                     domainState: requirement == .biometryCurrentSet ? saved : nil, created: 0,
                     privateKey: [UInt8](repeating: 1, count: 32), publicKey: [0x04] + [UInt8](repeating: 2, count: 64))
    }

    @Test func onlyBiometryOrPasswordLetsThePasswordIn() {
        #expect(SSHKeyRule.policy(.biometry) == .deviceOwnerAuthenticationWithBiometrics)
        #expect(SSHKeyRule.policy(.biometryCurrentSet) == .deviceOwnerAuthenticationWithBiometrics)
        #expect(SSHKeyRule.policy(.biometryOrPassword) == .deviceOwnerAuthentication)
    }

    @Test func anApprovalIsReusedInTheSameBootWithinTheWindowOnly() {
        let key = Self.key(reuse: 60)
        let then = BootStamp(bootID: "b1", millis: 10_000)
        func at(_ ms: Int64, boot: String = "b1") -> BootStamp { BootStamp(bootID: boot, millis: ms) }
        #expect(SSHKeyRule.reuseApplies(key, last: then, now: at(10_000)))
        #expect(SSHKeyRule.reuseApplies(key, last: then, now: at(70_000)))
        #expect(!SSHKeyRule.reuseApplies(key, last: then, now: at(70_001)))
        #expect(!SSHKeyRule.reuseApplies(key, last: then, now: at(9_999)))  // before it: a clock gone wrong
        #expect(!SSHKeyRule.reuseApplies(key, last: then, now: at(20_000, boot: "b2")))
        #expect(!SSHKeyRule.reuseApplies(key, last: nil, now: at(20_000)))
        #expect(!SSHKeyRule.reuseApplies(key, last: then, now: nil))
        #expect(!SSHKeyRule.reuseApplies(Self.key(reuse: 0), last: then, now: at(10_000)))
        // A window past the bound (a record written by hand) reuses nothing.
        var wide = key
        wide.reuseSeconds = 100_000
        #expect(!SSHKeyRule.reuseApplies(wide, last: then, now: at(11_000)))
    }

    @Test func aForwardedRequestIsRefusedUnlessTheKeyAllowsIt() {
        #expect(SSHKeyRule.forwardingRefused(Self.key(forwarding: false), forwarded: true))
        #expect(!SSHKeyRule.forwardingRefused(Self.key(forwarding: true), forwarded: true))
        #expect(!SSHKeyRule.forwardingRefused(Self.key(forwarding: false), forwarded: false))
    }

    @Test(arguments: SSHKeyRequirement.allCases)
    func aMatchOfAnotherSetAuthorizesOnlyKeysNotBoundToOne(_ requirement: SSHKeyRequirement) {
        let key = Self.key(requirement)
        let bound = requirement == .biometryCurrentSet
        #expect(SSHKeyRule.matchAuthorizes(key, matchedDomainState: Self.saved))
        #expect(SSHKeyRule.matchAuthorizes(key, matchedDomainState: "other") == !bound)
        #expect(SSHKeyRule.matchAuthorizes(key, matchedDomainState: nil) == !bound)
        #expect(SSHKeyRule.stillValid(key, enrolledNow: "other") == !bound)
        #expect(SSHKeyRule.isVoid(key, enrolled: .known("other")) == bound)
        #expect(SSHKeyRule.isVoid(key, enrolled: .known(nil)) == bound)
        #expect(!SSHKeyRule.isVoid(key, enrolled: .known(Self.saved)))
        #expect(!SSHKeyRule.isVoid(key, enrolled: .unknown))
    }

    @Test func theBindingToTheEnrolledSetIsSetAtCreation() {
        #expect(SSHKeyRule.policyChangeRefusal(Self.key(.biometry), requirement: .biometryOrPassword, reuseSeconds: nil) == nil)
        #expect(SSHKeyRule.policyChangeRefusal(Self.key(.biometryOrPassword), requirement: .biometry, reuseSeconds: 0) == nil)
        #expect(SSHKeyRule.policyChangeRefusal(Self.key(.biometry), requirement: .biometryCurrentSet, reuseSeconds: nil) != nil)
        #expect(SSHKeyRule.policyChangeRefusal(Self.key(.biometryCurrentSet), requirement: .biometry, reuseSeconds: nil) != nil)
        #expect(SSHKeyRule.policyChangeRefusal(Self.key(.biometryCurrentSet), requirement: .biometryCurrentSet,
                                               reuseSeconds: 10) == nil)
        #expect(SSHKeyRule.policyChangeRefusal(Self.key(.biometry), requirement: nil, reuseSeconds: 301) != nil)
    }

    @Test func scopesOfDestinationsNamespacesAndForwardingAreApart() {
        let host = SSHKeyRule.hostScope(hostKeyFingerprint: "SHA256:abc")
        let git = SSHKeyRule.namespaceScope("git")
        #expect(host == "host:SHA256:abc" && git == "ns:git")
        let forwarded = SSHKeyRule.forwardedScope(host, through: "SHA256:jump")
        #expect(Set([host, git, forwarded, SSHKeyRule.namespaceScope("file")]).count == 4)
    }
}
