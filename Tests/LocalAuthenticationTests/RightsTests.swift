import Foundation
import Testing
@testable import LocalAuthentication

/// The rights API's own parts (the root side's are in Tests/integration/test_rights.py).
@Suite struct RightsTests {
    @Test func requirementsCarryTheRootSidesWordsAndWhetherThePasswordMayStandIn() {
        #expect(LAAuthenticationRequirement.default.word == "default")
        #expect(LAAuthenticationRequirement.biometry.word == "biometry")
        #expect(LAAuthenticationRequirement.biometryCurrentSet.word == "biometry-current-set")
        #expect(LAAuthenticationRequirement.biometry(fallback: .devicePasscode).word == "biometry-or-password")
        #expect(LAAuthenticationRequirement.biometry(fallback: .default).word == "biometry")
        #expect(LAAuthenticationRequirement.default.allowsPassword)
        #expect(!LAAuthenticationRequirement.biometryCurrentSet.allowsPassword)
        #expect(LAAuthenticationRequirement.biometry == LAAuthenticationRequirement.biometry)
        #expect(LARight().requirement == LAAuthenticationRequirement.default)
        #expect(LARight(requirement: .biometry).policy == .deviceOwnerAuthenticationWithBiometrics)
        #expect(LARight().policy == .deviceOwnerAuthentication)
    }

    @Test func applesAlgorithmNamesAndStates() {
        #expect(SecKeyAlgorithm.ecdsaSignatureMessageX962SHA256.rawValue == "algid:sign:ECDSA:message-X962:SHA256")
        #expect(LARight.State.unknown.rawValue == 0 && LARight.State.notAuthorized.rawValue == 3)
        let key = LAPrivateKey(identifier: "x", publicKey: LAPublicKey(bytes: Data()), capability: RightCapability())
        #expect(key.canSign(using: .ecdsaSignatureMessageX962SHA256))
        #expect(!key.canSign(using: SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA256")))
        #expect(!key.canDecrypt(using: .ecdsaSignatureMessageX962SHA256))
    }

    @Test func sha256IsLibgcrypts() {
        #expect(RightsClient.hex(Digest.sha256(Data("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func aSignatureThatIsNotTheKeysDoesNotVerify() async {
        let key = LAPublicKey(bytes: Data([4] + [UInt8](repeating: 1, count: 64)))
        await #expect(throws: LAError.self) {
            try await key.verify(Data("m".utf8), signature: Data([0x30, 6, 2, 1, 1, 2, 1, 1]),
                                 algorithm: .ecdsaSignatureMessageX962SHA256)
        }
    }

    /// Without a root side (none is installed where the unit tests run), every operation is
    /// Apple's error, never a right or bytes, and a failed authorization says so in `state`.
    @Test func withoutTheRootSideNothingIsGiven() async {
        let store = LARightStore.shared
        await #expect(throws: LAError.self) { try await store.right(forIdentifier: "notes") }
        await #expect { try await store.saveRight(LARight(), identifier: "notes", secret: Data(count: 2000)) }
            throws: { ($0 as? LAError)?.code == .invalidContext }
        await #expect { try await store.right(forIdentifier: "") } throws: { ($0 as? LAError)?.code == .invalidContext }
        let right = LARight(requirement: .biometry)
        #expect(right.state == .unknown)
        await #expect(throws: LAError.self) { try await right.authorize(localizedReason: "x") }
        #expect(right.state == .notAuthorized)
        await #expect { try await right.authorize(localizedReason: "") } throws: { ($0 as? LAError)?.code == .appCancel }
    }

    /// Apple's async form of `loadData(completion:)` is a property, `rawData`.
    @Test func aSecretsRawDataIsItsAsyncForm() async {
        let secret = LASecret(identifier: "", capability: RightCapability())
        await #expect { try await secret.rawData } throws: { ($0 as? LAError)?.code == .invalidContext }
    }
}
