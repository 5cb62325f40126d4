/// What a client asks the agent to sign, read from the data itself: the prompt says what
/// is approved, and the agent checks a user authentication against its bound session.
public enum SignedData: Equatable {
    /// An SSH_MSG_USERAUTH_REQUEST for "publickey" (RFC 4252 §7), as ssh signs it to log in.
    case userauth(UserAuth)
    /// An SSHSIG signed-data blob (OpenSSH PROTOCOL.sshsig): `ssh-keygen -Y sign`, git.
    case sshsig(SSHSig)
    /// Anything else.
    case other

    /// Read as OpenSSH's agent reads it (ssh-agent.c): what it would take for a user
    /// authentication is one here, whatever the names in it say. The names are for showing.
    public struct UserAuth: Equatable {
        /// The session identifier the client says this is for (compare with the bound one).
        public var sessionID: [UInt8]
        /// The user on the server, fit to show (`SSHText.display`).
        public var user: String
        /// The signature algorithm named in the request ("ecdsa-sha2-nistp256").
        public var algorithm: String
        /// The public key blob named in the request.
        public var keyBlob: [UInt8]
        /// The server's host key, in "publickey-hostbound-v00@openssh.com" requests only
        /// (compare with the bound one).
        public var hostKey: [UInt8]?

        /// Whether the request names `keyBlob` as the key, with its own algorithm (what
        /// OpenSSH's agent requires of a request for the key asked to sign).
        public func names(keyBlob expected: [UInt8]) -> Bool {
            keyBlob == expected && SSHPublicKey.typeName(of: expected) == algorithm
        }
    }

    public struct SSHSig: Equatable {
        /// "git" for git's signatures, "file" for ssh-keygen's default, anything else;
        /// fit to show (`SSHText.display`), so "git" only if it is "git".
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
        guard !sessionID.isEmpty else { throw .malformed("an empty session identifier") }
        guard try r.byte() == userauthRequest else { throw .malformed("not a user authentication request") }
        let user = try r.string(limit: 1024)
        guard try r.string(limit: 64) == Array("ssh-connection".utf8) else { throw .malformed("not ssh-connection") }
        let method = try r.string(limit: 64)
        let hostbound = method == Array(hostboundMethod.utf8)
        guard hostbound || method == Array("publickey".utf8) else { throw .malformed("not a publickey method") }
        guard try r.byte() == 1 else { throw .malformed("a publickey request without a signature") }
        let algorithm = try r.string(limit: 64)
        let keyBlob = try r.string(limit: AgentMessage.Limit.keyBlob)
        let hostKey = hostbound ? try r.string(limit: AgentMessage.Limit.keyBlob) : nil
        try r.finish()
        return UserAuth(sessionID: sessionID, user: SSHText.display(user), algorithm: SSHText.display(algorithm),
                        keyBlob: keyBlob, hostKey: hostKey)
    }

    /// "SSHSIG", string namespace, string reserved, string hash algorithm, string H(message).
    static func sshsig(_ data: [UInt8]) throws(SSHWireError) -> SSHSig {
        var r = SSHReader(data)
        _ = try r.take(sshsigMagic.count)
        let namespace = try r.string(limit: 256)
        guard !namespace.isEmpty else { throw .malformed("an empty namespace") }
        _ = try r.string(limit: 1024)  // reserved
        let hash = try r.string(limit: 64)
        let digest = try r.string(limit: 64)
        try r.finish()
        return SSHSig(namespace: SSHText.display(namespace), hashAlgorithm: SSHText.display(hash), messageHash: digest)
    }
}
