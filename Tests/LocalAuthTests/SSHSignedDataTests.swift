import Testing
@testable import LocalAuth

/// What the agent is asked to sign, as OpenSSH's ssh (RFC 4252 §7, PROTOCOL
/// "publickey-hostbound-v00@openssh.com") and ssh-keygen -Y sign (PROTOCOL.sshsig) write it.
@Suite struct SSHSignedDataTests {
    static let key = try! SSHPublicKey.p256Blob(point: [0x04] + [UInt8](repeating: 0x22, count: 64))
    static let hostKey: [UInt8] = {
        var w = SSHWriter()
        w.string("ssh-ed25519")
        w.string([UInt8](repeating: 0x33, count: 32))
        return w.bytes
    }()
    static let sessionID = [UInt8](repeating: 0x5a, count: 32)

    static func userauth(method: String = "publickey", user: String = "alice", hasSignature: UInt8 = 1,
                         hostKey: [UInt8]? = nil) -> [UInt8] {
        var w = SSHWriter()
        w.string(sessionID)
        w.byte(50)
        w.string(user)
        w.string("ssh-connection")
        w.string(method)
        w.byte(hasSignature)
        w.string("ecdsa-sha2-nistp256")
        w.string(key)
        if let hostKey { w.string(hostKey) }
        return w.bytes
    }

    @Test func aPublickeyRequestIsAUserauth() {
        let expected = SignedData.UserAuth(sessionID: Self.sessionID, user: "alice", service: "ssh-connection",
                                           algorithm: "ecdsa-sha2-nistp256", keyBlob: Self.key, hostKey: nil)
        #expect(SignedData.classify(Self.userauth()) == .userauth(expected))
    }

    @Test func aHostboundRequestCarriesTheHostKey() {
        let data = Self.userauth(method: SignedData.hostboundMethod, hostKey: Self.hostKey)
        guard case .userauth(let auth) = SignedData.classify(data) else {
            Issue.record("not a userauth")
            return
        }
        #expect(auth.hostKey == Self.hostKey && auth.sessionID == Self.sessionID && auth.user == "alice")
        // The hostbound method without its host key, or the plain one with a host key after it: neither.
        #expect(SignedData.classify(Self.userauth(method: SignedData.hostboundMethod)) == .other)
        #expect(SignedData.classify(Self.userauth(hostKey: Self.hostKey)) == .other)
    }

    @Test func almostAUserauthIsOther() {
        #expect(SignedData.classify(Self.userauth(method: "password")) == .other)
        #expect(SignedData.classify(Self.userauth(hasSignature: 0)) == .other)
        #expect(SignedData.classify(Self.userauth(user: "alice\u{1b}[2J")) == .other)
        var wrongNumber = Self.userauth()
        wrongNumber[4 + 32] = 51
        #expect(SignedData.classify(wrongNumber) == .other)
        let whole = Self.userauth()
        for cut in 0..<whole.count {
            #expect(SignedData.classify(Array(whole.prefix(cut))) == .other)
        }
        #expect(SignedData.classify(whole + [0]) == .other)
        var longSession = SSHWriter()
        longSession.string([UInt8](repeating: 1, count: 129))
        #expect(SignedData.classify(longSession.bytes + Array(whole.dropFirst(36))) == .other)
    }

    @Test func anSSHSIGBlobNamesItsNamespace() {
        let data = SSHTool.signedData(message: Array("commit".utf8), namespace: "git")
        guard case .sshsig(let sig) = SignedData.classify(data) else {
            Issue.record("not an sshsig")
            return
        }
        #expect(sig.namespace == "git" && sig.hashAlgorithm == "sha512" && sig.messageHash.count == 64)
        let file = SSHTool.signedData(message: [], namespace: "file", hashAlgorithm: "sha256")
        #expect(SignedData.classify(file) == .sshsig(.init(namespace: "file", hashAlgorithm: "sha256",
                                                            messageHash: SSHDigest.hash(.sha256, [])!)))
    }

    @Test func almostAnSSHSIGIsOther() {
        let whole = SSHTool.signedData(message: [1], namespace: "git")
        for cut in 0..<whole.count {
            #expect(SignedData.classify(Array(whole.prefix(cut))) == .other)
        }
        #expect(SignedData.classify(whole + [0]) == .other)
        #expect(SignedData.classify(SSHTool.signedData(message: [1], namespace: "")) == .other)
        #expect(SignedData.classify(SSHTool.signedData(message: [1], namespace: "git\nsign a file")) == .other)
        // A hash whose length is not its algorithm's.
        var w = SSHWriter()
        w.raw(Array("SSHSIG".utf8))
        w.string("git")
        w.string([UInt8]())
        w.string("sha512")
        w.string([UInt8](repeating: 0, count: 32))
        #expect(SignedData.classify(w.bytes) == .other)
        #expect(SignedData.classify(Array("SSHSIG".utf8)) == .other)
    }

    @Test func otherDataIsOther() {
        #expect(SignedData.classify([]) == .other)
        #expect(SignedData.classify(Array("just some bytes to sign".utf8)) == .other)
    }
}
