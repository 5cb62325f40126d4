import Testing
@testable import LocalAuth

/// Who is at the reader: PresenceRule with every fact logind can give, one row per case.
@Suite struct PresenceRuleTests {
    static let alice: UInt32 = 1000
    static let bob: UInt32 = 1001

    /// alice's local session in front of seat0, unlocked, not idle, on virtual console 2.
    static func seatSession(_ id: String = "1", uid: UInt32? = alice, remote: Bool? = false, remoteHost: String = "",
                            seat: String = "seat0", sessionClass: String = "user", active: Bool? = true,
                            locked: Bool? = false, idle: Bool? = false, vt: Int? = 2) -> LogindSession {
        LogindSession(id: id, uid: uid, remote: remote, remoteHost: remoteHost, seat: seat,
                      sessionClass: sessionClass, active: active, locked: locked, idle: idle, vt: vt)
    }

    static let ssh = LogindSession(id: "7", uid: alice, remote: true, remoteHost: "192.0.2.9", seat: "",
                                   active: false)

    static func facts(_ vouching: Vouching, _ caller: CallerPlace = .otherTerminal, user: UInt32? = alice,
                      sessions: [LogindSession] = [], lid: Lid = .open,
                      lidClosed: Options.LidClosedChoice = .password, console: Int? = 2) -> PresenceFacts {
        PresenceFacts(vouching: vouching, caller: caller, user: user, userSessions: sessions, lid: lid,
                      lidClosed: lidClosed, console: caller == .console ? console : nil)
    }

    // MARK: a scan

    @Test(arguments: [CallerPlace.console, .otherTerminal, .rootWithoutTerminal, .dialog, .userWithoutTerminal])
    func theSeatsOwnUserInTheirActiveSessionMayScan(_ caller: CallerPlace) {
        #expect(PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession()), caller)) == nil)
    }

    @Test func aDesktopTerminalIsVouchedForByTheUsersDisplaySession() {
        #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.seatSession()))) == nil)
    }

    @Test func withoutLogindOnlyTheLidCountsHere() {
        #expect(PresenceRule.refusal(Self.facts(.logindAbsent)) == nil)
        #expect(PresenceRule.refusal(Self.facts(.logindAbsent, lid: .closed))?.reason == .lidClosed)
    }

    @Test func rootsLoginOnTheConsoleInFrontMayScanForWhoeverSitsDown() {
        #expect(PresenceRule.refusal(Self.facts(.foregroundConsole("tty2"), .console, user: Self.bob)) == nil)
    }

    @Test func aGreeterAuthenticatesWhoeverSitsDown() {
        let greeter = Self.seatSession("c1", uid: 115, sessionClass: "greeter")
        #expect(PresenceRule.refusal(Self.facts(.seatSession(greeter), .rootWithoutTerminal, user: Self.bob)) == nil)
        // A greeter's worker already in the greeter's session, too.
        #expect(PresenceRule.refusal(Self.facts(.callerSession(greeter), .rootWithoutTerminal, user: Self.bob)) == nil)
    }

    @Test func theLockScreenAsksOnALockedOrIdleSession() {
        let locked = Self.seatSession(locked: true, idle: true)
        #expect(PresenceRule.refusal(Self.facts(.callerSession(locked), .rootWithoutTerminal)) == nil)
        // Its hints may be unknown: the lock screen is root's, and nobody else shows there.
        #expect(PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession(locked: nil, idle: nil)),
                                                .rootWithoutTerminal)) == nil)
    }

    // MARK: no scan

    @Test(arguments: [
        (Self.seatSession(remote: true), EvaluationError.Reason.remoteSession),
        (Self.seatSession(remote: nil), .remoteSession),
        (Self.seatSession(remoteHost: "127.0.0.1"), .remoteSession),
        (Self.seatSession(seat: ""), .notActive),
        (Self.seatSession(active: false), .notActive),
        (Self.seatSession(active: nil), .notActive),
        (Self.seatSession(uid: bob), .otherUser),
        (Self.seatSession(uid: nil), .otherUser),
        (Self.seatSession(locked: true), .sessionLocked),
        (Self.seatSession(locked: nil), .sessionLocked),
        (Self.seatSession(idle: true), .sessionIdle),
        (Self.seatSession(idle: nil), .sessionIdle),
    ])
    func theVouchingSessionMustBeLocalInFrontOwnedUnlockedAndAwake(_ session: LogindSession, _ reason: EvaluationError.Reason) {
        for vouching in [Vouching.callerSession(session), .displaySession(session)] {
            let refusal = PresenceRule.refusal(Self.facts(vouching))
            #expect(refusal?.code == .notInteractive)
            #expect(refusal?.reason == reason)
            #expect(refusal?.cause.isEmpty == false)
        }
    }

    @Test func nobodyVouchingIsNoScan() {
        let refusal = PresenceRule.refusal(Self.facts(.nobody("the caller is in no login session")))
        #expect(refusal?.reason == .noSession)
        #expect(refusal?.cause == "the caller is in no login session")
    }

    @Test func suToAnotherUserOrADialogForAnotherAdministratorIsNoScan() {
        for caller in [CallerPlace.otherTerminal, .dialog, .console] {
            #expect(PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession()), caller, user: Self.bob))?.reason
                    == .otherUser)
        }
        // The account has no entry at all: nobody's finger.
        #expect(PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession()), user: nil))?.reason == .otherUser)
    }

    @Test func aGreeterOnAnotherSessionThanItsSeatsActiveOneIsNoScan() {
        let greeter = Self.seatSession("c1", uid: 115, sessionClass: "greeter", active: false)
        #expect(PresenceRule.refusal(Self.facts(.seatSession(greeter), .rootWithoutTerminal))?.reason == .notActive)
        let remote = Self.seatSession("c1", uid: 115, remote: true, sessionClass: "greeter")
        #expect(PresenceRule.refusal(Self.facts(.seatSession(remote), .rootWithoutTerminal))?.reason == .remoteSession)
    }

    // MARK: a remote login newer than the last local unlock (rule 5)

    static let sinceUnlock = RemoteLogin(at: 2000, from: "192.0.2.9", lastUnlock: 1000)

    @Test(arguments: [CallerPlace.otherTerminal, .userWithoutTerminal, .dialog, .otherAgentDialog])
    func afterARemoteLoginOnlyTheMachineItselfScans(_ caller: CallerPlace) {
        var facts = Self.facts(.displaySession(Self.seatSession()), caller)
        facts.remoteLogin = Self.sinceUnlock
        let refusal = PresenceRule.refusal(facts)
        #expect(refusal?.reason == .remoteLoginSinceUnlock)
        #expect(refusal?.code == .notInteractive)
        #expect(refusal?.cause.includes("192.0.2.9") == true)
    }

    @Test(arguments: [CallerPlace.console, .rootWithoutTerminal])
    func theConsoleTheGreeterAndTheLockScreenAreTheLocalUnlock(_ caller: CallerPlace) {
        var facts = Self.facts(.callerSession(Self.seatSession()), caller)
        facts.remoteLogin = Self.sinceUnlock
        #expect(PresenceRule.refusal(facts) == nil)
    }

    @Test func theRuleHoldsWithoutLogindToo() {
        var facts = Self.facts(.logindAbsent, .otherTerminal)
        facts.remoteLogin = Self.sinceUnlock
        #expect(PresenceRule.refusal(facts)?.reason == .remoteLoginSinceUnlock)
        facts.caller = .console
        facts.console = 2
        facts.foregroundConsole = 2
        #expect(PresenceRule.refusal(facts) == nil)
        // A virtual console that is not the one in front: nothing says anyone looks at it.
        facts.foregroundConsole = 1
        #expect(PresenceRule.refusal(facts)?.reason == .remoteLoginSinceUnlock)
    }

    /// A VT as controlling terminal is the machine itself only as the terminal of a local
    /// session of the user on a seat. Each fact below is a remote login's way to a VT the
    /// user owns: before, each counted as "at the machine" and skipped rules 4 and 5.
    @Test func aVirtualConsoleCountsOnlyAsItsOwnLocalSessionsTerminal() {
        func place(_ vouching: Vouching, console: Int? = 2, user: UInt32? = Self.alice) -> CallerPlace {
            PresenceRule.place(Self.facts(vouching, .console, user: user, console: console))
        }
        #expect(place(.callerSession(Self.seatSession())) == .console)
        let byName = LogindSession(id: "4", uid: Self.alice, remote: false, seat: "seat0", active: true, tty: "tty2")
        #expect(place(.callerSession(byName)) == .console)
        #expect(place(.callerSession(Self.seatSession(vt: 3))) == .otherTerminal)       // another VT's session
        #expect(place(.callerSession(Self.seatSession(vt: nil))) == .otherTerminal)     // a graphical one with no VT
        #expect(place(.callerSession(Self.ssh)) == .otherTerminal)                      // the remote login's own
        #expect(place(.callerSession(Self.seatSession(remote: nil))) == .otherTerminal)
        #expect(place(.callerSession(Self.seatSession(seat: ""))) == .otherTerminal)
        #expect(place(.callerSession(Self.seatSession(uid: Self.bob))) == .otherTerminal)
        #expect(place(.callerSession(Self.seatSession()), user: nil) == .otherTerminal)
        #expect(place(.displaySession(Self.seatSession())) == .otherTerminal)           // started in the user's manager
        #expect(place(.callerSession(Self.seatSession()), console: nil) == .otherTerminal)
        #expect(place(.foregroundConsole("tty2")) == .console)                          // root's login, before its session
        #expect(place(.foregroundConsole("tty5")) == .otherTerminal)
        // Rules 4 and 5 then hold for it.
        var facts = Self.facts(.displaySession(Self.seatSession()), .console)
        facts.remoteLogin = Self.sinceUnlock
        #expect(PresenceRule.refusal(facts)?.reason == .remoteLoginSinceUnlock)
        let drivable = Self.facts(.displaySession(Self.seatSession()), .console, sessions: [Self.seatSession(), Self.ssh])
        #expect(PresenceRule.refusal(drivable)?.reason == .remoteSessionOpen)
    }

    @Test func anUnlockedHintDoesNotEndTheRule() {
        // LockedHint and IdleHint are the user's to clear: unlocked and not idle is necessary, never enough.
        var facts = Self.facts(.displaySession(Self.seatSession(locked: false, idle: false)), .otherTerminal)
        facts.remoteLogin = Self.sinceUnlock
        #expect(PresenceRule.refusal(facts)?.reason == .remoteLoginSinceUnlock)
        facts.vouching = .displaySession(Self.seatSession(locked: true))
        #expect(PresenceRule.refusal(facts)?.reason == .sessionLocked)
    }

    @Test func theRecordsOrderTheLoginAndTheUnlock() {
        func fact(_ state: UserState) -> RemoteLogin? { RemoteLogin(state, now: 3000, boot: "b2") }
        var state = UserState()
        #expect(fact(state) == nil)
        state.lastRemoteLoginAt = 2000
        state.lastRemoteLoginFrom = "ssh"
        #expect(fact(state) == RemoteLogin(at: 2000, from: "ssh", lastUnlock: nil))
        state.lastLocalUnlockAt = 2000  // the same second: the login may be the later one
        #expect(fact(state)?.at == 2000)
        state.lastLocalUnlockAt = 2001
        #expect(fact(state) == nil)
        state.lastRemoteLoginAt = 2002
        #expect(fact(state)?.lastUnlock == 2001)
    }

    /// Rule 5 with the wall clock set back between the two: CLOCK_BOOTTIME orders one boot's
    /// events, the running boot's are the newest, and an unlock stamped in the future
    /// orders nothing. Each case below lifted the rule when the wall clock alone decided.
    @Test func aClockSetBackDoesNotLiftTheRule() {
        func since(remote: Timestamp, _ r: BootStamp?, unlock: Timestamp, _ u: BootStamp?,
                   now: Timestamp = 3000, boot: String? = "b2") -> Bool {
            var state = UserState()
            state.lastRemoteLoginAt = remote
            state.lastRemoteLoginBoot = r
            state.lastLocalUnlockAt = unlock
            state.lastLocalUnlockBoot = u
            return state.remoteLoginSinceUnlock(now: now, boot: boot) != nil
        }
        // One boot: the login came 5 s after the unlock, the clock set back an hour between.
        #expect(since(remote: 1000, BootStamp(bootID: "b2", millis: 9000),
                      unlock: 4600, BootStamp(bootID: "b2", millis: 4000)))
        // ... and the other way round the unlock is the newer, whatever the wall clock says.
        #expect(!since(remote: 4600, BootStamp(bootID: "b2", millis: 4000),
                       unlock: 1000, BootStamp(bootID: "b2", millis: 9000)))
        // The login in this boot, the unlock in an earlier one with a clock far ahead.
        #expect(since(remote: 1000, BootStamp(bootID: "b2", millis: 10),
                      unlock: 2500, BootStamp(bootID: "b1", millis: 99_000)))
        // The unlock in this boot, the login in an earlier one: lifted.
        #expect(!since(remote: 2500, BootStamp(bootID: "b1", millis: 10),
                       unlock: 1000, BootStamp(bootID: "b2", millis: 10)))
        // No stamps (files written before them), an unlock later than now: the clock went back.
        #expect(since(remote: 1000, nil, unlock: 3500, nil))
        #expect(!since(remote: 1000, nil, unlock: 2000, nil))
        // Two earlier boots: the wall clock, with the same doubt about the future.
        #expect(since(remote: 1000, BootStamp(bootID: "b0", millis: 1),
                      unlock: 3500, BootStamp(bootID: "b1", millis: 1)))
        #expect(!since(remote: 1000, BootStamp(bootID: "b0", millis: 1),
                       unlock: 2000, BootStamp(bootID: "b1", millis: 1)))
    }

    @Test func aBootStampIsStoredAsItsIdAndMilliseconds() {
        let stamp = BootStamp(bootID: "0b6a-77", millis: 123_456)
        #expect(BootStamp(text: stamp.text) == stamp)
        #expect(BootStamp(text: "0b6a-77") == nil)
        #expect(BootStamp(text: "0b6a-77 -1") == nil)
        #expect(BootStamp(text: " 12") == nil)
    }

    // MARK: the user also signed in remotely

    @Test(arguments: [CallerPlace.otherTerminal, .userWithoutTerminal])
    func aCallerARemoteLoginCouldDriveIsNoScan(_ caller: CallerPlace) {
        let refusal = PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession()), caller,
                                                      sessions: [Self.seatSession(), Self.ssh]))
        #expect(refusal?.reason == .remoteSessionOpen)
        #expect(refusal?.cause.includes("7") == true)
    }

    @Test(arguments: [CallerPlace.console, .rootWithoutTerminal, .dialog])
    func aCallerWithItsOwnConsoleOrDisplayIsNotAffected(_ caller: CallerPlace) {
        #expect(PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession()), caller,
                                                sessions: [Self.seatSession(), Self.ssh])) == nil)
    }

    @Test(arguments: [
        LogindSession(id: "8", uid: alice, remote: false, remoteHost: "127.0.0.1", seat: "", active: false),
        LogindSession(id: "8", uid: alice, remote: false, seat: "", sessionClass: "user", active: false),
        LogindSession(id: "8", uid: alice, remote: nil, seat: "", active: nil),
        LogindSession(id: "8", uid: alice, remote: true, seat: "seat0", active: false),
    ])
    func aLoopbackOrSeatlessLoginCountsAsRemote(_ other: LogindSession) {
        #expect(other.reachesFromElsewhere)
        #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.seatSession()),
                                                sessions: [Self.seatSession(), other]))?.reason == .remoteSessionOpen)
    }

    @Test(arguments: [
        LogindSession(id: "9", uid: alice, remote: false, seat: "", sessionClass: "background", active: false),
        LogindSession(id: "9", uid: alice, remote: false, seat: "seat0", active: false),
    ])
    func aCronJobOrASecondLocalSessionIsNotRemote(_ other: LogindSession) {
        #expect(!other.reachesFromElsewhere)
        #expect(PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession()),
                                                sessions: [Self.seatSession(), other])) == nil)
    }

    @Test func theVouchingSessionItselfIsNotTheRemoteOne() {
        // A seatless vouching session is refused on its own account, never as "also remote".
        #expect(PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession()), sessions: [Self.seatSession()])) == nil)
    }

    // MARK: the lid

    @Test(arguments: [CallerPlace.console, .otherTerminal, .rootWithoutTerminal, .dialog])
    func aClosedLidIsNoScanUnlessTheReaderIsElsewhere(_ caller: CallerPlace) {
        let session = Vouching.callerSession(Self.seatSession())
        #expect(PresenceRule.refusal(Self.facts(session, caller, lid: .closed))?.code == .biometryNotAvailable)
        #expect(PresenceRule.refusal(Self.facts(session, caller, lid: .closed))?.reason == .lidClosed)
        #expect(PresenceRule.refusal(Self.facts(session, caller, lid: .closed, lidClosed: .scan)) == nil)
        #expect(PresenceRule.refusal(Self.facts(session, caller, lid: .open)) == nil)
    }

    @Test func aLidLogindCouldNotAnswerForIsNoScan() {
        let refusal = PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession()), lid: .unknown("timed out")))
        #expect(refusal?.reason == .lidClosed)
        #expect(refusal?.cause.includes("timed out") == true)
        #expect(PresenceRule.refusal(Self.facts(.callerSession(Self.seatSession()), lid: .unknown("x"),
                                                lidClosed: .scan)) == nil)
    }

    @Test func reasonKeysAreTheLogLinesWords() {
        #expect(EvaluationError.Reason.remoteSessionOpen.key == "remote-session-open")
        #expect(EvaluationError.Reason.sessionLocked.key == "session-locked")
        #expect(EvaluationError.Reason.sessionIdle.key == "session-idle")
        #expect(EvaluationError.Reason.otherUser.key == "other-user")
        #expect(EvaluationError.Reason.notActive.key == "not-active")
        #expect(EvaluationError.Reason.noSession.key == "no-session")
    }
}
