/// What a client asks the agent to sign, read from the data itself: the prompt says what
/// is approved, and the agent checks a user authentication against its bound session.
public enum SignedData: Equatable {
    /// An SSH_MSG_USERAUTH_REQUEST for "publickey" (RFC 4252 §7), as ssh signs it to log in.
    case userauth(UserAuth)
    /// An SSHSIG signed-data blob (OpenSSH PROTOCOL.sshsig): `ssh-keygen -Y sign`, git.
    case sshsig(SSHSig)
    /// Anything else.
    case other

    public struct UserAuth: Equatable {
        /// The session identifier the client says this is for (compare with the bound one).
        public var sessionID: [UInt8]
        public var user: String
        public var service: String
        /// The signature algorithm named in the request ("ecdsa-sha2-nistp256").
        public var algorithm: String
        /// The public key blob named in the request.
        public var keyBlob: [UInt8]
        /// The server's host key, in "publickey-hostbound-v00@openssh.com" requests only.
        public var hostKey: [UInt8]?
    }

    public struct SSHSig: Equatable {
        /// "git" for git's signatures, "file" for ssh-keygen's default, anything else.
        public var namespace: String
        public var hashAlgorithm: String
        public var messageHash: [UInt8]
    }

    static let userauthRequest: UInt8 = 50
    static let sshsigMagic = Array("SSHSIG".utf8)
    public static let hostboundMethod = "publickey-hostbound-v00@openssh.com"

    /// Which of the three `data` is; a blob that is almost one of them is `.other`.
    public static func classify(_ data: [UInt8]) -> SignedData {
        if data.starts(with: sshsigMagic), let sig = try? sshsig(data) { return .sshsig(sig) }
        if let auth = try? userauth(data) { return .userauth(auth) }
        return .other
    }

    /// string session id, byte 50, string user, string service, string method, bool TRUE,
    /// string algorithm, string key blob [, string host key (hostbound method)].
    static func userauth(_ data: [UInt8]) throws(SSHWireError) -> UserAuth {
        var r = SSHReader(data)
        let sessionID = try r.string(limit: AgentMessage.Limit.sessionID)
        guard try r.byte() == userauthRequest else { throw .malformed("not a user authentication request") }
        let user = try r.text(limit: 1024)
        let service = try r.text(limit: 256)
        let method = try r.text(limit: 256)
        guard method == "publickey" || method == hostboundMethod else { throw .malformed("method \(method)") }
        guard try r.byte() == 1 else { throw .malformed("a publickey request without a signature") }
        guard plain(user), plain(service) else { throw .malformed("control characters in a name") }
        let algorithm = try r.text(limit: 64)
        let keyBlob = try r.string(limit: AgentMessage.Limit.keyBlob)
        let hostKey = method == hostboundMethod ? try r.string(limit: AgentMessage.Limit.keyBlob) : nil
        try r.finish()
        return UserAuth(sessionID: sessionID, user: user, service: service, algorithm: algorithm,
                        keyBlob: keyBlob, hostKey: hostKey)
    }

    /// "SSHSIG", string namespace, string reserved, string hash algorithm, string H(message).
    static func sshsig(_ data: [UInt8]) throws(SSHWireError) -> SSHSig {
        var r = SSHReader(data)
        _ = try r.take(sshsigMagic.count)
        let namespace = try r.text(limit: 256)
        guard !namespace.isEmpty, plain(namespace) else { throw .malformed("an empty namespace or one with control characters") }
        _ = try r.string(limit: 1024)  // reserved
        let hash = try r.text(limit: 64)
        let digest = try r.string(limit: 64)
        try r.finish()
        guard (hash == "sha256" && digest.count == 32) || (hash == "sha512" && digest.count == 64) else {
            throw .malformed("hash \(hash) of \(digest.count) bytes")
        }
        return SSHSig(namespace: namespace, hashAlgorithm: hash, messageHash: digest)
    }

    /// No control characters (C0, DEL, C1): these names reach a prompt.
    static func plain(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.value >= 0x20 && !(0x7f...0x9f).contains($0.value) }
    }
}
