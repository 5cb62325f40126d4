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

    @Test func twoAgentsAreRefused() {
        // Another polkit dialog of the same user, shown by another agent, passed meanwhile.
        let otherAgent = DialogTicket.Process(pid: 800, startTime: 12)
        let otherHelper = DialogTicket.Process(pid: 720, startTime: 11)
        let elsewhere = DialogTicket.Match(at: 1_600, method: .fingerprint, agent: otherAgent, transaction: otherHelper)
        #expect(DialogProof.judge(ticket(match(1_500, .fingerprint), elsewhere), allowsPassword: true) == .several(2))
        #expect(DialogProof.judge(ticket(match(1_500, .password), elsewhere), allowsPassword: true) == .several(2))
    }

    @Test func theSameAgentsHelperStartedAgainIsTheSameDialog() {
        // GNOME Shell starts the agent helper again after an attempt its agent library counted as failed.
        let again = DialogTicket.Process(pid: 720, startTime: 11)
        #expect(DialogProof.judge(ticket(match(1_500, .fingerprint), match(1_600, .fingerprint, helper: again)),
                                  allowsPassword: false) == .fingerprint)
        #expect(DialogProof.judge(ticket(match(1_500, .password), match(1_600, .password, helper: again)),
                                  allowsPassword: false) == .passwordNotAllowed)
    }

    @Test func oneTransactionsFingerAndAccountPhaseAreOneAuthentication() {
        // A directory account's account phase proves the password after the finger.
        #expect(DialogProof.judge(ticket(match(1_500, .fingerprint), match(1_501, .password)),
                                  allowsPassword: false) == .fingerprint)
    }
}
