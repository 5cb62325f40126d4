import Testing
@testable import LocalAuth

/// Session-binds OpenSSH 9.2's ssh really sent an agent for a test sshd presenting a host
/// certificate (HostCertificate; principals localhost and 127.0.0.1, valid 2026-01-01 to
/// 2036-01-01, signed by the ed25519 CA below), recorded once with ssh checking the
/// certificate against "@cert-authority 127.0.0.1 CA" in its known_hosts.
@Suite struct SSHRecordedCertificateTests {
    static let ca = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHzSIS9C96xSKAIM2sjYMmbhdevAl5UDbBeSZtsmVUjC"
    /// 2027-01-15, inside the certificates' validity.
    static let now: UInt64 = 1_800_000_000

    static let binds: [(String, String)] = [
        ("ssh-ed25519-cert-v01@openssh.com",
            """
            1b0000001873657373696f6e2d62696e64406f70656e7373682e636f6d0000014d000000207373682d65643235353139
            2d636572742d763031406f70656e7373682e636f6d00000020e6e3f91a3d12b93d870ca2492ba3886fb7054121a71bbf
            fd34b57eb34349a70100000020080939e9d9b432a375089914e82efc810b4dfef7e8defb22ff4678db397eac83000000
            000000000000000002000000097465737420686f73740000001a000000096c6f63616c686f7374000000093132372e30
            2e302e31000000006955b900000000007c245f00000000000000000000000000000000330000000b7373682d65643235
            353139000000207cd2212f42f7ac5228020cdac8d83266e175ebc09795036c179266db265548c2000000530000000b73
            73682d65643235353139000000402f246702647b053df98bfcad37bd8cb04885718e64e47d5c0206529ccd6431b3b939
            954661f76e8f93d2d27a562688ff9d08549fe9da6758c794173580fcba0100000040e72db0c974278292cf56423f9bf6
            6a466740000fef65dc11da0900abbf4b02b4e89d805954237834a02229463227adeb98794f374a8ce4a4424b1e222428
            84d6000000530000000b7373682d65643235353139000000405fcdae11732cd93fec7c78530ffb71ab653dc494a8bf81
            9975a920f053a92ecd94a2e4ee55b9e02769157fdff239b833c757cbf81e2ac0a5a0053ffa3b01640b00
            """),
        ("rsa-sha2-512-cert-v01@openssh.com",
            """
            1b0000001873657373696f6e2d62696e64406f70656e7373682e636f6d000002310000001c7373682d7273612d636572
            742d763031406f70656e7373682e636f6d00000020f782de952daeeba4dc405ccacf84537ac3a02022896437aad06e89
            b70d8516d2000000030100010000010100ad34950e6e3e88738cbd94d33184aa85f4f7a919c827b355c2fe76ac6d999d
            d8c324eec6182cbac6a8246993b6485c97bcac515f3787a1142a108d8c424c632da53e852861a8f7ca738a6050101499
            625e18dae02fe94a566259d2100ca2e0d46f1a00cf42e6acf7b1a469773a179403c4ace1c1d151005b2f7837162de344
            30bea9938c364ae201d609888959e680ae22645fabc19f6fd40908c73371aaa365e4b40e2180ebe5048ca1b35eb854c6
            b88043318de1a859f353990a6e3b0f32a145cf93b3f3b1fd83987588f2ef83141b2780b33f048c5f768f67519b78f155
            957e12794cacd8be0925914790a7abb48142c87a76fd2f54da2dd7a57d1852f71d000000000000000000000002000000
            097465737420686f73740000001a000000096c6f63616c686f7374000000093132372e302e302e31000000006955b900
            000000007c245f00000000000000000000000000000000330000000b7373682d65643235353139000000207cd2212f42
            f7ac5228020cdac8d83266e175ebc09795036c179266db265548c2000000530000000b7373682d656432353531390000
            004070757a9f3066bb91c19ffcd150601e98d32bf4e90280883d737a135c2d2cdb43da0805f1a3c17a61b2e1e37e35a2
            6357542eebeb3588fcb7d4b5fed10737e406000000400de1ac0ecdd6e3ab3f86882092be0ea8383e3fd07d756ec854a8
            54d120e79b6d69cc43bf546682999eaf5347cec158bd13efd813c3cc115a373f761ea8285af8000001140000000c7273
            612d736861322d353132000001001bf7575d7c984caf336b53ee700e0da303fc6c69984f10b6d7d551fe75582f431996
            171391c95a3259d70ed8c97277160ab8068c098ce3fa4c9a9a183a487fa7b821b95877f75aaa07ac83f6f2e56e4da825
            a41c02b4e068b5b165b9f47bc299919e8e0a02024fce100c8fb7bc8a81c5adb03d34ae2da2ec55aa415523cc243b5264
            dbb39a80c9b10c3e6add610715093359212c5e0043662d9e9a1f628000723ee081b443a9f97ca6102a265a2087774ccf
            74dc17ed69a930a626c75cfe880f0d8b42945d3210b59a3591e5c9215d14c76ab0bf48686584894facc9d67a849ff04a
            8bc6f24055be24f4c345f39c95ed72d0bba8b4ae4efaf06888c68a27a22d00
            """),
    ]

    @Test func aCertifiedHostsBindVerifiesAndItsCANamesIt() throws {
        let ca = try #require(SSHPublicKey.parseLine(Self.ca)).blob
        for (algorithm, hex) in Self.binds {
            let bind = try SSHRecordedVectorTests.bind(hex)
            #expect(throws: Never.self, "\(algorithm)") { try bind.verify() }
            let cert = try SSHCertificate(blob: bind.hostKey)
            #expect(cert.signatureKey == ca && cert.principals == ["localhost", "127.0.0.1"])
            #expect(cert.isValidHostCertificate(for: "127.0.0.1", now: Self.now))
            let knownHosts = "@cert-authority 127.0.0.1 \(Self.ca)\n"
            #expect(try KnownHosts.match(text: knownHosts, hostKey: bind.hostKey, candidates: ["127.0.0.1"], now: Self.now).names
                    == ["127.0.0.1"])
            #expect(try KnownHosts.match(text: knownHosts, hostKey: bind.hostKey, candidates: ["localhost"], now: Self.now).names
                    == [])
            var other = bind
            other.sessionID[other.sessionID.count - 1] ^= 1
            #expect(throws: HostKeySignature.Failure.bad) { try other.verify() }
        }
    }

    /// Every byte of a certificate is signed or is the signature: any one changed, the
    /// certificate is refused.
    @Test func aCertificateWithAnyByteChangedIsRefused() throws {
        var generator = SystemRandomNumberGenerator()
        for (_, hex) in Self.binds {
            let blob = try SSHRecordedVectorTests.bind(hex).hostKey
            for _ in 0..<200 {
                var changed = blob
                let index = Int.random(in: 0..<changed.count, using: &generator)
                changed[index] ^= UInt8.random(in: 1...255, using: &generator)
                #expect(throws: HostKeySignature.Failure.self, "byte \(index)") { try SSHCertificate(blob: changed) }
            }
        }
    }
}
