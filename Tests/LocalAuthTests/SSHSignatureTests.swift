import Foundation
import Testing
@testable import LocalAuth

/// The agent's signatures: P256's DER made an SSH signature blob, which ssh-keygen itself
/// accepts inside an SSHSIG signature (what git's `gpg.format=ssh` verifies).
@Suite struct SSHSignatureTests {
    /// `ssh-keygen -Y verify` of `message` signed by localauth's P256 through SSHSignature.
    static func verifyWithSSHKeygen(message: [UInt8], signedMessage: [UInt8], namespace: String) throws -> SSHTool.Output {
        let pair = try P256.generate()
        let blob = try SSHPublicKey.p256Blob(point: pair.publicKey)
        let data = SSHTool.signedData(message: signedMessage, namespace: namespace)
        let der = try P256.sign(message: data, privateKey: pair.privateKey, publicKey: pair.publicKey)
        let signature = try SSHSignature.p256(der: der)
        let armored = SSHTool.armor(.init(publicKey: blob, namespace: namespace, hashAlgorithm: "sha512", signature: signature))
        let signers = try SSHPublicKey.allowedSignersLine(principal: "tester@example.org", blob: blob, namespaces: [namespace])
        return try SSHTool.inDirectory { dir in
            let sigFile = dir.appendingPathComponent("msg.sig"), allowed = dir.appendingPathComponent("allowed_signers")
            try armored.write(to: sigFile, atomically: true, encoding: .utf8)
            try (signers + "\n").write(to: allowed, atomically: true, encoding: .utf8)
            return try SSHTool.keygen(["-Y", "verify", "-f", allowed.path, "-I", "tester@example.org", "-n", namespace,
                                       "-s", sigFile.path], stdin: message)
        }
    }

    @Test func sshKeygenVerifiesAnSSHSIGSignedThroughTheAgentsBlob() throws {
        let message = Array("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n".utf8)
        let verified = try Self.verifyWithSSHKeygen(message: message, signedMessage: message, namespace: "git")
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.text.hasPrefix("Good \"git\" signature for tester@example.org with ECDSA key SHA256:"))
    }

    @Test func sshKeygenRefusesItForAnotherMessage() throws {
        let verified = try Self.verifyWithSSHKeygen(message: Array("tampered".utf8), signedMessage: Array("original".utf8),
                                                    namespace: "file")
        #expect(verified.status != 0)
        #expect(!verified.text.contains("Good"))
    }

    @Test func theBlobIsTheNameAndTwoMpints() throws {
        let pair = try P256.generate()
        let der = try P256.sign(message: [1, 2, 3], privateKey: pair.privateKey, publicKey: pair.publicKey)
        let blob = try SSHSignature.p256(der: der)
        let (algorithm, body) = try SSHSignature.parse(blob)
        #expect(algorithm == "ecdsa-sha2-nistp256")
        let (r, s) = try SSHSignature.ecdsaComponents(body, limit: 32)
        let (derR, derS) = try #require(DER.ecdsaComponents(der))
        #expect(r == Array(derR.drop { $0 == 0 }) && s == Array(derS.drop { $0 == 0 }))
        // And the host key check reads it as a nistp256 signature over the same data.
        let key = try SSHPublicKey.p256Blob(point: pair.publicKey)
        #expect(HostKeySignature.isValid(hostKey: key, signature: blob, data: [1, 2, 3]))
        #expect(!HostKeySignature.isValid(hostKey: key, signature: blob, data: [1, 2, 4]))
    }

    @Test func notDERIsRefused() {
        for bad: [UInt8] in [[], [0x30, 0x00], [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01], [0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]] {
            #expect(throws: SSHWireError.self) { try SSHSignature.p256(der: bad) }
        }
    }

    @Test func signatureBlobsThatAreNotWholeAreRefused() throws {
        var w = SSHWriter()
        w.string("ecdsa-sha2-nistp256")
        w.string([0, 0, 0, 1, 1, 0, 0, 0, 1, 2])
        let blob = w.bytes
        #expect(try SSHSignature.parse(blob).algorithm == "ecdsa-sha2-nistp256")
        for cut in 0..<blob.count {
            #expect(throws: SSHWireError.self) { try SSHSignature.parse(Array(blob.prefix(cut))) }
        }
        #expect(throws: SSHWireError.self) { try SSHSignature.parse(blob + [0]) }
        #expect(throws: SSHWireError.self) { try SSHSignature.ecdsaComponents([0, 0, 0, 0, 0, 0, 0, 1, 1], limit: 32) }  // r = 0
        #expect(throws: SSHWireError.self) {
            try SSHSignature.ecdsaComponents([0, 0, 0, 33] + [UInt8](repeating: 1, count: 33) + [0, 0, 0, 1, 1], limit: 32)
        }
    }
}
