import Testing
@testable import LocalAuth

/// "Never remote" with every answer sd-login can give about the caller.
@Suite struct LoginSessionRuleTests {
    @Test func aLocalActiveSessionOnASeatMayScan() {
        #expect(LoginSessionRule.refusal(.session(id: "2", remote: false, seat: "seat0", active: true)) == nil)
    }

    @Test func withoutLogindTheTerminalDecides() {
        #expect(LoginSessionRule.refusal(.logindAbsent) == nil)
    }

    @Test(arguments: [
        LoginSessionFacts.noSession,
        .unknown("Permission denied"),
        .session(id: "3", remote: true, seat: nil, active: true),
        .session(id: "3", remote: true, seat: "seat0", active: true),
        .session(id: "4", remote: nil, seat: "seat0", active: true),
        .session(id: "5", remote: false, seat: nil, active: true),
        .session(id: "5", remote: false, seat: "", active: true),
        .session(id: "6", remote: false, seat: "seat0", active: false),
        .session(id: "6", remote: false, seat: "seat0", active: nil),
    ])
    func everyOtherAnswerIsNoScan(_ facts: LoginSessionFacts) {
        let refusal = LoginSessionRule.refusal(facts)
        #expect(refusal?.code == .notInteractive)
        #expect(refusal?.reason == .remoteSession)
        #expect(refusal?.cause.isEmpty == false)
    }
}
