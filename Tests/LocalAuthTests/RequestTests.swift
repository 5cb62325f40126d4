import LocalAuthProtocol
import Testing

/// LocalAuthProtocol's Request and Answer: every mode and operation round-trips, the
/// decoder refuses what the helper refuses and takes what it takes (docs/PROTOCOL.md).
@Suite struct RequestTests {
    static let caller = Request.Caller(user: "alice", service: "keeper", stdinTTY: true, display: true,
                                       locale: "C.UTF-8", callerUID: 1000, pid: 321,
                                       arguments: ["fallback_title=Use Password"])

    static let everyCase: [Request] = [
        .authenticate(caller),
        .authsucc(caller, .init()),
        .authsucc(caller, .init(firstLine: true, proof: .account, readerUnreachable: true)),
        .status(Request.Caller(user: "alice", service: "localauthctl", pid: 9)),
        .app(caller, .preflight(.biometrics, keep: true)),
        .app(caller, .preflight(.owner, keep: false)),
        .app(caller, .evaluate(.owner)),
        .right(caller, .save(identifier: "6e6f746573", requirement: "biometry", secret: "00ff", capability: "")),
        .right(caller, .save(identifier: "6e6f746573", requirement: "default", secret: "", capability: nil)),
        .right(caller, .get(identifier: "6e6f746573")),
        .right(caller, .check(identifier: "6e6f746573")),
        .right(caller, .authorize(identifier: "6e6f746573", localizedReason: "6869")),
        .right(caller, .authorize(identifier: "6e6f746573", localizedReason: nil)),
        .right(caller, .deauthorize(identifier: "6e6f746573")),
        .right(caller, .secret(identifier: "6e6f746573", capability: String(repeating: "ab", count: 32))),
        .right(caller, .sign(identifier: "6e6f746573", digest: String(repeating: "01", count: 32), capability: "cc")),
        .right(caller, .remove(identifier: "6e6f746573", capability: nil)),
        .right(caller, .removeAll(capabilities: ["aa", "bb"])),
        .right(caller, .removeAll(capabilities: [])),
        .ssh(caller, .list(after: nil)),
    ]

    @Test func everyModeAndOperationDecodesAsItWasEncoded() throws {
        for request in Self.everyCase {
            #expect(try Request.decode(request.encode()).get() == request, "\(request)")
        }
        let ops = Set(Self.everyCase.compactMap { if case .right(_, let r) = $0 { return r.op } else { return nil } })
        #expect(ops == Set(Request.Right.operations))
        #expect(Set(Self.everyCase.map(\.mode)) == Set(Request.Mode.allCases))
    }

    @Test func keysAreInTheWiresOrder() {
        let text = String(decoding: Request.app(Self.caller, .preflight(.biometrics, keep: true)).encode(), as: UTF8.self)
        #expect(text == """
            version=1
            mode=app
            op=preflight
            policy=biometrics
            user=alice
            service=keeper
            tty=
            rhost=
            ruser=
            silent=0
            stdin_tty=1
            display=1
            locale=C.UTF-8
            language=
            caller_uid=1000
            pid=321
            arg=fallback_title=Use Password
            keep=1
            """)
        let right = String(decoding: Request.right(Request.Caller(user: "u"), .sign(identifier: "61", digest: "dd",
                                                                                      capability: "cc")).encode(),
                           as: UTF8.self)
        #expect(right.hasPrefix("version=1\nmode=right\nop=sign\nidentifier=61\ndigest=dd\ncapability=cc\nuser=u\n"))
    }

    @Test func refusesWhatTheHelperRefuses() {
        let refused: [(String, String)] = [
            ("version=2\nmode=status\nuser=a", "unsupported request version"),
            ("mode=status\nuser=a", "unsupported request version"),
            ("version=1\nuser=a", "unknown mode"),
            ("version=1\nmode=nosuch\nuser=a", "unknown mode"),
            ("version=1\nmode=status\nmode=app\nuser=a", "request repeats `mode`"),
            ("version=1\nmode=authsucc\nuser=a\nproof=authtok\nproof=account", "request repeats `proof`"),
            ("version=1\nmode=authenticate\nuser=a\nuser=root", "request repeats `user`"),
            ("version=1\nmode=app\nop=evaluate\nuser=a",
             "mode=app needs op=preflight|evaluate and policy=biometrics|owner"),
            ("version=1\nmode=app\nop=forget\npolicy=owner\nuser=a",
             "mode=app needs op=preflight|evaluate and policy=biometrics|owner"),
            ("version=1\nmode=right\nop=steal\nuser=a",
             "mode=right needs a known op (save|get|check|authorize|deauthorize|secret|sign|remove|remove_all)"),
        ]
        for (text, why) in refused {
            #expect(Request.decode(Array(text.utf8)) == .failure(Request.Problem(why)), "\(text)")
        }
        guard case .failure(let problem) = Request.decode(Array("version=1\nno equals".utf8)) else {
            Issue.record("a line without `=` decoded")
            return
        }
        #expect(problem.description.hasPrefix("request is not key=value text"))
    }

    /// What a forged or a short request leaves out is empty or off; another proof reads as
    /// none (the helper treats both as `authtok`); keys of another mode, and unknown keys,
    /// are ignored; `arg` keeps every value in order.
    @Test func takesWhatTheHelperTakes() throws {
        let short = try Request.decode(Array("version=1\nmode=status\nuser=alice\nservice=localauthctl\npid=12".utf8)).get()
        #expect(short == .status(Request.Caller(user: "alice", service: "localauthctl", pid: 12)))
        let forged = try Request.decode(Array(
            "version=1\nmode=authsucc\nuser=a\nproof=anything\nfirst_line=yes\nop=save\nwhat=ever\narg=x\narg=y\npid=-".utf8)).get()
        #expect(forged == .authsucc(Request.Caller(user: "a", arguments: ["x", "y"]), .init(proof: nil)))
        let evaluate = try Request.decode(Array("version=1\nmode=app\nop=evaluate\npolicy=owner\nuser=a\nkeep=1".utf8)).get()
        #expect(evaluate == .app(Request.Caller(user: "a"), .evaluate(.owner)))
        #expect(!evaluate.keepsConnection)
        let removeAll = try Request.decode(Array("version=1\nmode=right\nop=remove_all\nuser=a\ncapabilities=aa,,bb".utf8)).get()
        #expect(removeAll == .right(Request.Caller(user: "a"), .removeAll(capabilities: ["aa", "bb"])))
    }

    @Test func theCallerCanBeReplacedInEveryMode() {
        for var request in Self.everyCase {
            let mode = request.mode
            request.caller.user = "bob"
            #expect(request.caller.user == "bob" && request.mode == mode)
        }
    }

    @Test func valuesTravelAsOneLine() throws {
        let request = Request.authenticate(Request.Caller(user: "a\nmode=authsucc", service: "s\r\nx"))
        let decoded = try Request.decode(request.encode()).get()
        #expect(decoded.mode == .authenticate)
        #expect(decoded.caller.user == "amode=authsucc" && decoded.caller.service == "s\rx")
    }

    // MARK: - Answer

    @Test func answersRoundTripWithTheirExtraKeysInOrder() throws {
        let answers = [
            Answer.success(cause: "matched (fingerprint)", extra: KeyValues([("domain_state", "ab"), ("biometry", "touchID")])),
            Answer(.biometryLockout, reason: "lockout", cause: "5 failures"),
            Answer(code: ResultCode.notOptedInValue, name: "notOptedIn", reason: "not-opted-in", cause: "off"),
            Answer(code: 0, name: "status", extra: KeyValues([("state", "ok"), ("failures", "0")])),
        ]
        for answer in answers {
            #expect(try Answer.decode(answer.encode()).get() == answer)
            #expect(answer.frame.kind == .result)
        }
        #expect(String(decoding: answers[1].encode(), as: UTF8.self)
                == "code=-8\nname=biometryLockout\nreason=lockout\ncause=5 failures")
        #expect(answers[1].resultCode == .biometryLockout && !answers[1].isSuccess && answers[0].isSuccess)
        #expect(answers[0].value("biometry") == "touchID")
    }

    @Test func anAnswerIsReadAsTheModuleReadsIt() throws {
        #expect(Answer.decode(Array("name=success".utf8)) == .failure(Answer.Problem("result without a code")))
        #expect(Answer.decode(Array("code=0\ncode=-1".utf8)) == .failure(Answer.Problem("result with a repeated key")))
        #expect(Answer.decode(Array("code=1\ncause=a\ncause=b".utf8)) == .failure(Answer.Problem("result with a repeated key")))
        for bad in ["+1", "1234567", "", "-", "0x1", " 1"] {
            #expect(Answer.decode(Array("code=\(bad)".utf8)) == .failure(Answer.Problem("result code is not a number")),
                    "\(bad)")
        }
        #expect(try Answer.decode(Array("code=-1004".utf8)).get().resultCode == .notInteractive)
    }

    @Test func aLongCauseIsCut() throws {
        let answer = Answer(.systemCancel, cause: String(repeating: "x", count: 2000))
        #expect(try Answer.decode(answer.encode()).get().cause?.count == Answer.causeLimit)
    }
}
