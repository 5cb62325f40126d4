import Testing
@testable import LocalAuth

/// DialogProof: what a polkit yes in a right's dialog is worth, from the dialog's own ticket.
@Suite struct DialogProofTests {
    private let agent = DialogTicket.Process(pid: 700, startTime: 5)
    private let helper = DialogTicket.Process(pid: 710, startTime: 9)

    private func ticket(_ matches: DialogTicket.Match...) -> DialogTicket {
        DialogTicket(user: "alice", createdAt: 1_000, dialog: .init(pid: 42, startTime: 1), matches: matches)
    }

    private func match(_ at: UInt64, _ method: DialogTicket.Match.Method,
                       helper: DialogTicket.Process? = nil) -> DialogTicket.Match {
        DialogTicket.Match(at: at, method: method, agent: agent, transaction: helper ?? self.helper)
    }

    @Test func oneFingerInTheTicketIsTheFinger() {
        #expect(DialogProof.judge(ticket(match(1_500, .fingerprint)), allowsPassword: false) == .fingerprint)
    }

    @Test func aYesWithAnEmptyTicketIsNoProof() {
        // polkit's yes from a rule or default, or the same user's sudo meanwhile: nothing here.
        #expect(DialogProof.judge(ticket(), allowsPassword: true) == .none)
    }

    @Test func aMatchDatedBeforeTheTicketDoesNotCount() {
        #expect(DialogProof.judge(ticket(match(999, .fingerprint)), allowsPassword: true) == .none)
        #expect(DialogProof.judge(ticket(match(1_000, .fingerprint)), allowsPassword: true) == .fingerprint)
    }

    @Test func thePasswordCountsOnlyWhereTheRightAllowsIt() {
        #expect(DialogProof.judge(ticket(match(1_500, .password)), allowsPassword: true) == .password)
        #expect(DialogProof.judge(ticket(match(1_500, .password)), allowsPassword: false) == .passwordNotAllowed)
    }

    @Test func twoAuthenticationsAreRefused() {
        // Another polkit dialog of the same user passed while this one was open.
        let other = DialogTicket.Process(pid: 720, startTime: 11)
        #expect(DialogProof.judge(ticket(match(1_500, .fingerprint), match(1_600, .fingerprint, helper: other)),
                                  allowsPassword: true) == .several(2))
        #expect(DialogProof.judge(ticket(match(1_500, .password), match(1_600, .fingerprint, helper: other)),
                                  allowsPassword: true) == .several(2))
    }

    @Test func oneTransactionsFingerAndAccountPhaseAreOneAuthentication() {
        // A directory account's account phase proves the password after the finger.
        #expect(DialogProof.judge(ticket(match(1_500, .fingerprint), match(1_501, .password)),
                                  allowsPassword: false) == .fingerprint)
    }
}
