import Testing
@testable import LocalAuth

/// DialogProof: what a polkit yes in a right's dialog is worth, from the state before and after.
@Suite struct DialogProofTests {
    private func state(finger: Timestamp? = nil, password: Timestamp? = nil) -> UserState {
        var s = UserState()
        s.lastFingerprintAt = finger
        s.lastPasswordAt = password
        return s
    }

    @Test func aMatchRecordedDuringTheDialogIsTheFinger() {
        #expect(DialogProof.judge(before: state(), after: state(finger: 100), began: 100, allowsPassword: false) == .fingerprint)
        #expect(DialogProof.judge(before: state(finger: 50), after: state(finger: 101), began: 100, allowsPassword: false) == .fingerprint)
    }

    @Test func aYesWithNothingNewIsNoProof() {
        // polkit's yes from a rule or default: the state did not move.
        #expect(DialogProof.judge(before: state(finger: 90, password: 80), after: state(finger: 90, password: 80),
                                  began: 100, allowsPassword: true) == .none)
        #expect(DialogProof.judge(before: state(), after: state(), began: 100, allowsPassword: true) == .none)
    }

    @Test func aMatchFromBeforeTheDialogDoesNotCount() {
        // Written after `before` was read but dated before the dialog began.
        #expect(DialogProof.judge(before: state(), after: state(finger: 99), began: 100, allowsPassword: false) == .none)
        // The same second as the earlier match: the time did not move, refused.
        #expect(DialogProof.judge(before: state(finger: 100), after: state(finger: 100), began: 100, allowsPassword: false) == .none)
    }

    @Test func thePasswordCountsOnlyWhereTheRightAllowsIt() {
        #expect(DialogProof.judge(before: state(password: 10), after: state(password: 100), began: 100, allowsPassword: true) == .password)
        #expect(DialogProof.judge(before: state(password: 10), after: state(password: 100), began: 100, allowsPassword: false) == .passwordNotAllowed)
        #expect(DialogProof.judge(before: state(password: 10), after: state(password: 99), began: 100, allowsPassword: true) == .none)
    }

    @Test func aNewMatchWinsOverANewPassword() {
        #expect(DialogProof.judge(before: state(), after: state(finger: 101, password: 100), began: 100,
                                  allowsPassword: false) == .fingerprint)
    }
}
