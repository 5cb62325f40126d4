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

    static func userauth(method: String = "publickey", user: String = "alice", service: String = "ssh-connection",
                         hasSignature: UInt8 = 1, sessionID: [UInt8] = sessionID, hostKey: [UInt8]? = nil) -> [UInt8] {
        var w = SSHWriter()
        w.string(sessionID)
        w.byte(50)
        w.string(user)
        w.string(service)
        w.string(method)
        w.byte(hasSignature)
        w.string("ecdsa-sha2-nistp256")
        w.string(key)
        if let hostKey { w.string(hostKey) }
        return w.bytes
    }

    @Test func aPublickeyRequestIsAUserauth() {
        let expected = SignedData.UserAuth(sessionID: Self.sessionID, user: "alice",
                                           algorithm: "ecdsa-sha2-nistp256", keyBlob: Self.key, hostKey: nil)
        #expect(SignedData.classify(Self.userauth()) == .userauth(expected))
        #expect(expected.names(keyBlob: Self.key))
        #expect(!expected.names(keyBlob: Self.hostKey))
    }

    /// What OpenSSH's agent would take for a user authentication is one here, whatever the
    /// user name holds; the name is made fit to show.
    @Test func aUserNameThatCouldRewriteAPromptIsShownDefused() {
        let data = Self.userauth(user: "alice\u{1b}[2J\u{202e}toor")
        guard case .userauth(let auth) = SignedData.classify(data) else {
            Issue.record("not a userauth")
            return
        }
        #expect(auth.user == "alice?[2J?toor")
        var invalid = Self.userauth(user: "ab")
        invalid[4 + 32 + 1 + 4] = 0xff
        guard case .userauth(let lossy) = SignedData.classify(invalid) else {
            Issue.record("not a userauth")
            return
        }
        #expect(lossy.user == "\u{fffd}b")
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
        #expect(SignedData.classify(Self.userauth(service: "ssh-userauth")) == .other)
        #expect(SignedData.classify(Self.userauth(sessionID: [])) == .other)
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
        #expect(SignedData.classify(Array("SSHSIG".utf8)) == .other)
        var w = SSHWriter()
        w.raw(Array("SSHSIG".utf8))
        w.string("git")
        w.string([UInt8]())
        w.string("sha512")
        w.string([UInt8](repeating: 0, count: 65))
        #expect(SignedData.classify(w.bytes) == .other)
    }

    /// A namespace is shown defused, so it is "git" only if it is.
    @Test func aNamespaceWithControlCharactersIsShownDefused() {
        let data = SSHTool.signedData(message: [1], namespace: "git\nsign a file")
        guard case .sshsig(let sig) = SignedData.classify(data) else {
            Issue.record("not an sshsig")
            return
        }
        #expect(sig.namespace == "git?sign a file")
    }

    @Test func otherDataIsOther() {
        #expect(SignedData.classify([]) == .other)
        #expect(SignedData.classify(Array("just some bytes to sign".utf8)) == .other)
    }
}
