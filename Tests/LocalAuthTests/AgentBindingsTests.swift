import Testing
@testable import LocalAuth

/// The session-bind rules of one agent connection (OpenSSH's PROTOCOL.agent), with the
/// signature check given as a verdict: what the bind changes, and what it refuses.
@Suite struct AgentBindingsTests {
    static let host: [UInt8] = [1, 1, 1]
    static let otherHost: [UInt8] = [2, 2, 2]
    static let sid = [UInt8](repeating: 0xaa, count: 32)
    static let otherSID = [UInt8](repeating: 0xbb, count: 32)

    static func bind(_ host: [UInt8] = host, _ sid: [UInt8] = sid, forwarding: Bool = false) -> AgentMessage.SessionBind {
        AgentMessage.SessionBind(hostKey: host, sessionID: sid, signature: [9], isForwarding: forwarding)
    }

    static func auth(_ sid: [UInt8] = sid, host: [UInt8]? = nil) -> SignedData.UserAuth {
        SignedData.UserAuth(sessionID: sid, user: "git", algorithm: "ecdsa-sha2-nistp256", keyBlob: [3], hostKey: host)
    }

    static func good(_: AgentMessage.SessionBind) -> Bool { true }
    static func bad(_: AgentMessage.SessionBind) -> Bool { false }

    @Test func aBindThatVerifiesIsRecordedForAuthentication() {
        var b = AgentBindings()
        #expect(b.bind(Self.bind(), verifies: Self.good) == nil)
        #expect(b.boundForAuthentication?.sessionID == Self.sid && !b.forwarded)
        #expect(b.signRefusal == nil && b.userauthRefusal(Self.auth()) == nil)
    }

    @Test func aConnectionBoundForAuthenticationIsNeverRebound() {
        var b = AgentBindings()
        _ = b.bind(Self.bind(), verifies: Self.good)
        let why = b.bind(Self.bind(Self.otherHost, Self.otherSID), verifies: Self.good)
        #expect(why?.contains("never bound again") == true)
        #expect(b.binds.count == 1 && b.boundForAuthentication?.hostKey == Self.host)
        let forwarding = b.bind(Self.bind(forwarding: true), verifies: Self.good)
        #expect(forwarding != nil && !b.forwarded)
    }

    @Test func aBadSignatureChangesNothingButRefusesEverySignatureAfterIt() {
        var b = AgentBindings()
        let why = b.bind(Self.bind(forwarding: true), verifies: Self.bad)
        #expect(why?.contains("does not verify") == true)
        #expect(b.binds.isEmpty && !b.forwarded && b.boundForAuthentication == nil)
        #expect(b.signRefusal?.contains("does not verify") == true)
        // A bind that verifies afterwards is recorded, yet nothing is signed on the connection.
        #expect(b.bind(Self.bind(), verifies: Self.good) == nil)
        #expect(b.signRefusal != nil)
    }

    @Test func aRefusedRebindAlsoRefusesLaterSignatures() {
        var b = AgentBindings()
        _ = b.bind(Self.bind(), verifies: Self.good)
        #expect(b.signRefusal == nil)
        _ = b.bind(Self.bind(Self.host, Self.otherSID), verifies: Self.good)
        #expect(b.signRefusal?.contains("never bound again") == true)
    }

    @Test func anEmptySessionIdentifierIsRefusedBeforeTheSignatureIsChecked() {
        var b = AgentBindings()
        var checked = false
        let why = b.bind(Self.bind(Self.host, []), verifies: { _ in checked = true; return true })
        #expect(why == "an empty session identifier" && !checked && b.binds.isEmpty)
    }

    @Test func aUserAuthenticationMustNameTheBoundSessionAndHostKey() {
        var b = AgentBindings()
        #expect(b.userauthRefusal(Self.auth(Self.otherSID)) == nil)   // unbound: not refused here
        _ = b.bind(Self.bind(), verifies: Self.good)
        #expect(b.userauthRefusal(Self.auth(Self.otherSID)) == "the session identifier is not the one bound")
        #expect(b.userauthRefusal(Self.auth(host: Self.otherHost)) == "the request's host key is not the bound session's")
        #expect(b.userauthRefusal(Self.auth(host: Self.host)) == nil)
    }

    @Test func aForwardedChainIsForwardedThroughItsFirstForwardingHop() {
        var b = AgentBindings()
        #expect(b.bind(Self.bind(Self.host, Self.sid, forwarding: true), verifies: Self.good) == nil)
        #expect(b.bind(Self.bind(Self.otherHost, Self.otherSID, forwarding: true), verifies: Self.good) == nil)
        #expect(b.forwarded && b.forwardedThrough?.hostKey == Self.host && b.boundForAuthentication == nil)
        #expect(b.userauthRefusal(Self.auth(Self.otherSID))?.contains("bound for forwarding") == true)
        // The last hop binds for authentication: a login there is the one allowed.
        #expect(b.bind(Self.bind(Self.otherHost, Self.sid), verifies: Self.good) == nil)
        #expect(b.forwarded && b.boundForAuthentication?.hostKey == Self.otherHost)
        #expect(b.userauthRefusal(Self.auth()) == nil && b.signRefusal == nil)
    }

    @Test func atMostSixteenBindsOnOneConnection() {
        var b = AgentBindings()
        for i in 0..<AgentBindings.maxBinds {
            #expect(b.bind(Self.bind(Self.host, [UInt8(i + 1)], forwarding: true), verifies: Self.good) == nil)
        }
        let why = b.bind(Self.bind(Self.host, [99], forwarding: true), verifies: Self.good)
        #expect(why == "more than 16 session binds on one connection" && b.binds.count == 16)
    }
}
