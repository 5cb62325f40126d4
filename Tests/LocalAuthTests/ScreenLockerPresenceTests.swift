import Testing
@testable import LocalAuth

/// The user's installed screen locker (Plasma's) in PresenceRule: a scan while its session is
/// locked, and every other limit of a program of the user's.
@Suite struct ScreenLockerPresenceTests {
    static let alice: UInt32 = 1000

    static func session(_ id: String = "2", uid: UInt32? = alice, remote: Bool? = false, seat: String = "seat0",
                        active: Bool? = true, locked: Bool? = true, idle: Bool? = true) -> LogindSession {
        LogindSession(id: id, uid: uid, remote: remote, seat: seat, active: active, locked: locked, idle: idle)
    }

    static func facts(_ vouching: Vouching, _ caller: CallerPlace = .screenLocker, sessions: [LogindSession] = [],
                      remoteLogin: RemoteLogin? = nil) -> PresenceFacts {
        PresenceFacts(vouching: vouching, caller: caller, user: alice, userSessions: sessions, remoteLogin: remoteLogin)
    }

    static let ssh = LogindSession(id: "7", uid: alice, remote: true, remoteHost: "192.0.2.9", seat: "", active: false)

    @Test func theLockerScansWhileItsSessionIsLockedIdleOrNot() {
        // kwin runs in the user's manager (the display session vouches) or in the session's scope.
        for idle in [true, false] {
            #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.session(idle: idle)))) == nil)
            #expect(PresenceRule.refusal(Self.facts(.callerSession(Self.session(idle: idle)))) == nil)
        }
    }

    @Test func anyOtherProgramOfTheUserGetsNoScanWhileLocked() {
        for caller in [CallerPlace.userWithoutTerminal, .otherTerminal, .dialog, .otherAgentDialog] {
            #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.session()), caller))?.reason == .sessionLocked)
        }
    }

    @Test func unlockedTheLockerIsAnyProgramOfTheUser() {
        let unlocked = Self.session(locked: false, idle: false)
        #expect(PresenceRule.refusal(Self.facts(.displaySession(unlocked))) == nil)
        let idle = Self.session(locked: false, idle: true)
        #expect(PresenceRule.refusal(Self.facts(.displaySession(idle)))?.reason == .sessionIdle)
        #expect(PresenceRule.refusal(Self.facts(.displaySession(idle), .userWithoutTerminal))?.reason == .sessionIdle)
    }

    @Test func aLockNobodyCanConfirmIsNoLock() {
        #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.session(locked: nil))))?.reason == .sessionLocked)
    }

    @Test func theSessionMustBeLocalOnASeatInFrontAndTheUsers() {
        #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.session(remote: true))))?.reason == .remoteSession)
        #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.session(remote: nil))))?.reason == .remoteSession)
        #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.session(seat: ""))))?.reason == .notActive)
        #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.session(active: false))))?.reason == .notActive)
        #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.session(uid: 1001))))?.reason == .otherUser)
        #expect(PresenceRule.refusal(Self.facts(.nobody("no session")))?.reason == .noSession)
    }

    @Test func aRemoteSessionOpenCouldDriveIt() {
        let refusal = PresenceRule.refusal(Self.facts(.displaySession(Self.session()), sessions: [Self.session(), Self.ssh]))
        #expect(refusal?.reason == .remoteSessionOpen)
    }

    @Test func aRemoteLoginSinceTheLastLocalUnlockCouldHaveStartedIt() {
        let remote = RemoteLogin(at: 100, from: "ssh", lastUnlock: 50)
        #expect(PresenceRule.refusal(Self.facts(.displaySession(Self.session()), remoteLogin: remote))?.reason
                == .remoteLoginSinceUnlock)
    }

    @Test func itIsNeverAtTheMachineNorRoots() {
        #expect(!CallerPlace.screenLocker.atTheMachine)
        #expect(CallerPlace.screenLocker.drivableRemotely)
        // Not root's: LockScreenRule gives it no claim over other requests.
        #expect(ReaderClaim.of(peerUID: 1000, userName: "alice", callerUID: "1000", tty: nil, display: true,
                               callerHasTerminal: false).kind == .other)
    }

    @Test func theWaitEndsOnALockOnlyWhereTheLockIsNotTheReason() {
        #expect(!PresenceRule.watchesLockAndIdle(Self.facts(.displaySession(Self.session()))))
        #expect(PresenceRule.watchesLockAndIdle(Self.facts(.displaySession(Self.session(locked: false)))))
        #expect(PresenceRule.watchesLockAndIdle(Self.facts(.displaySession(Self.session()), .userWithoutTerminal)))
        #expect(!PresenceRule.watchesLockAndIdle(Self.facts(.seatSession(Self.session()), .rootWithoutTerminal)))
    }

    @Test(arguments: [("/usr/lib/x86_64-linux-gnu/libexec/kscreenlocker_greet", ScreenLocker.plasmaGreeter),
                      ("/usr/libexec/kscreenlocker_worker", .plasmaWorker),
                      ("/usr/lib/kscreenlocker_greet", .plasmaGreeter)])
    func theListNamesPlasmasLockers(_ path: String, _ locker: ScreenLocker) {
        #expect(ScreenLocker.named(programPath: path) == locker)
    }

    @Test(arguments: ["/usr/bin/swaylock", "kscreenlocker_greet", "/usr/bin/kscreenlocker_greet.sh",
                      "/usr/libexec/kscreenlocker_greet/", ""])
    func anythingElseIsNoLocker(_ path: String) {
        #expect(ScreenLocker.named(programPath: path) == nil)
    }
}
