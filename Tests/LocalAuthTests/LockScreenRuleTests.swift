import Testing
@testable import LocalAuth

/// The lock screen wins the reader: LockScreenRule with each kind of request of each user.
@Suite struct LockScreenRuleTests {
    static let lock = ReaderClaim(kind: .lockScreen, userName: "alice", uid: 1000)
    static let sudo = ReaderClaim(kind: .other, userName: "alice", uid: nil)
    static let app = ReaderClaim(kind: .other, userName: nil, uid: 1000)
    static let bobsSudo = ReaderClaim(kind: .other, userName: "bob", uid: nil)
    static let bobsApp = ReaderClaim(kind: .other, userName: nil, uid: 1001)
    static let unknown = ReaderClaim(kind: .other, userName: nil, uid: nil)

    @Test func aLockScreenEndsItsUsersOtherScansByNameOrUid() {
        let running = [Self.sudo, Self.bobsSudo, Self.app, Self.bobsApp]
        #expect(LockScreenRule.losers(to: Self.lock, among: running) == [0, 2])
    }

    @Test func aRequestWhoseUserIsNotKnownYetLosesToAnyLockScreen() {
        #expect(LockScreenRule.losers(to: Self.lock, among: [Self.unknown]) == [0])
        #expect(LockScreenRule.getsNoScan(Self.unknown, among: [Self.lock]))
    }

    @Test func twoLockScreensOfOneUserLeaveEachOtherAlone() {
        #expect(LockScreenRule.losers(to: Self.lock, among: [Self.lock]).isEmpty)
        #expect(!LockScreenRule.getsNoScan(Self.lock, among: [Self.lock]))
    }

    @Test func nothingButALockScreenEndsAScan() {
        #expect(LockScreenRule.losers(to: Self.sudo, among: [Self.app, Self.sudo]).isEmpty)
    }

    @Test func whileItsUsersLockScreenAsksARequestGetsNoScan() {
        #expect(LockScreenRule.getsNoScan(Self.sudo, among: [Self.lock]))
        #expect(LockScreenRule.getsNoScan(Self.app, among: [Self.bobsSudo, Self.lock]))
        #expect(!LockScreenRule.getsNoScan(Self.bobsSudo, among: [Self.lock]))
        #expect(!LockScreenRule.getsNoScan(Self.bobsApp, among: [Self.lock]))
        #expect(!LockScreenRule.getsNoScan(Self.sudo, among: [Self.app]))
    }

    @Test func aLockScreenIsRootsOwnProgramWithNoTerminalOnAConsoleOrADisplay() {
        func kind(peer: UInt32 = 0, callerUID: String? = "0", tty: String? = ":0", display: Bool = true,
                  terminal: Bool? = false, user: String? = "alice") -> ReaderClaim.Kind {
            ReaderClaim.of(peerUID: peer, userName: user, callerUID: callerUID, tty: tty, display: display,
                           callerHasTerminal: terminal).kind
        }
        #expect(kind() == .lockScreen)                                  // GDM's worker on X or Wayland
        #expect(kind(tty: "/dev/tty2", display: false) == .lockScreen)  // GDM on Wayland names its VT
        #expect(kind(tty: "tty1", display: false) == .lockScreen)
        #expect(kind(callerUID: "1000") == .other)       // setuid sudo, su, the agent helper: the user's real uid
        #expect(kind(callerUID: nil) == .other)
        #expect(kind(terminal: true) == .other)          // login at a console, root's own sudo
        #expect(kind(terminal: nil) == .other)           // the caller's /proc could not be read
        #expect(kind(tty: "pts/3", display: false) == .other)
        #expect(kind(tty: "tty64", display: false) == .other)   // a serial line
        #expect(kind(tty: "tty01", display: false) == .other)
        #expect(kind(tty: nil, display: false) == .other)
        #expect(kind(user: nil) == .other)               // no request yet
        // A peer that is not root is never a lock screen, and its account is its uid whatever it names.
        let user = ReaderClaim.of(peerUID: 1000, userName: "bob", callerUID: "0", tty: ":0", display: true,
                                  callerHasTerminal: false)
        #expect(user == ReaderClaim(kind: .other, userName: nil, uid: 1000))
    }
}
