import Testing
@testable import LocalAuth

/// The wire encoding of RFC 4251 §5: what is written reads back, and what a hostile peer
/// sends (short, long, signed, padded) is a typed error, never a trap.
@Suite struct SSHWireTests {
    @Test func fieldsWrittenReadBackInOrder() throws {
        var w = SSHWriter()
        w.byte(0x2a)
        w.uint32(0xdead_beef)
        w.bool(true)
        w.bool(false)
        w.string("héllo")
        w.string([UInt8]())
        w.mpint(unsigned: [0x00, 0x00, 0x80, 0x01])
        var r = SSHReader(w.bytes)
        #expect(try r.byte() == 0x2a)
        #expect(try r.uint32() == 0xdead_beef)
        #expect(try r.bool() == true)
        #expect(try r.bool() == false)
        #expect(try r.text(limit: 16) == "héllo")
        #expect(try r.string(limit: 0) == [])
        #expect(try r.mpint(limit: 8) == [0x80, 0x01])
        try r.finish()
    }

    /// RFC 4251 §5's mpint examples, both ways.
    @Test func mpintsAreRFC4251s() throws {
        let cases: [([UInt8], [UInt8])] = [
            ([], [0, 0, 0, 0]),
            ([0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7], [0, 0, 0, 8, 0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7]),
            ([0x80], [0, 0, 0, 2, 0x00, 0x80]),
        ]
        for (value, wire) in cases {
            var w = SSHWriter()
            w.mpint(unsigned: value)
            #expect(w.bytes == wire)
            var r = SSHReader(wire)
            #expect(try r.mpint(limit: 16) == value)
        }
    }

    @Test func negativeAndPaddedMpintsAreRefused() {
        for wire: [UInt8] in [[0, 0, 0, 2, 0xed, 0xcc], [0, 0, 0, 1, 0xff], [0, 0, 0, 2, 0x00, 0x7f], [0, 0, 0, 1, 0x00]] {
            var r = SSHReader(wire)
            #expect(throws: SSHWireError.self) { try r.mpint(limit: 16) }
        }
    }

    @Test func aBoolIsTrueForAnyByteButZero() throws {
        var r = SSHReader([0, 1, 2, 0xff])
        #expect(try [r.bool(), r.bool(), r.bool(), r.bool()] == [false, true, true, true])
    }

    @Test func shortInputIsTruncatedNotATrap() {
        var r = SSHReader([0, 0, 0])
        #expect(throws: SSHWireError.truncated) { try r.uint32() }
        var s = SSHReader([0, 0, 0, 5, 1, 2])
        #expect(throws: SSHWireError.truncated) { try s.string(limit: 100) }
        var e = SSHReader([])
        #expect(throws: SSHWireError.truncated) { try e.byte() }
        #expect(throws: SSHWireError.truncated) { try e.take(1) }
        #expect(throws: SSHWireError.truncated) { try e.take(-1) }
    }

    /// A 4 GiB length is refused by the bound before anything is read or allocated.
    @Test func aLengthOverTheBoundIsRefusedBeforeReading() {
        var r = SSHReader([0xff, 0xff, 0xff, 0xff])
        #expect(throws: SSHWireError.tooLong(length: 0xffff_ffff, limit: 1024)) { try r.string(limit: 1024) }
        var s = SSHReader([0, 0, 0, 3, 1, 2, 3])
        #expect(throws: SSHWireError.tooLong(length: 3, limit: 2)) { try s.string(limit: 2) }
    }

    @Test func textMustBeUTF8() {
        var r = SSHReader([0, 0, 0, 2, 0xc3, 0x28])
        #expect(throws: SSHWireError.self) { try r.text(limit: 10) }
    }

    @Test func trailingBytesAreReported() throws {
        var r = SSHReader([1, 2])
        _ = try r.byte()
        #expect(throws: SSHWireError.trailingBytes(1)) { try r.finish() }
    }

    /// RFC 4648 §10's vectors, and OpenSSH's unpadded form for fingerprints.
    @Test func base64IsRFC4648s() {
        let vectors = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=",
                       "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(SSHBase64.encode(Array(plain.utf8)) == encoded)
            #expect(SSHBase64.decode(encoded) == Array(plain.utf8))
            let bare = String(encoded.filter { $0 != "=" })
            #expect(SSHBase64.encode(Array(plain.utf8), padded: false) == bare)
            #expect(SSHBase64.decode(bare) == Array(plain.utf8))
        }
        let all = (0...255).map { UInt8($0) }
        #expect(SSHBase64.decode(SSHBase64.encode(all)) == all)
    }

    @Test func malformedBase64IsRefused() {
        for bad in ["Z", "Zg=", "Zm9v\n", "Zm 9v", "Zm9v!", "Zh==", "Zm9=", "====", "Zg===", "Z===", "é"] {
            #expect(SSHBase64.decode(bad) == nil, "\(bad)")
        }
        #expect(SSHBase64.decode(String(repeating: "A", count: 8), limit: 4) == nil)
    }

    /// Random bytes through every reader: errors are thrown, nothing traps.
    @Test func randomInputNeverTraps() {
        var generator = SystemRandomNumberGenerator()
        var refused = 0
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<64, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Small lengths, so the strings are sometimes whole.
            if bytes.count >= 4, Bool.random() { bytes[0] = 0; bytes[1] = 0; bytes[2] = 0; bytes[3] %= 16 }
            var r = SSHReader(bytes)
            _ = try? r.string(limit: 32)
            _ = try? r.mpint(limit: 8)
            _ = try? r.text(limit: 8)
            if (try? AgentMessage.decode(bytes)) == nil { refused += 1 }
            _ = try? AgentReply.decode(bytes)
            _ = try? AgentFrame.split(bytes)
            _ = SignedData.classify(bytes)
            _ = SSHPublicKey.typeName(of: bytes)
            _ = try? SSHPublicKey.p256Point(blob: bytes)
            _ = try? SSHSignature.parse(bytes)
            _ = try? HostKeySignature.verify(hostKey: bytes, signature: bytes, data: bytes)
            _ = SSHBase64.decode(bytes: bytes)
        }
        #expect(refused > 0, "random bytes are mostly not a message")
    }
}
