import Foundation
import Testing
@testable import LocalAuth

/// Host key signatures as OpenSSH makes them: keys from ssh-keygen, signatures from
/// `ssh-keygen -Y sign` (whose inner signature is the key's over the SSHSIG signed data,
/// made by the same code that signs an exchange hash) and, for rsa-sha2-256, which
/// ssh-keygen never picks, from openssl with the same key.
@Suite struct SSHHostKeySignatureTests {
    static let types: [(String, Int?)] = [("ed25519", nil), ("ecdsa", 256), ("ecdsa", 384), ("ecdsa", 521), ("rsa", 2048)]
    static let message = Array("the exchange hash stands in here".utf8)

    struct Vector {
        var key: [UInt8]
        var otherKey: [UInt8]
        var signature: [UInt8]
        var data: [UInt8]
    }

    /// A signature by a new key of `type`, and a second key of the same type.
    static func vector(type: String, bits: Int?) throws -> Vector {
        try SSHTool.inDirectory { dir in
            let key = try SSHTool.newKey(in: dir, type: type, bits: bits)
            let second = try SSHTool.inDirectory { d in try SSHTool.newKey(in: d, type: type, bits: bits) }
            let sig = try SSHTool.sign(message: message, key: key.path, namespace: "file")
            #expect(sig.publicKey == key.blob)
            return Vector(key: key.blob, otherKey: second.blob, signature: sig.signature,
                          data: SSHTool.signedData(message: message, namespace: "file", hashAlgorithm: sig.hashAlgorithm))
        }
    }

    @Test(arguments: types)
    func aRealSignatureVerifiesAndEveryAlterationFails(type: String, bits: Int?) throws {
        let v = try Self.vector(type: type, bits: bits)
        #expect(throws: Never.self) { try HostKeySignature.verify(hostKey: v.key, signature: v.signature, data: v.data) }
        // Another key of the same type.
        #expect(throws: HostKeySignature.Failure.bad) {
            try HostKeySignature.verify(hostKey: v.otherKey, signature: v.signature, data: v.data)
        }
        // Other data: one byte flipped anywhere, one byte more, one byte less.
        for index in [0, v.data.count / 2, v.data.count - 1] {
            var data = v.data
            data[index] ^= 0x01
            #expect(throws: HostKeySignature.Failure.bad) { try HostKeySignature.verify(hostKey: v.key, signature: v.signature, data: data) }
        }
        #expect(!HostKeySignature.isValid(hostKey: v.key, signature: v.signature, data: v.data + [0]))
        #expect(!HostKeySignature.isValid(hostKey: v.key, signature: v.signature, data: Array(v.data.dropLast())))
        // The signature's last byte flipped (inside s, or the RSA value).
        var flipped = v.signature
        flipped[flipped.count - 1] ^= 0x01
        #expect(!HostKeySignature.isValid(hostKey: v.key, signature: flipped, data: v.data))
        // Truncated signature and key blobs: malformed, never a trap.
        for cut in [0, 4, v.signature.count / 2, v.signature.count - 1] {
            #expect(throws: HostKeySignature.Failure.self) {
                try HostKeySignature.verify(hostKey: v.key, signature: Array(v.signature.prefix(cut)), data: v.data)
            }
        }
        for cut in [0, 4, v.key.count / 2, v.key.count - 1] {
            #expect(throws: HostKeySignature.Failure.self) {
                try HostKeySignature.verify(hostKey: Array(v.key.prefix(cut)), signature: v.signature, data: v.data)
            }
        }
        #expect(!HostKeySignature.isValid(hostKey: v.key + [0], signature: v.signature, data: v.data))
        #expect(!HostKeySignature.isValid(hostKey: v.key, signature: v.signature + [0], data: v.data))
    }

    @Test func aSignatureOfAnotherTypeIsAMismatch() throws {
        let ed = try Self.vector(type: "ed25519", bits: nil)
        let ec = try Self.vector(type: "ecdsa", bits: 256)
        #expect(throws: HostKeySignature.Failure.mismatch(key: "ecdsa-sha2-nistp256", signature: "ssh-ed25519")) {
            try HostKeySignature.verify(hostKey: ec.key, signature: ed.signature, data: ed.data)
        }
        #expect(throws: HostKeySignature.Failure.mismatch(key: "ssh-ed25519", signature: "ecdsa-sha2-nistp256")) {
            try HostKeySignature.verify(hostKey: ed.key, signature: ec.signature, data: ec.data)
        }
    }

    /// rsa-sha2-256 and the refused SHA-1 "ssh-rsa", signed by openssl with an ssh-keygen key;
    /// a SHA-512 signature relabelled SHA-256 does not verify.
    @Test func rsaSignaturesFollowTheirAlgorithmName() throws {
        let data = Array("session identifier".utf8)
        let (blob, sha256, sha1, sha512) = try SSHTool.inDirectory { dir in
            let key = try SSHTool.newKey(in: dir, type: "rsa", bits: 2048)
            let pem = try SSHTool.keygen(["-q", "-p", "-N", "", "-m", "PEM", "-f", key.path])
            guard pem.status == 0 else { throw SSHTool.Failure(description: "ssh-keygen -p -m PEM: \(pem.stderr)") }
            func openssl(_ digest: String) throws -> [UInt8] {
                let out = try SSHTool.run("/usr/bin/openssl", ["dgst", "-" + digest, "-sign", key.path], stdin: data)
                guard out.status == 0 else { throw SSHTool.Failure(description: "openssl dgst: \(out.stderr)") }
                return out.stdout
            }
            return (key.blob, try openssl("sha256"), try openssl("sha1"), try openssl("sha512"))
        }
        func rsaSignature(_ name: String, _ value: [UInt8]) -> [UInt8] {
            var w = SSHWriter()
            w.string(name)
            w.string(value)
            return w.bytes
        }
        #expect(throws: Never.self) { try HostKeySignature.verify(hostKey: blob, signature: rsaSignature("rsa-sha2-256", sha256), data: data) }
        #expect(throws: Never.self) { try HostKeySignature.verify(hostKey: blob, signature: rsaSignature("rsa-sha2-512", sha512), data: data) }
        #expect(throws: HostKeySignature.Failure.bad) {
            try HostKeySignature.verify(hostKey: blob, signature: rsaSignature("rsa-sha2-256", sha512), data: data)
        }
        #expect(throws: HostKeySignature.Failure.unsupported("the SHA-1 signature ssh-rsa")) {
            try HostKeySignature.verify(hostKey: blob, signature: rsaSignature("ssh-rsa", sha1), data: data)
        }
        // A value longer than the modulus is malformed before libgcrypt sees it.
        #expect(throws: HostKeySignature.Failure.self) {
            try HostKeySignature.verify(hostKey: blob, signature: rsaSignature("rsa-sha2-256", [1] + sha256), data: data)
        }
    }

    @Test func unknownAndWeakKeysAreRefused() {
        var dss = SSHWriter()
        dss.string("ssh-dss")
        dss.string([1])
        #expect(throws: HostKeySignature.Failure.unsupported("the key type ssh-dss")) {
            try HostKeySignature.verify(hostKey: dss.bytes, signature: [], data: [])
        }
        // A 512-bit RSA modulus is below OpenSSH's minimum.
        var small = SSHWriter()
        small.string("ssh-rsa")
        small.mpint(unsigned: [1, 0, 1])
        small.mpint(unsigned: [0xc1] + [UInt8](repeating: 0x55, count: 63))
        #expect(throws: HostKeySignature.Failure.self) {
            try HostKeySignature.verify(hostKey: small.bytes, signature: [], data: [])
        }
        // A P-256 key blob naming the P-384 curve.
        var wrongCurve = SSHWriter()
        wrongCurve.string("ecdsa-sha2-nistp256")
        wrongCurve.string("nistp384")
        wrongCurve.string([0x04] + [UInt8](repeating: 1, count: 64))
        #expect(throws: HostKeySignature.Failure.self) {
            try HostKeySignature.verify(hostKey: wrongCurve.bytes, signature: [], data: [])
        }
    }
}
