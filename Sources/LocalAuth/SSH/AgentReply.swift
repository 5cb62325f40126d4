/// What the agent answers.
public enum AgentReply: Equatable {
    /// SSH_AGENT_IDENTITIES_ANSWER (12): each key's public blob and comment.
    case identities([Identity])
    /// SSH_AGENT_SIGN_RESPONSE (14): the SSH signature blob (`SSHSignature`).
    case signature([UInt8])
    /// SSH_AGENT_SUCCESS (6).
    case success
    /// SSH_AGENT_FAILURE (5).
    case failure

    public struct Identity: Equatable {
        public var keyBlob: [UInt8]
        public var comment: String

        public init(keyBlob: [UInt8], comment: String) {
            self.keyBlob = keyBlob
            self.comment = comment
        }
    }

    /// The frame's body (wrap it with `AgentFrame.frame`).
    public func encode() -> [UInt8] {
        var w = SSHWriter()
        switch self {
        case .identities(let keys):
            w.byte(AgentMessage.Number.identitiesAnswer)
            w.uint32(UInt32(truncatingIfNeeded: keys.count))
            for key in keys {
                w.string(key.keyBlob)
                w.string(key.comment)
            }
        case .signature(let blob):
            w.byte(AgentMessage.Number.signResponse)
            w.string(blob)
        case .success:
            w.byte(AgentMessage.Number.success)
        case .failure:
            w.byte(AgentMessage.Number.failure)
        }
        return w.bytes
    }

    /// Decodes an answer as a client reads it (tests, the bench); at most `maxKeys` keys.
    public static func decode(_ body: [UInt8], maxKeys: Int = 1024) throws(SSHWireError) -> AgentReply {
        var reader = SSHReader(body)
        let reply: AgentReply
        switch try reader.byte() {
        case AgentMessage.Number.identitiesAnswer:
            let count = try reader.uint32()
            guard count <= UInt32(clamping: maxKeys) else { throw .tooLong(length: Int(count), limit: maxKeys) }
            var keys: [Identity] = []
            for _ in 0..<count {
                let blob = try reader.string(limit: AgentMessage.Limit.keyBlob)
                let comment = String(decoding: try reader.string(limit: AgentMessage.Limit.comment), as: UTF8.self)
                keys.append(Identity(keyBlob: blob, comment: comment))
            }
            reply = .identities(keys)
        case AgentMessage.Number.signResponse:
            reply = .signature(try reader.string(limit: AgentMessage.Limit.signature))
        case AgentMessage.Number.success:
            reply = .success
        case AgentMessage.Number.failure:
            reply = .failure
        case let other:
            throw .malformed("agent answer number \(other)")
        }
        try reader.finish()
        return reply
    }
}
