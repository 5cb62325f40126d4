import LocalAuthProtocol
import Testing

/// `mode=ssh` requests (`localauthctl ssh`): every operation round-trips; numbers, flags and
/// names are strict; the keys are in the wire's order.
@Suite struct SSHKeyRequestTests {
    static let caller = Request.Caller(user: "alice", service: "localauthctl", callerUID: 1000, pid: 77)

    static let everyOperation: [Request.SSH] = [
        .create(name: "work", requirement: "biometry", reuseSeconds: 0, forwarding: false, comment: ""),
        .create(name: "git", requirement: "biometry-current-set", reuseSeconds: 300, forwarding: true,
                comment: "alice@example.org"),
        .list(after: nil),
        .list(after: "m"),
        .delete(name: "work"),
        .policy(name: "work", requirement: "biometry-or-password", reuseSeconds: nil, forwarding: nil),
        .policy(name: "work", requirement: nil, reuseSeconds: 30, forwarding: false),
        .policy(name: "work", requirement: nil, reuseSeconds: nil, forwarding: true),
        .uses(skip: 0),
        .uses(skip: 12),
    ]

    @Test func everyOperationDecodesAsItWasEncoded() throws {
        for op in Self.everyOperation {
            let request = Request.ssh(Self.caller, op)
            #expect(try Request.decode(request.encode()).get() == request, "\(op)")
            #expect(request.mode == .ssh)
        }
        #expect(Set(Self.everyOperation.map(\.op)) == Set(Request.SSH.operations))
    }

    @Test func keysAreInTheWiresOrder() {
        let text = String(decoding: Request.ssh(Request.Caller(user: "u"), .create(name: "n", requirement: "biometry",
                                                                                    reuseSeconds: 5, forwarding: true,
                                                                                    comment: "c d")).encode(),
                          as: UTF8.self)
        #expect(text.hasPrefix("version=1\nmode=ssh\nop=create\nname=n\nrequirement=biometry\nreuse=5\nforwarding=1\ncomment=c d\nuser=u\n"))
    }

    @Test func refusesWhatIsNoOperation() {
        let refused: [(String, String)] = [
            ("op=steal", "mode=ssh needs a known op (create|list|delete|policy|uses)"),
            ("op=", "mode=ssh needs a known op (create|list|delete|policy|uses)"),
            ("op=delete", "mode=ssh op=delete needs name="),
            ("op=delete\nname=", "mode=ssh op=delete needs name="),
            ("op=create\nname=a", "mode=ssh op=create needs requirement="),
            ("op=create\nname=a\nrequirement=biometry\nreuse=-1", "reuse= is not a number of seconds"),
            ("op=create\nname=a\nrequirement=biometry\nreuse=1e3", "reuse= is not a number of seconds"),
            ("op=create\nname=a\nrequirement=biometry\nreuse=9999999", "reuse= is not a number of seconds"),
            ("op=create\nname=a\nrequirement=biometry\nforwarding=yes", "forwarding= is 0 or 1"),
            ("op=policy\nname=a", "mode=ssh op=policy needs requirement=, reuse= or forwarding="),
            ("op=uses\nskip=x", "skip= is not a number"),
            ("op=delete\nname=a\nname=b", "request repeats `name`"),
            ("op=policy\nname=a\nreuse=1\nreuse=300", "request repeats `reuse`"),
        ]
        for (keys, why) in refused {
            let text = "version=1\nmode=ssh\n\(keys)\nuser=a"
            #expect(Request.decode(Array(text.utf8)) == .failure(Request.Problem(why)), "\(keys)")
        }
    }

    /// The name is sent as given: the root side judges it (SSHKeyRecord.nameProblem), and a
    /// value cannot carry a second line.
    @Test func aHostileNameTravelsAsOneValue() throws {
        let request = Request.ssh(Self.caller, .delete(name: "../../x\nmode=status"))
        #expect(try Request.decode(request.encode()).get() == .ssh(Self.caller, .delete(name: "../../xmode=status")))
    }
}
