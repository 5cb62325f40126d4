import Testing
@testable import LocalAuth

/// What proves a password (`mode=authsucc`): PasswordProofRule, every branch.
@Suite struct PasswordProofRuleTests {
    typealias Facts = PasswordProofRule.Facts

    static func facts(_ proof: PasswordProofRule.Proof? = .authtok, firstLine: Bool = true, origin: Origin = .here,
                      fromRoot: Bool = true, given: Bool = true, check: PasswordProofRule.Check? = nil,
                      unreachable: Bool = false, optInRequired: Bool = false) -> Facts {
        Facts(proof: proof, firstLine: firstLine, origin: origin, fromRoot: fromRoot, passwordGiven: given,
              check: check, readerUnreachable: unreachable, optInRequired: optInRequired, service: "sshd")
    }

    static let proven = PasswordProofRule.Decision.proven(localUnlock: true, readEnrolledSet: true, dialogMatch: false)

    // MARK: before any check

    @Test(arguments: [PasswordProofRule.Proof.authtok, .account, nil])
    func notTheFirstLineProvesNothing(_ proof: PasswordProofRule.Proof?) {
        #expect(PasswordProofRule.decide(Self.facts(proof, firstLine: false, check: .matches)) == .refuse(.notFirstLine))
    }

    @Test(arguments: [PasswordProofRule.Proof.authtok, .account, nil])
    func aPasswordFromAnotherMachineClearsNothing(_ proof: PasswordProofRule.Proof?) {
        let facts = Self.facts(proof, origin: .anotherMachine(rhost: "192.0.2.7"), check: .matches)
        #expect(PasswordProofRule.decide(facts) == .refuse(.anotherMachine(rhost: "192.0.2.7")))
    }

    // MARK: proof=authtok

    @Test func authtokAsksForTheCheckPacedForAUser() {
        #expect(PasswordProofRule.decide(Self.facts(.authtok)) == .checkPassword(paced: false))
        #expect(PasswordProofRule.decide(Self.facts(.authtok, fromRoot: false)) == .checkPassword(paced: true))
        // No proof named: the stricter one.
        #expect(PasswordProofRule.decide(Self.facts(nil)) == .checkPassword(paced: false))
        #expect(PasswordProofRule.decide(Self.facts(nil, fromRoot: false)) == .checkPassword(paced: true))
    }

    @Test func authtokVerdicts() {
        func decide(_ check: PasswordProofRule.Check, given: Bool = true, fromRoot: Bool = true) -> PasswordProofRule.Decision {
            PasswordProofRule.decide(Self.facts(.authtok, fromRoot: fromRoot, given: given, check: check))
        }
        #expect(decide(.matches) == Self.proven)
        #expect(decide(.matches, fromRoot: false) == Self.proven)
        #expect(decide(.differs) == .refuse(.passwordDiffers))
        #expect(decide(.differs, given: false) == .refuse(.noPassword))
        #expect(decide(.unprovable("no hash")) == .refuse(.unprovable("no hash")))
        #expect(decide(.notDone, fromRoot: false) == .refuse(.notChecked))
    }

    // MARK: proof=account

    @Test func theAccountPhaseFromAUserProvesNothing() {
        #expect(PasswordProofRule.decide(Self.facts(.account, fromRoot: false, check: .matches)) == .refuse(.accountPhaseFromUser))
    }

    @Test func theAccountPhaseOfANetworkedHandleProvesNothing() {
        let cases: [(Origin, String)] = [(.sshd(rhost: ""), "PAM_TTY is ssh"), (.sshd(rhost: "::1"), "PAM_RHOST is set"),
                                         (.namesThisMachine(rhost: "desk"), "PAM_RHOST is set")]
        for (origin, why) in cases {
            #expect(PasswordProofRule.decide(Self.facts(.account, origin: origin, check: .matches))
                    == .refuse(.accountPhaseNetworked(why)))
        }
    }

    @Test func theAccountPhaseChecksALocalHashUnpaced() {
        #expect(PasswordProofRule.decide(Self.facts(.account)) == .checkPassword(paced: false))
        func decide(_ check: PasswordProofRule.Check, given: Bool = true) -> PasswordProofRule.Decision {
            PasswordProofRule.decide(Self.facts(.account, given: given, check: check))
        }
        #expect(decide(.matches) == Self.proven)
        // A directory account (no local hash): the phase itself is the proof.
        #expect(decide(.unprovable("sssd"), given: false) == Self.proven)
        #expect(decide(.differs, given: false) == .refuse(.accountPhaseWithoutAuthtok))
        #expect(decide(.differs) == .refuse(.accountPhaseAuthtokDiffers))
        #expect(decide(.notDone) == .refuse(.accountPhaseAuthtokDiffers))
    }

    // MARK: what a proven password records

    @Test func aLocalUnlockOnlyOnAHandleFromHere() {
        let here = PasswordProofRule.decide(Self.facts(.authtok, origin: .here, check: .matches))
        #expect(here == .proven(localUnlock: true, readEnrolledSet: true, dialogMatch: false))
        let named = PasswordProofRule.decide(Self.facts(.authtok, origin: .namesThisMachine(rhost: "desk"), check: .matches))
        #expect(named == .proven(localUnlock: true, readEnrolledSet: true, dialogMatch: false))
        let tunnel = PasswordProofRule.decide(Self.facts(.authtok, origin: .sshd(rhost: ""), check: .matches))
        #expect(tunnel == .proven(localUnlock: false, readEnrolledSet: true, dialogMatch: false))
    }

    @Test func theEnrolledSetIsReadAgainUnlessUnreachableOrSwitched() {
        #expect(PasswordProofRule.decide(Self.facts(check: .matches, unreachable: true))
                == .proven(localUnlock: true, readEnrolledSet: false, dialogMatch: false))
        #expect(PasswordProofRule.decide(Self.facts(check: .matches, optInRequired: true))
                == .proven(localUnlock: true, readEnrolledSet: false, dialogMatch: false))
    }

    // MARK: the remote login of an account phase

    @Test func theAccountPhaseOfALoginFromElsewhereRecordsIt() {
        #expect(PasswordProofRule.remoteLogin(Self.facts(.account, origin: .anotherMachine(rhost: "192.0.2.7")))
                == .init(from: "192.0.2.7", networked: "PAM_RHOST is set"))
        #expect(PasswordProofRule.remoteLogin(Self.facts(.account, origin: .sshd(rhost: "")))
                == .init(from: "sshd", networked: "PAM_TTY is ssh"))
        #expect(PasswordProofRule.remoteLogin(Self.facts(.account, origin: .sshd(rhost: "127.0.0.1")))
                == .init(from: "127.0.0.1", networked: "PAM_RHOST is set"))
        // Whatever else the request proves: not the first line either.
        #expect(PasswordProofRule.remoteLogin(Self.facts(.account, firstLine: false, origin: .sshd(rhost: ""))) != nil)
    }

    @Test func noRemoteLoginOtherwise() {
        #expect(PasswordProofRule.remoteLogin(Self.facts(.authtok, origin: .sshd(rhost: ""))) == nil)
        #expect(PasswordProofRule.remoteLogin(Self.facts(nil, origin: .sshd(rhost: ""))) == nil)
        #expect(PasswordProofRule.remoteLogin(Self.facts(.account, origin: .sshd(rhost: ""), fromRoot: false)) == nil)
        #expect(PasswordProofRule.remoteLogin(Self.facts(.account, origin: .here)) == nil)
        // sudo's pam_rhost flag: this machine's name, no login from elsewhere.
        #expect(PasswordProofRule.remoteLogin(Self.facts(.account, origin: .namesThisMachine(rhost: "desk"))) == nil)
    }

    // MARK: the words

    @Test func whatTheRecordChanged() {
        let rules = Rules(Options())
        var locked = UserState()
        locked.consecutiveFailures = rules.lockoutThreshold
        var some = UserState()
        some.consecutiveFailures = 2
        #expect(PasswordProofRule.recorded(before: .damaged(cause: "x"), rules: rules).contains("damaged state rewritten"))
        #expect(PasswordProofRule.recorded(before: .state(locked), rules: rules)
                == "password recorded, lockout cleared (\(rules.lockoutThreshold) consecutive failed matches)")
        #expect(PasswordProofRule.recorded(before: .state(some), rules: rules)
                == "password recorded, 2 failed matches forgotten (no lockout)")
        #expect(PasswordProofRule.recorded(before: .fresh, rules: rules) == "password recorded (no lockout to clear)")
        #expect(PasswordProofRule.recorded(before: nil, rules: rules) == "password recorded (no lockout to clear)")
        #expect(PasswordProofRule.lockoutCleared(before: .state(locked), rules: rules) == rules.lockoutThreshold)
        #expect(PasswordProofRule.lockoutCleared(before: .state(some), rules: rules) == nil)
        #expect(PasswordProofRule.lockoutCleared(before: .damaged(cause: "x"), rules: rules) == nil)
        #expect(PasswordProofRule.lockoutCleared(before: nil, rules: rules) == nil)
    }

    @Test func everyRefusalSaysWhy() {
        let all: [PasswordProofRule.Refusal] = [
            .notFirstLine, .anotherMachine(rhost: "h"), .accountPhaseFromUser, .accountPhaseNetworked("w"),
            .accountPhaseWithoutAuthtok, .accountPhaseAuthtokDiffers, .noPassword, .passwordDiffers,
            .unprovable("u"), .notChecked]
        #expect(Set(all.map(\.description)).count == all.count)
        #expect(PasswordProofRule.Refusal.anotherMachine(rhost: "192.0.2.7").description.contains("192.0.2.7"))
        #expect(PasswordProofRule.Refusal.accountPhaseNetworked("PAM_TTY is ssh").description
                == "the account phase proves no password for a networked handle (PAM_TTY is ssh)")
    }

    @Test func theRecordSaysWhatItReplacedUnderItsLock() throws {
        let h = Harness()
        let rules = Rules(h.options)
        let first = try PasswordRecord.record(env: h.environment(), rules: rules, domainState: nil)
        #expect(first == .fresh)
        #expect(PasswordProofRule.recorded(before: first, rules: rules) == "password recorded (no lockout to clear)")
        try h.store.update(h.user) { stored in
            var s = stored.userState
            s.consecutiveFailures = rules.lockoutThreshold + 1
            return s
        }
        let locked = try PasswordRecord.record(env: h.environment(), rules: rules, domainState: nil, localUnlock: true)
        #expect(PasswordProofRule.lockoutCleared(before: locked, rules: rules) == rules.lockoutThreshold + 1)
        #expect(h.state.consecutiveFailures == 0)
        #expect(h.state.lastLocalUnlockAt == h.clock.time)
        let again = try PasswordRecord.record(env: h.environment(), rules: rules, domainState: nil)
        #expect(PasswordProofRule.lockoutCleared(before: again, rules: rules) == nil)
    }

    @Test func onlyPolkitsStackPasswordGoesIntoADialogTicket() {
        var facts = Self.facts(.authtok, check: .matches)
        facts.service = "polkit-1"
        #expect(PasswordProofRule.decide(facts) == .proven(localUnlock: true, readEnrolledSet: true, dialogMatch: true))
        facts.proof = .account
        #expect(PasswordProofRule.decide(facts) == .proven(localUnlock: true, readEnrolledSet: true, dialogMatch: true))
        for service in ["sudo", "login", "polkit", ""] {
            facts.service = service
            #expect(PasswordProofRule.decide(facts) == .proven(localUnlock: true, readEnrolledSet: true, dialogMatch: false))
        }
        facts.service = "polkit-1"
        facts.check = .differs
        #expect(PasswordProofRule.decide(facts) == .refuse(.accountPhaseAuthtokDiffers))
    }
}
