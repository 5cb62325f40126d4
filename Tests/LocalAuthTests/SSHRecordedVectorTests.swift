import Testing
@testable import LocalAuth

/// Messages OpenSSH 9.2's ssh really sent an agent, recorded once from `ssh` to a test `sshd`
/// on 127.0.0.1 (one host key type at a time) and from `ssh-keygen -Y sign -n git`: the
/// session-bind of each host key type (its signature is the server's over the exchange
/// hash), then a hostbound user authentication request and an SSHSIG request for a P-256
/// user key.
@Suite struct SSHRecordedVectorTests {
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8.filter { $0 != 0x0a && $0 != 0x20 })
        return stride(from: 0, to: digits.count, by: 2).map { i in
            UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16)!
        }
    }

    static let sessionBinds: [(String, String)] = [
        ("ssh-ed25519",
            """
            1b0000001873657373696f6e2d62696e64406f70656e7373682e636f6d000000330000000b7373682d65643235353139
            00000020b288223fd35ea49d5b17185f09bf2f6617468657a9742bc4f841e032e96c7df1000000403ce0622e04945809
            91c8c077b4ded7824547e321302040d22ab13e95af8ec8fb7f2c8eb62dedcee2e5c507382f41a1ca80e7c10e7ab03073
            fd2d93872c22ae59000000530000000b7373682d656432353531390000004033cbc2e37f6d3ef65bf4782f15c7fbca32
            88e35f13de071b345be276bbb9ee46fccb7fcac72f05244724c25658cbe0dda8eb8d9bcdaaa74461a8fdb5492e330100
            """),
        ("ecdsa-sha2-nistp256",
            """
            1b0000001873657373696f6e2d62696e64406f70656e7373682e636f6d000000680000001365636473612d736861322d
            6e69737470323536000000086e6973747032353600000041047c098f60151cb6bcc12a4e3ae45c4540cdf2fe0c3770d7
            4cdc8800cb1de85aa5a4e8860acca75d3cc2e0c62a199e88383c07011446e3d4b04e663b81e9b61d25000000409b34f0
            6011618c236edbe14c9da43993d976c61d8fec7c7d8ff2900fd77f5e8948a226ed32c109dc2fca55043b5e4c43b44066
            f681c4027b72c71035288dfcff000000630000001365636473612d736861322d6e697374703235360000004800000020
            70c9b82eaf01f321a496a887ba91f2cb228231eb701167ca640d4d57812053c30000002075826e6224ba8f5a930ab739
            9a666c22195c778cc50ef372c90e43ce3456bc1d00
            """),
        ("ecdsa-sha2-nistp384",
            """
            1b0000001873657373696f6e2d62696e64406f70656e7373682e636f6d000000880000001365636473612d736861322d
            6e69737470333834000000086e697374703338340000006104e61bfcefa3fc5be0d0a499b75125374db48c44c1a5d210
            e5f16f88375262d74e306f1a35f874d9ddd109414223f6397267ecf4fde623df1d2b92148576d3c79d05048f472c7605
            f89b84b3e750e7211ebe12a40c0d1df6fc967c9b02a82ef2620000004036c9398b467d6e78b14be162bac90097042f0c
            422fb511922153ec4ce4b2e30b27cb6f228f8d46702eef4691417f106cfd51ae677699ea964e3a515371eb1ae1000000
            840000001365636473612d736861322d6e6973747033383400000069000000303f2d2fe1bdf628933b212f221504a05f
            c0137a0bcbc6d22fb5054ed0b23f6b65a32162f1224dd4ff58bc916d1559f4ad00000031009ff2c4d9e82d191f2518e3
            bd817d5d53502e196d55356f5420bd1ab8a77fba8e12ec8aac5121a50a59580bf54053a2aa00
            """),
        ("ecdsa-sha2-nistp521",
            """
            1b0000001873657373696f6e2d62696e64406f70656e7373682e636f6d000000ac0000001365636473612d736861322d
            6e69737470353231000000086e697374703532310000008504006bfc6777734a83932bc8c9fa1255ac492695574f527f
            5e306434e1411b01a85c736f5c28a0c55997c558758fc036cbedb7e74f2a3c46ad5c791a8f0d9e2016e79001f21d5c92
            f41289c141e60bc0145f8f02f4e0f9eb53a4269a22d201395218e992c63650a45e7cbb3836eaca55fbbb0aeda7772167
            5a263844c3dab1b5a8bc5548290000004036d8d6bf4337f17794a08bffe23bf6734f1dab594ebe4c83b2bb362f9eac59
            e761996f87bd1857756015d4976beccbc2dfe1ebebcd678ca86a5953d0dedbd1ba000000a60000001365636473612d73
            6861322d6e697374703532310000008b0000004201e17cc2e25047d88febd4fc79e89c7815516a5d4d3026ebdefc3efc
            3e21fa7a67d30dcbf21212db6c8bf03a8069c50887b0166bc4d3667918ebd43444c6df09f0b50000004114585f677024
            a5ec447d2403d7f456ba681aad1d478b363f9ef622e2d3056b1f2607cc9aea57cf3f65aac00f96926d14119879551e5a
            f46a0237efad3b8634766000
            """),
        ("rsa-sha2-256",
            """
            1b0000001873657373696f6e2d62696e64406f70656e7373682e636f6d00000197000000077373682d72736100000003
            01000100000181009d8aa049e31cf5f7cc6e74539484861fb2b2401a0bce9959afd17927bbb012d7ba6512f248ffffb3
            964eac2b0b28bef21f586558ce411ea996a4e59279683ed32c351efbcabfcc2808b1ab02db447f06fb6ba3c1a34b4523
            2d3c01a7aa42574e98dd0db889927fca63f3e8f094b1ca074cfddf8304c7fd39d703f1876bf25b58fde14b9f9a31df65
            fb61fa4d299323e64a00b6b379afeeedf5aea7570729d83b26bafe945096e7c32cb3943b43c62ef07e62591543f6ae12
            970518f58985ab8ddd17fc6535a1e3897fbf73de7573233cf972f9436ed105001e0e474cc4a6a9fe070df511c527c959
            75bbaeffdd03bc248084bc7700bc8b44efbc23884c55860aa252e3051e2a8403e30249abe293580685454f54eebee382
            ff9f21178d13ecd39b0e30ad2b728ad3fc10c3f20172da7320e556af8ec35ad15b358757dd00d6f8f91ff815ec6a8ea5
            cd03f4db4f086670982936b494ad0b65c24a20c5aece73544f88365d3f4683e1abf512ef375acfdbf7724ad1142acb8d
            c9a17a8f220a1467000000409196848414dbf2abf7f2e7958163918c1acbc409403a31cd549a4374c1698a6ae14b6a60
            57687fc4e0d00cad07f153c7225016d46ad9d3a2afde2db5224bc712000001940000000c7273612d736861322d323536
            000001803d3d824af1f80dc54c9c4bb337be5ab2c9579490a8afc539686bba67080c934006d477e92393e1a77717a6a7
            e9fa4027fde8613061b6e3f4a8bff86d0ef6ce228e08fdf7f4bfe147e378bb0875af78ad03039d24722d0e00f6f912b0
            40aa6cedc3387e1e76b592722e1fc6e0ff2a669e56ea0bf469fe5f41b9db98fe1961b56a61ef630c574aa44ff90ca1ca
            bf0ca91bc5caae1882a52ac9e5b5ffebf8b1648c94f8a9e27a5f870218663da666d30de9782c03c06e154d739e65f010
            ddbaf4b1170a55e07d9d098ab86ccc40c4dc431297f23ac934d9d0a8b7b875a94ff22e04d10e44d7d99e098feb91bfda
            0421e49525905b52af48dc78a26190fea91d268fe9361ac4675cf02401f8c384bd8f9f05265638be6b1c7ef792b2c8bf
            2dbaedc6ba6539d6ba7bd6ac09a5773143ce660f4668163b1db2077e383e39a553f62813b409b60214c67339bd1f5f0d
            39818a520e8e794458aac4b2927722a394057ec18435a1bcaff4d6940fc1f944cbb69cb1f9d3e6ded7d7c8646c891034
            c07ba04600
            """),
        ("rsa-sha2-512",
            """
            1b0000001873657373696f6e2d62696e64406f70656e7373682e636f6d00000197000000077373682d72736100000003
            01000100000181009d8aa049e31cf5f7cc6e74539484861fb2b2401a0bce9959afd17927bbb012d7ba6512f248ffffb3
            964eac2b0b28bef21f586558ce411ea996a4e59279683ed32c351efbcabfcc2808b1ab02db447f06fb6ba3c1a34b4523
            2d3c01a7aa42574e98dd0db889927fca63f3e8f094b1ca074cfddf8304c7fd39d703f1876bf25b58fde14b9f9a31df65
            fb61fa4d299323e64a00b6b379afeeedf5aea7570729d83b26bafe945096e7c32cb3943b43c62ef07e62591543f6ae12
            970518f58985ab8ddd17fc6535a1e3897fbf73de7573233cf972f9436ed105001e0e474cc4a6a9fe070df511c527c959
            75bbaeffdd03bc248084bc7700bc8b44efbc23884c55860aa252e3051e2a8403e30249abe293580685454f54eebee382
            ff9f21178d13ecd39b0e30ad2b728ad3fc10c3f20172da7320e556af8ec35ad15b358757dd00d6f8f91ff815ec6a8ea5
            cd03f4db4f086670982936b494ad0b65c24a20c5aece73544f88365d3f4683e1abf512ef375acfdbf7724ad1142acb8d
            c9a17a8f220a146700000040c407d6f2978c9aa6dbd3d67d4aa0225af9c5e6e0e71fa6124a46f876b490fd23de47dbe7
            68a113aa771f46aa8b5d8535625930f502a2147825ac58f26c0bda54000001940000000c7273612d736861322d353132
            0000018045a7f1c35e97ef209b5d302d2be72cb873a128decb77486654cda822b7a33dab03a2f471364a6ed629dad4c0
            d4acc95715265f5a2c091fe9917c997bb9b182e1b24743385339dda31824902c1564e88c8f9650fae7b6541b21d34671
            6494f4b8d45ceebd2a087ec2d1b9d08e7d6e235432168061184efa5b597895580c59dd0d57e964de52b4b94634c8998e
            211fb0ac084f4af23435a971b77265cfe59dec2e9e0e5dd0441a2ce5cdd68d15481dc6bed83dfb6cbb434c800b3317d0
            6fc4520a7d33e7f461f9c5f546a2ccc7c55b353b9912eba2b3946abb1b7fe13d04628ff2cc403bf491ba6fd2380eddce
            44dfcfccf1933be753a9f3265377c03a40dc5161eba0a263500758f59ba6a88be621dc5c0c839152ad2382ca04b34a11
            289e4f121be4ddd0887b6fba1182c2427ae07e0202aba3589e285a981c51c7df880788a62d0e9abc831b83f822de2dcf
            59242745e0cdf48f44cc04353a88eb5a2617449a521b95ed9508549c654d93516d09d2a1f46adcc192c15e0acf02ba9e
            2a84f99600
            """),
    ]

    /// The session-bind before the user authentication request below (ssh-ed25519 host key).
    static let userauthBind =
        """
        1b0000001873657373696f6e2d62696e64406f70656e7373682e636f6d000000330000000b7373682d65643235353139
        00000020b288223fd35ea49d5b17185f09bf2f6617468657a9742bc4f841e032e96c7df1000000401e28558d1106c865
        dfbd5cbb3791e1ad6eea36852e0e82ff1001693aa1d67d962b6215985c61f9cee09796a9fdac30ac414b0e581dcfb703
        aee4614f00cc1f8e000000530000000b7373682d6564323535313900000040f36e26a72d76a9149c88addc75b019979e
        9f23de8aba00043e46d62353510049417f93b2a01f2bc391d204af941a5cc0e1e79ce6fc916bdc5b9ab8b3599f5a0900
        """

    static let userauthSignRequest =
        """
        0d000000680000001365636473612d736861322d6e69737470323536000000086e697374703235360000004104312b74
        f47d02bce68cc84e45d606af102f67813de08691f894b9b7ac66af4ea5dfb6c8a69f0778540491e0310c8c625a9ced7c
        14d9e1a2979b3e5d185a47e30400000141000000401e28558d1106c865dfbd5cbb3791e1ad6eea36852e0e82ff100169
        3aa1d67d962b6215985c61f9cee09796a9fdac30ac414b0e581dcfb703aee4614f00cc1f8e3200000004726f6f740000
        000e7373682d636f6e6e656374696f6e000000237075626c69636b65792d686f7374626f756e642d763030406f70656e
        7373682e636f6d010000001365636473612d736861322d6e69737470323536000000680000001365636473612d736861
        322d6e69737470323536000000086e697374703235360000004104312b74f47d02bce68cc84e45d606af102f67813de0
        8691f894b9b7ac66af4ea5dfb6c8a69f0778540491e0310c8c625a9ced7c14d9e1a2979b3e5d185a47e3040000003300
        00000b7373682d6564323535313900000020b288223fd35ea49d5b17185f09bf2f6617468657a9742bc4f841e032e96c
        7df100000000
        """

    static let sshsigSignRequest =
        """
        0d000000680000001365636473612d736861322d6e69737470323536000000086e697374703235360000004104312b74
        f47d02bce68cc84e45d606af102f67813de08691f894b9b7ac66af4ea5dfb6c8a69f0778540491e0310c8c625a9ced7c
        14d9e1a2979b3e5d185a47e3040000005f53534853494700000003676974000000000000000673686135313200000040
        43f99131d779ca59796636caf23fd6e192a5816e474f65002dca95652a6d7079bacfce892da9920a7b54a72dd8eec52c
        001073b110d71e82f04df9d250a7d56500000000
        """


    static func bind(_ hex: String) throws -> AgentMessage.SessionBind {
        guard case .sessionBind(let bind) = try AgentMessage.decode(bytes(hex)) else {
            throw SSHTool.Failure(description: "not a session-bind")
        }
        return bind
    }

    @Test func everyRecordedSessionBindVerifiesAndReencodesToItsBytes() throws {
        for (algorithm, hex) in Self.sessionBinds {
            let bind = try Self.bind(hex)
            #expect(try SSHSignature.parse(bind.signature).algorithm == algorithm)
            #expect(!bind.isForwarding && bind.sessionID.count >= 32)
            #expect(throws: Never.self, "\(algorithm)") { try bind.verify() }
            #expect(AgentMessage.sessionBind(bind).encode() == Self.bytes(hex))
        }
    }

    @Test func aRecordedSessionBindFailsForAnyOtherSessionOrKey() throws {
        let binds = try Self.sessionBinds.map { try Self.bind($0.1) }
        for (index, bind) in binds.enumerated() {
            var other = bind
            other.sessionID[0] ^= 0x80
            #expect(throws: HostKeySignature.Failure.bad) { try other.verify() }
            other = bind
            other.sessionID = binds[(index + 1) % binds.count].sessionID
            #expect(throws: HostKeySignature.Failure.self) { try other.verify() }
            other = bind
            other.sessionID = []
            #expect(throws: HostKeySignature.Failure.self) { try other.verify() }
        }
        // The two RSA binds are one key: each signature fails under the other's session.
        let rsa = binds.filter { SSHPublicKey.typeName(of: $0.hostKey) == "ssh-rsa" }
        #expect(rsa.count == 2 && rsa[0].hostKey == rsa[1].hostKey)
        var swapped = rsa[0]
        swapped.signature = rsa[1].signature
        #expect(throws: HostKeySignature.Failure.bad) { try swapped.verify() }
    }

    /// The request ssh signs to log in names the session and host key the bind gave.
    @Test func theRecordedUserauthIsBoundToTheRecordedSession() throws {
        let bind = try Self.bind(Self.userauthBind)
        #expect(throws: Never.self) { try bind.verify() }
        guard case .signRequest(let request) = try AgentMessage.decode(Self.bytes(Self.userauthSignRequest)) else {
            Issue.record("not a sign request")
            return
        }
        #expect(request.flags == 0 && SSHPublicKey.typeName(of: request.keyBlob) == "ecdsa-sha2-nistp256")
        guard case .userauth(let auth) = SignedData.classify(request.data) else {
            Issue.record("not a userauth: \(request.data)")
            return
        }
        #expect(auth.user == "root" && auth.names(keyBlob: request.keyBlob))
        #expect(auth.sessionID == bind.sessionID)
        #expect(auth.hostKey == bind.hostKey)
    }

    @Test func theRecordedSSHSIGRequestIsForGit() throws {
        guard case .signRequest(let request) = try AgentMessage.decode(Self.bytes(Self.sshsigSignRequest)) else {
            Issue.record("not a sign request")
            return
        }
        let message = Array("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n".utf8)
        #expect(SignedData.classify(request.data)
                == .sshsig(.init(namespace: "git", hashAlgorithm: "sha512", messageHash: SSHDigest.hash(.sha512, message)!)))
        #expect(request.data == SSHTool.signedData(message: message, namespace: "git"))
    }

    /// Random single-byte changes to the recorded binds: each either fails to decode or,
    /// if it changed the host key, session or signature, fails to verify. Never a trap.
    @Test func everyChangedBindFailsToVerify() throws {
        var generator = SystemRandomNumberGenerator()
        var changed = 0
        for (_, hex) in Self.sessionBinds {
            let original = Self.bytes(hex)
            let bind = try Self.bind(hex)
            for _ in 0..<150 {
                var bytes = original
                let index = Int.random(in: 1..<bytes.count, using: &generator)
                bytes[index] ^= UInt8.random(in: 1...255, using: &generator)
                guard case .sessionBind(let other) = try? AgentMessage.decode(bytes) else { continue }
                guard other.hostKey != bind.hostKey || other.sessionID != bind.sessionID || other.signature != bind.signature
                else { continue }
                changed += 1
                #expect(throws: HostKeySignature.Failure.self, "byte \(index)") { try other.verify() }
            }
        }
        #expect(changed > 100)
    }
}
