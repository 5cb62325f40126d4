/// What `session-bind@openssh.com` told this agent connection (OpenSSH's PROTOCOL.agent):
/// after each key exchange ssh gives the server's host key, the session identifier and the
/// host key's signature over it, and whether the connection forwards the agent onwards.
/// Nothing is recorded unless the signature verifies (HostKeySignature), so every host key
/// kept here is one that signed this very session.
///
/// The rules, OpenSSH's agent's:
/// * a connection bound for authentication (is_forwarding 0) is never bound again: it is
///   one ssh's, for one server;
/// * a bind whose signature does not verify is refused (FAILURE) and changes nothing; it
///   comes before any signature, so before any scan;
/// * a user authentication signed on a bound connection must name the last bound session
///   (and, in a hostbound request, that session's host key), and that bind must be for
///   authentication, not for forwarding;
/// * any forwarding bind makes every later request on the connection a forwarded one
///   (SSHKeyRule.forwardingRefused: refused without a scan unless the key allows it);
/// * once a bind on the connection failed, no signature is made on it (OpenSSH's agent
///   refuses a connection whose binds all failed; this is stricter: any failed bind). A
///   client that gets FAILURE for its bind and signs on regardless is not one whose
///   destination can be named, so it is not asked about.
public struct AgentBindings: Sendable {
    public struct Bind: Equatable, Sendable {
        public let hostKey: [UInt8]
        public let sessionID: [UInt8]
        public let forwarding: Bool
    }

    public private(set) var binds: [Bind] = []
    /// Why the first bind refused on this connection was refused (nil: none was).
    public private(set) var failedBind: String?

    public init() {}

    /// OpenSSH's agent keeps 16; a longer chain is refused.
    public static let maxBinds = 16

    /// Forwarded: some hop of the chain forwards the agent.
    public var forwarded: Bool { binds.contains { $0.forwarding } }

    /// The host this machine's ssh forwards the agent to (the chain's first forwarding
    /// bind: the only hop whose name this machine's known_hosts can give).
    public var forwardedThrough: Bind? { binds.first { $0.forwarding } }

    /// The session the connection is bound to for authentication.
    public var boundForAuthentication: Bind? { binds.last.flatMap { $0.forwarding ? nil : $0 } }

    /// Why the bind is refused (nil: recorded). `verifies` checks the host key's signature.
    public mutating func bind(_ b: AgentMessage.SessionBind, verifies: (AgentMessage.SessionBind) -> Bool) -> String? {
        let why = refusal(b, verifies: verifies)
        if let why {
            if failedBind == nil { failedBind = why }
        } else {
            binds.append(Bind(hostKey: b.hostKey, sessionID: b.sessionID, forwarding: b.isForwarding))
        }
        return why
    }

    /// Why no signature at all may be made on this connection (nil: the request's own
    /// rules decide): a bind on it failed.
    public var signRefusal: String? {
        failedBind.map { "a session-bind on this connection was refused (\($0)): nothing is signed on it" }
    }

    private func refusal(_ b: AgentMessage.SessionBind, verifies: (AgentMessage.SessionBind) -> Bool) -> String? {
        if boundForAuthentication != nil {
            return "the connection is bound for authentication already: it is never bound again"
        }
        guard binds.count < Self.maxBinds else { return "more than \(Self.maxBinds) session binds on one connection" }
        guard !b.sessionID.isEmpty else { return "an empty session identifier" }
        guard verifies(b) else { return "the host key's signature over the session identifier does not verify" }
        return nil
    }

    /// Why a user authentication may not be signed on this connection (nil: it may). An
    /// unbound connection (an ssh older than 8.9, or another client) is not refused here:
    /// its destination is then unverified, and the prompt says so.
    public func userauthRefusal(_ auth: SignedData.UserAuth) -> String? {
        guard let last = binds.last else { return nil }
        guard !last.forwarding else {
            return "a user authentication on a session bound for forwarding, not for authentication"
        }
        guard auth.sessionID == last.sessionID else { return "the session identifier is not the one bound" }
        if let hostKey = auth.hostKey, hostKey != last.hostKey {
            return "the request's host key is not the bound session's"
        }
        return nil
    }
}
