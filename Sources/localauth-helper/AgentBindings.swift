import LocalAuth

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
///   (SSHKeyRule.forwardingRefused: refused without a scan unless the key allows it).
struct AgentBindings {
    struct Bind: Equatable {
        let hostKey: [UInt8]
        let sessionID: [UInt8]
        let forwarding: Bool
    }

    private(set) var binds: [Bind] = []

    /// OpenSSH's agent keeps 16; a longer chain is refused.
    static let maxBinds = 16

    /// Forwarded: some hop of the chain forwards the agent.
    var forwarded: Bool { binds.contains { $0.forwarding } }

    /// The host this machine's ssh forwards the agent to (the chain's first forwarding
    /// bind: the only hop whose name this machine's known_hosts can give).
    var forwardedThrough: Bind? { binds.first { $0.forwarding } }

    /// The session the connection is bound to for authentication.
    var boundForAuthentication: Bind? { binds.last.flatMap { $0.forwarding ? nil : $0 } }

    /// Why the bind is refused (nil: recorded). `verifies` checks the host key's signature.
    mutating func bind(_ b: AgentMessage.SessionBind, verifies: (AgentMessage.SessionBind) -> Bool) -> String? {
        if boundForAuthentication != nil {
            return "the connection is bound for authentication already: it is never bound again"
        }
        guard binds.count < Self.maxBinds else { return "more than \(Self.maxBinds) session binds on one connection" }
        guard !b.sessionID.isEmpty else { return "an empty session identifier" }
        guard verifies(b) else { return "the host key's signature over the session identifier does not verify" }
        binds.append(Bind(hostKey: b.hostKey, sessionID: b.sessionID, forwarding: b.isForwarding))
        return nil
    }

    /// Why a user authentication may not be signed on this connection (nil: it may). An
    /// unbound connection (an ssh older than 8.9, or another client) is not refused here:
    /// its destination is then unverified, and the prompt says so.
    func userauthRefusal(_ auth: SignedData.UserAuth) -> String? {
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
