/// The ssh-agent protocol (draft-miller-ssh-agent): what a client asks and what the agent
/// answers. Only the messages localauth serves are decoded; every other request is
/// `.unsupported`, which the agent answers with FAILURE (keys are added and removed through
/// localauthctl, never over the agent socket; there is nothing to lock).
public enum AgentMessage: Equatable {
    /// SSH_AGENTC_REQUEST_IDENTITIES (11).
    case requestIdentities
    /// SSH_AGENTC_SIGN_REQUEST (13): the key's public blob, the data to sign, the flags.
    case signRequest(SignRequest)
    /// SSH_AGENTC_EXTENSION (27) "session-bind@openssh.com".
    case sessionBind(SessionBind)
    /// SSH_AGENTC_EXTENSION (27) with any other name: answered with FAILURE.
    case unknownExtension(name: String)
    /// Any other message number (adding or removing keys, lock, unlock, smartcards).
    case unsupported(type: UInt8)

    public enum Number {
        public static let failure: UInt8 = 5
        public static let success: UInt8 = 6
        public static let requestIdentities: UInt8 = 11
        public static let identitiesAnswer: UInt8 = 12
        public static let signRequest: UInt8 = 13
        public static let signResponse: UInt8 = 14
        public static let `extension`: UInt8 = 27
    }

    public struct SignRequest: Equatable {
        public var keyBlob: [UInt8]
        public var data: [UInt8]
        public var flags: UInt32

        /// SSH_AGENT_RSA_SHA2_256 / _512: only meaningful for RSA keys (localauth's are not).
        public static let rsaSHA2_256: UInt32 = 0x02
        public static let rsaSHA2_512: UInt32 = 0x04

        public init(keyBlob: [UInt8], data: [UInt8], flags: UInt32) {
            self.keyBlob = keyBlob
            self.data = data
            self.flags = flags
        }
    }

    /// What ssh tells its agent after key exchange: the server's host key, the session
    /// identifier (the exchange hash), the host key's signature over it, and whether this
    /// connection forwards the agent onwards. Nothing here is trusted until
    /// `HostKeySignature.verify(hostKey:signature:data: sessionID)` says so.
    public struct SessionBind: Equatable {
        public static let name = "session-bind@openssh.com"
        public var hostKey: [UInt8]
        public var sessionID: [UInt8]
        public var signature: [UInt8]
        public var isForwarding: Bool

        public init(hostKey: [UInt8], sessionID: [UInt8], signature: [UInt8], isForwarding: Bool) {
            self.hostKey = hostKey
            self.sessionID = sessionID
            self.signature = signature
            self.isForwarding = isForwarding
        }

        /// Returns when the host key signed the session identifier; throws saying why not.
        /// An empty session identifier is refused (ssh never sends one).
        public func verify() throws(HostKeySignature.Failure) {
            guard !sessionID.isEmpty else { throw .malformedSignature("an empty session identifier") }
            try HostKeySignature.verify(hostKey: hostKey, signature: signature, data: sessionID)
        }
    }

    /// Bounds on the fields (a frame is at most 256 KiB anyway).
    public enum Limit {
        /// A public key blob (a 16384-bit RSA key is about 2 KiB; certificates more).
        public static let keyBlob = 16 * 1024
        /// A signature blob.
        public static let signature = 16 * 1024
        /// A session identifier (OpenSSH's agent takes at most 128 bytes).
        public static let sessionID = 128
        /// An extension's name.
        public static let extensionName = 256
        /// A comment in an identities answer.
        public static let comment = 1024
    }

    /// Decodes one frame's body (the message number and what follows).
    public static func decode(_ body: [UInt8]) throws(SSHWireError) -> AgentMessage {
        var reader = SSHReader(body)
        let number = try reader.byte()
        let message: AgentMessage
        switch number {
        case Number.requestIdentities:
            message = .requestIdentities
        case Number.signRequest:
            let blob = try reader.string(limit: Limit.keyBlob)
            let data = try reader.string(limit: AgentFrame.maxLength)
            let flags = try reader.uint32()
            message = .signRequest(SignRequest(keyBlob: blob, data: data, flags: flags))
        case Number.extension:
            // The name is read as bytes: a name that is not UTF-8 is still only an unknown one.
            let name = try reader.string(limit: Limit.extensionName)
            guard name == Array(SessionBind.name.utf8) else {
                // An unknown extension's contents are its own; they are not read.
                return .unknownExtension(name: String(decoding: name, as: UTF8.self))
            }
            let hostKey = try reader.string(limit: Limit.keyBlob)
            let sessionID = try reader.string(limit: Limit.sessionID)
            let signature = try reader.string(limit: Limit.signature)
            let forwarding = try reader.bool()
            message = .sessionBind(SessionBind(hostKey: hostKey, sessionID: sessionID,
                                               signature: signature, isForwarding: forwarding))
        default:
            return .unsupported(type: number)
        }
        try reader.finish()
        return message
    }

    /// Encodes a request as a client sends it (for tests and tools speaking to the agent).
    public func encode() -> [UInt8] {
        var w = SSHWriter()
        switch self {
        case .requestIdentities:
            w.byte(Number.requestIdentities)
        case .signRequest(let request):
            w.byte(Number.signRequest)
            w.string(request.keyBlob)
            w.string(request.data)
            w.uint32(request.flags)
        case .sessionBind(let bind):
            w.byte(Number.extension)
            w.string(SessionBind.name)
            w.string(bind.hostKey)
            w.string(bind.sessionID)
            w.string(bind.signature)
            w.bool(bind.isForwarding)
        case .unknownExtension(let name):
            w.byte(Number.extension)
            w.string(name)
        case .unsupported(let type):
            w.byte(type)
        }
        return w.bytes
    }
}
