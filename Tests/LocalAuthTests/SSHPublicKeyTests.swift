import Foundation
import Testing
@testable import LocalAuth

/// localauth's P-256 keys in OpenSSH's forms, checked against ssh-keygen itself.
@Suite struct SSHPublicKeyTests {
    @Test func aPointRoundTripsThroughItsBlob() throws {
        let pair = try P256.generate()
        let blob = try SSHPublicKey.p256Blob(point: pair.publicKey)
        #expect(blob.count == 4 + 19 + 4 + 8 + 4 + 65)
        #expect(try SSHPublicKey.p256Point(blob: blob) == pair.publicKey)
        #expect(SSHPublicKey.typeName(of: blob) == "ecdsa-sha2-nistp256")
    }

    @Test func badPointsAndOtherBlobsAreRefused() throws {
        #expect(throws: SSHWireError.self) { try SSHPublicKey.p256Blob(point: [UInt8](repeating: 4, count: 64)) }
        #expect(throws: SSHWireError.self) { try SSHPublicKey.p256Blob(point: [0x02] + [UInt8](repeating: 4, count: 64)) }
        let blob = try SSHPublicKey.p256Blob(point: [0x04] + [UInt8](repeating: 1, count: 64))
        for cut in 0..<blob.count {
            #expect(throws: SSHWireError.self) { try SSHPublicKey.p256Point(blob: Array(blob.prefix(cut))) }
        }
        #expect(throws: SSHWireError.trailingBytes(1)) { try SSHPublicKey.p256Point(blob: blob + [0]) }
        var other = SSHWriter()
        other.string("ecdsa-sha2-nistp256")
        other.string("nistp384")
        other.string([0x04] + [UInt8](repeating: 1, count: 64))
        #expect(throws: SSHWireError.self) { try SSHPublicKey.p256Point(blob: other.bytes) }
    }

    @Test func typeNamesAreReadFromAnyBlobButOnlyIfPrintable() {
        var w = SSHWriter()
        w.string("ssh-ed25519")
        #expect(SSHPublicKey.typeName(of: w.bytes) == "ssh-ed25519")
        for bad: [UInt8] in [[], [0, 0, 0, 0], [0, 0, 0, 3, 0x61, 0x0a, 0x62], [0, 0, 0, 2, 0x61], [0, 0, 0, 2, 0x61, 0x20]] {
            #expect(SSHPublicKey.typeName(of: bad) == nil)
        }
        var long = SSHWriter()
        long.string(String(repeating: "a", count: 65))
        #expect(SSHPublicKey.typeName(of: long.bytes) == nil)
    }

    @Test func theLineHasNoControlCharactersFromTheComment() throws {
        let blob = try SSHPublicKey.p256Blob(point: [0x04] + [UInt8](repeating: 1, count: 64))
        let line = try SSHPublicKey.line(blob: blob, comment: "work\nlaptop\u{7f}")
        #expect(line == "ecdsa-sha2-nistp256 " + SSHBase64.encode(blob) + " worklaptop")
        #expect(try SSHPublicKey.line(blob: blob) == "ecdsa-sha2-nistp256 " + SSHBase64.encode(blob))
        let parsed = try #require(SSHPublicKey.parseLine(line))
        #expect(parsed.type == "ecdsa-sha2-nistp256" && parsed.blob == blob && parsed.comment == "worklaptop")
        #expect(SSHPublicKey.parseLine("ssh-ed25519 " + SSHBase64.encode(blob)) == nil)  // the type lies
        #expect(SSHPublicKey.parseLine("ecdsa-sha2-nistp256 !!!") == nil)
        #expect(throws: SSHWireError.self) { try SSHPublicKey.line(blob: [0, 0, 0, 0]) }
    }

    @Test func allowedSignersLinesRefuseWhatWouldSplitThem() throws {
        let blob = try SSHPublicKey.p256Blob(point: [0x04] + [UInt8](repeating: 1, count: 64))
        #expect(try SSHPublicKey.allowedSignersLine(principal: "a@b.example", blob: blob, namespaces: ["git"])
                == "a@b.example namespaces=\"git\" " + (try SSHPublicKey.line(blob: blob)))
        for bad in ["", "a b", "a\"b", "a,b", "a\nb"] {
            #expect(throws: SSHWireError.self) { try SSHPublicKey.allowedSignersLine(principal: bad, blob: blob) }
        }
        #expect(throws: SSHWireError.self) {
            try SSHPublicKey.allowedSignersLine(principal: "a@b", blob: blob, namespaces: ["g\"it"])
        }
    }

    /// ssh-keygen reads the line and prints the same SHA256 fingerprint.
    @Test func sshKeygenReadsTheLineAndAgreesOnTheFingerprint() throws {
        let pair = try P256.generate()
        let blob = try SSHPublicKey.p256Blob(point: pair.publicKey)
        let listed = try SSHTool.inDirectory { dir in
            let file = dir.appendingPathComponent("key.pub")
            try (try SSHPublicKey.line(blob: blob, comment: "finger") + "\n").write(to: file, atomically: true, encoding: .utf8)
            return try SSHTool.keygen(["-l", "-E", "sha256", "-f", file.path])
        }
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.text == "256 \(SSHPublicKey.fingerprint(blob)) finger (ECDSA)\n")
        #expect(SSHPublicKey.fingerprint(blob).count == 7 + 43)
    }

    /// Keys of every type ssh-keygen makes: their blobs name their types, and the
    /// fingerprints agree with ssh-keygen's.
    @Test(arguments: [("ed25519", nil), ("ecdsa", 384), ("rsa", 2048)] as [(String, Int?)])
    func otherTypesAreNamedAndFingerprinted(type: String, bits: Int?) throws {
        let (blob, listed) = try SSHTool.inDirectory { dir in
            let key = try SSHTool.newKey(in: dir, type: type, bits: bits)
            return (key.blob, try SSHTool.keygen(["-l", "-E", "sha256", "-f", key.path + ".pub"]))
        }
        let expected = ["ed25519": "ssh-ed25519", "ecdsa": "ecdsa-sha2-nistp384", "rsa": "ssh-rsa"][type]
        #expect(SSHPublicKey.typeName(of: blob) == expected)
        #expect(listed.text.split(separator: " ").dropFirst().first.map(String.init) == SSHPublicKey.fingerprint(blob))
    }
}
