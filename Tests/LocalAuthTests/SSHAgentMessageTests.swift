import Testing
@testable import LocalAuth

/// The ssh-agent messages (draft-miller-ssh-agent) as OpenSSH's client writes them, and the
/// frames they come in.
@Suite struct SSHAgentMessageTests {
    static let blob = try! SSHPublicKey.p256Blob(point: [0x04] + [UInt8](repeating: 0x11, count: 64))

    @Test func requestIdentitiesIsMessage11() throws {
        #expect(try AgentMessage.decode([11]) == .requestIdentities)
        #expect(AgentMessage.requestIdentities.encode() == [11])
    }

    @Test func aSignRequestCarriesKeyDataAndFlags() throws {
        var w = SSHWriter()
        w.byte(13)
        w.string(Self.blob)
        w.string([1, 2, 3])
        w.uint32(4)
        let message = try AgentMessage.decode(w.bytes)
        #expect(message == .signRequest(.init(keyBlob: Self.blob, data: [1, 2, 3], flags: AgentMessage.SignRequest.rsaSHA2_512)))
        #expect(message.encode() == w.bytes)
    }

    @Test func sessionBindIsDecodedFieldByField() throws {
        var w = SSHWriter()
        w.byte(27)
        w.string("session-bind@openssh.com")
        w.string(Self.blob)
        w.string([UInt8](repeating: 0xaa, count: 32))
        w.string([9, 9, 9])
        w.bool(true)
        let message = try AgentMessage.decode(w.bytes)
        guard case .sessionBind(let bind) = message else {
            Issue.record("not a session-bind: \(message)")
            return
        }
        #expect(bind.hostKey == Self.blob && bind.sessionID.count == 32 && bind.signature == [9, 9, 9])
        #expect(bind.isForwarding)
        #expect(message.encode() == w.bytes)
    }

    /// Any non-zero is_forwarding byte is a forwarded connection (never mistaken for local).
    @Test func anyNonZeroForwardingByteIsForwarding() throws {
        let bind = AgentMessage.SessionBind(hostKey: Self.blob, sessionID: [1], signature: [2], isForwarding: false)
        var bytes = AgentMessage.sessionBind(bind).encode()
        #expect(try AgentMessage.decode(bytes) == .sessionBind(bind))
        bytes[bytes.count - 1] = 0x80
        guard case .sessionBind(let forwarded) = try AgentMessage.decode(bytes) else {
            Issue.record("not a session-bind")
            return
        }
        #expect(forwarded.isForwarding)
    }

    @Test func aSessionIDOver128BytesIsRefused() {
        let bind = AgentMessage.SessionBind(hostKey: Self.blob, sessionID: [UInt8](repeating: 1, count: 129),
                                            signature: [2], isForwarding: false)
        #expect(throws: SSHWireError.tooLong(length: 129, limit: 128)) {
            try AgentMessage.decode(AgentMessage.sessionBind(bind).encode())
        }
    }

    @Test func anUnknownExtensionIsNamedNotRead() throws {
        var w = SSHWriter()
        w.byte(27)
        w.string("query")
        w.string([0xff, 0xff])
        #expect(try AgentMessage.decode(w.bytes) == .unknownExtension(name: "query"))
        var bad = SSHWriter()
        bad.byte(27)
        bad.string([0xc3, 0x28])  // not UTF-8: still only an unknown extension
        guard case .unknownExtension = try AgentMessage.decode(bad.bytes) else {
            Issue.record("not an unknown extension")
            return
        }
    }

    /// Adding or removing keys, locking, smartcards: not served, whatever follows.
    @Test func otherMessagesAreUnsupported() throws {
        for number: UInt8 in [0, 1, 9, 17, 18, 19, 20, 21, 22, 23, 25, 26, 255] {
            #expect(try AgentMessage.decode([number, 0xff, 0xff]) == .unsupported(type: number))
        }
    }

    @Test func malformedRequestsAreTypedErrors() {
        var sign = SSHWriter()
        sign.byte(13)
        sign.string(Self.blob)
        sign.string([1])
        let whole = sign.bytes + [0, 0, 0, 0]
        #expect(throws: SSHWireError.self) { try AgentMessage.decode([]) }
        #expect(throws: SSHWireError.truncated) { try AgentMessage.decode(sign.bytes) }  // no flags
        #expect(throws: SSHWireError.trailingBytes(1)) { try AgentMessage.decode(whole + [0]) }
        #expect(throws: SSHWireError.trailingBytes(1)) { try AgentMessage.decode([11, 0]) }
        for cut in 1..<whole.count {
            #expect(throws: SSHWireError.self) { try AgentMessage.decode(Array(whole.prefix(cut))) }
        }
        var huge = SSHWriter()
        huge.byte(13)
        huge.uint32(0x7fff_ffff)
        #expect(throws: SSHWireError.tooLong(length: 0x7fff_ffff, limit: AgentMessage.Limit.keyBlob)) {
            try AgentMessage.decode(huge.bytes)
        }
    }

    @Test func repliesEncodeAsTheDraftSays() throws {
        #expect(AgentReply.failure.encode() == [5])
        #expect(AgentReply.success.encode() == [6])
        #expect(AgentReply.signature([1, 2]).encode() == [14, 0, 0, 0, 2, 1, 2])
        let identities = AgentReply.identities([.init(keyBlob: Self.blob, comment: "laptop"), .init(keyBlob: [7], comment: "")])
        let bytes = identities.encode()
        #expect(Array(bytes.prefix(5)) == [12, 0, 0, 0, 2])
        #expect(try AgentReply.decode(bytes) == identities)
        #expect(try AgentReply.decode(AgentReply.identities([]).encode()) == .identities([]))
        #expect(throws: SSHWireError.self) { try AgentReply.decode([12, 0, 0, 0, 3]) }
        #expect(throws: SSHWireError.tooLong(length: 0xffff_ffff, limit: 1024)) {
            try AgentReply.decode([12, 0xff, 0xff, 0xff, 0xff])
        }
    }

    @Test func framesSplitAtTheirLength() throws {
        let one = AgentFrame.frame([11])
        #expect(one == [0, 0, 0, 1, 11])
        let stream = one + AgentFrame.frame([13, 1, 2])
        let first = try AgentFrame.split(stream)
        #expect(first.body == [11] && first.consumed == 5)
        let second = try AgentFrame.split(Array(stream.dropFirst(first.consumed)))
        #expect(second.body == [13, 1, 2] && second.consumed == 7)
    }

    @Test func incompleteEmptyAndOversizedFramesAreErrors() {
        #expect(throws: AgentFrame.Failure.incomplete(have: 0, need: 4)) { try AgentFrame.split([]) }
        #expect(throws: AgentFrame.Failure.incomplete(have: 3, need: 4)) { try AgentFrame.split([0, 0, 0]) }
        #expect(throws: AgentFrame.Failure.incomplete(have: 5, need: 7)) { try AgentFrame.split([0, 0, 0, 3, 1]) }
        #expect(throws: AgentFrame.Failure.empty) { try AgentFrame.split([0, 0, 0, 0]) }
        #expect(throws: AgentFrame.Failure.oversized(length: 256 * 1024 + 1)) {
            try AgentFrame.split([0, 4, 0, 1])
        }
        #expect(throws: AgentFrame.Failure.oversized(length: 0xffff_ffff)) { try AgentFrame.split([0xff, 0xff, 0xff, 0xff]) }
        // Exactly the maximum is a frame.
        let max = [0, 4, 0, 0] + [UInt8](repeating: 11, count: 256 * 1024)
        #expect((try? AgentFrame.split(max))?.consumed == max.count)
    }
}
