import Testing
@testable import LocalAuth

/// The hashes are libgcrypt's and the random bytes the kernel's: known answers show the
/// right algorithm is called the right way (FIPS 180-2 and RFC 4231 test vectors).
@Suite struct CryptoTests {
    @Test func sha256KnownAnswers() {
        #expect(Crypto.hex(Crypto.sha256([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Crypto.hex(Crypto.sha256(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let twoBlocks = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(Crypto.hex(Crypto.sha256(twoBlocks))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func hmacSHA256KnownAnswers() {
        #expect(Crypto.hex(Crypto.hmacSHA256(key: [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(Crypto.hex(Crypto.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // A key longer than the block is hashed first (RFC 4231 test case 6).
        #expect(Crypto.hex(Crypto.hmacSHA256(key: [UInt8](repeating: 0xaa, count: 131),
                                             Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func randomBytesAreAsManyAsAskedAndDiffer() throws {
        let a = try #require(Crypto.randomBytes(32))
        let b = try #require(Crypto.randomBytes(32))
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
        #expect(Crypto.randomBytes(0) == [])
    }

    @Test func wipeZeroesInPlace() {
        var secret = Array("hunter2".utf8)
        Crypto.wipe(&secret)
        #expect(secret == [UInt8](repeating: 0, count: 7))
    }
}
