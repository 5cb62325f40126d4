import Testing
@testable import LocalAuth

/// The terminal half of presence: TerminalRule, every case.
@Suite struct TerminalRuleTests {
    /// Linux's device numbers: major in bits 8-19, minor in 0-7 and 20-31.
    static func device(_ major: UInt64, _ minor: UInt64) -> UInt64 {
        (major << 8) | (minor & 0xff) | ((minor & ~0xff) << 12)
    }

    static let tty2 = device(4, 2)
    static let pts3 = device(136, 3)
    static let serial = device(4, 64)

    static func facts(terminal: UInt64 = 0, agent: TerminalRule.Facts.Agent? = nil, rootPath: Bool = true,
                      uid: UInt32? = 0, callerTerminal: UInt64? = 0, ttyNamesDevice: Bool = false,
                      ttyDevice: UInt64? = nil, stdin: Bool = false, display: Bool = false) -> TerminalRule.Facts {
        TerminalRule.Facts(subjectTerminal: terminal, polkitAgent: agent, rootPath: rootPath, callerUID: uid,
                           callerTerminal: callerTerminal, ttyNamesDevice: ttyNamesDevice, ttyDevice: ttyDevice,
                           stdinTTY: stdin, display: display)
    }

    @Test func virtualConsolesAreMajorFourMinorOneToSixtyThree() {
        #expect(TerminalRule.consoleNumber(Self.tty2) == 2)
        #expect(TerminalRule.consoleNumber(Self.device(4, 1)) == 1)
        #expect(TerminalRule.consoleNumber(Self.device(4, 63)) == 63)
        #expect(TerminalRule.consoleNumber(Self.device(4, 0)) == nil)  // tty0: whichever is in front
        #expect(TerminalRule.consoleNumber(Self.serial) == nil)       // ttyS0
        #expect(TerminalRule.consoleNumber(Self.pts3) == nil)
        #expect(TerminalRule.consoleNumber(Self.device(5, 0)) == nil)  // /dev/tty
        #expect(TerminalRule.consoleNumber(0) == nil)
        #expect(TerminalRule.consoleNumber(Self.device(4, 2 + 256)) == nil)
        #expect(TerminalRule.isVirtualConsole(Self.tty2))
        #expect(!TerminalRule.isVirtualConsole(Self.pts3))
    }

    @Test func thePlaceOfAPrompt() {
        #expect(TerminalRule.place(Self.facts(terminal: Self.tty2)) == .console)
        #expect(TerminalRule.place(Self.facts(terminal: Self.pts3)) == .otherTerminal)
        #expect(TerminalRule.place(Self.facts(terminal: Self.serial)) == .otherTerminal)
        // A terminal comes before the agent.
        #expect(TerminalRule.place(Self.facts(terminal: Self.pts3, agent: .desktops)) == .otherTerminal)
        #expect(TerminalRule.place(Self.facts(agent: .desktops)) == .dialog)
        #expect(TerminalRule.place(Self.facts(agent: .other)) == .otherAgentDialog)
        #expect(TerminalRule.place(Self.facts()) == .rootWithoutTerminal)
        #expect(TerminalRule.place(Self.facts(uid: 1000)) == .userWithoutTerminal)
        #expect(TerminalRule.place(Self.facts(uid: nil)) == .userWithoutTerminal)
        // A peer that is not root is never root's program, whatever uid it names.
        #expect(TerminalRule.place(Self.facts(rootPath: false, uid: 0)) == .userWithoutTerminal)
    }

    @Test func aGreeterOnItsConsole() {
        let gdm = Self.facts(ttyNamesDevice: true, ttyDevice: Self.tty2)
        #expect(TerminalRule.greeterOnConsole(gdm))
        #expect(TerminalRule.greeterShaped(gdm))
        var f = gdm
        f.rootPath = false
        #expect(!TerminalRule.greeterOnConsole(f))
        #expect(!TerminalRule.greeterShaped(f))
        f = gdm
        f.callerTerminal = Self.tty2
        #expect(!TerminalRule.greeterOnConsole(f))
        f.callerTerminal = nil
        #expect(!TerminalRule.greeterOnConsole(f))
        f = gdm
        f.ttyDevice = Self.pts3
        #expect(!TerminalRule.greeterOnConsole(f))
        f.ttyDevice = nil
        #expect(!TerminalRule.greeterOnConsole(f))
        f = gdm
        f.ttyNamesDevice = false
        #expect(!TerminalRule.greeterOnConsole(f))
        // On a display instead (LightDM, SDDM, GDM on X).
        let x = Self.facts(display: true)
        #expect(!TerminalRule.greeterOnConsole(x))
        #expect(TerminalRule.greeterShaped(x))
        var user = x
        user.callerUID = 1000
        #expect(!TerminalRule.greeterShaped(user))
        var withTerminal = x
        withTerminal.callerTerminal = Self.pts3
        #expect(!TerminalRule.greeterShaped(withTerminal))
        #expect(!TerminalRule.greeterShaped(Self.facts()))
    }

    @Test func rootsLoginOnTheConsoleInFront() {
        let login = Self.facts(terminal: Self.tty2, callerTerminal: Self.tty2)
        #expect(TerminalRule.foregroundLogin(login, place: .console, foreground: 2) == "tty2")
        #expect(TerminalRule.foregroundLogin(login, place: .console, foreground: 3) == nil)
        #expect(TerminalRule.foregroundLogin(login, place: .console, foreground: nil) == nil)
        #expect(TerminalRule.foregroundLogin(login, place: .otherTerminal, foreground: 2) == nil)
        var user = login
        user.callerUID = 1000
        #expect(TerminalRule.foregroundLogin(user, place: .console, foreground: 2) == nil)
        var peer = login
        peer.rootPath = false
        #expect(TerminalRule.foregroundLogin(peer, place: .console, foreground: 2) == nil)
    }

    @Test func nobodyThere() {
        #expect(TerminalRule.nobodyThere(Self.facts(stdin: true)) == nil)
        #expect(TerminalRule.nobodyThere(Self.facts(ttyNamesDevice: true, stdin: true)) == nil)
        #expect(TerminalRule.nobodyThere(Self.facts(ttyNamesDevice: true, ttyDevice: Self.tty2)) == nil)
        #expect(TerminalRule.nobodyThere(Self.facts(ttyNamesDevice: true, ttyDevice: Self.pts3))
                == "the conversation does not read the terminal (password from a pipe)")
        #expect(TerminalRule.nobodyThere(Self.facts(ttyNamesDevice: true, display: true))
                == "the conversation does not read the terminal (password from a pipe)")
        #expect(TerminalRule.nobodyThere(Self.facts(display: true)) == nil)
        #expect(TerminalRule.nobodyThere(Self.facts()) == "no terminal and no graphical session")
        #expect(TerminalRule.nobodyThere(Self.facts(rootPath: false, ttyNamesDevice: true, ttyDevice: Self.tty2))
                == "the conversation does not read the terminal (password from a pipe)")
    }

    @Test func theTerminalAPromptMayBeEndedOn() {
        let chr: UInt32 = 0o020644, reg: UInt32 = 0o100644
        #expect(TerminalRule.mayOpen(mode: chr, device: Self.pts3, fileOwner: 1000, controlling: Self.pts3, owner: nil))
        #expect(TerminalRule.mayOpen(mode: chr, device: Self.pts3, fileOwner: 1000, controlling: Self.pts3, owner: 1000))
        #expect(!TerminalRule.mayOpen(mode: chr, device: Self.pts3, fileOwner: 0, controlling: Self.pts3, owner: 1000))
        #expect(!TerminalRule.mayOpen(mode: chr, device: Self.tty2, fileOwner: 1000, controlling: Self.pts3, owner: nil))
        #expect(!TerminalRule.mayOpen(mode: reg, device: Self.pts3, fileOwner: 1000, controlling: Self.pts3, owner: nil))
        #expect(!TerminalRule.mayOpen(mode: chr, device: 0, fileOwner: 1000, controlling: 0, owner: nil))
        #expect(TerminalRule.readsTerminal(descriptorDevice: Self.pts3, terminal: Self.pts3))
        #expect(TerminalRule.readsTerminal(descriptorDevice: Self.device(5, 0), terminal: Self.pts3))
        #expect(!TerminalRule.readsTerminal(descriptorDevice: Self.tty2, terminal: Self.pts3))
    }

    @Test func whatAThreadWaitsIn() {
        let reads: Set<Int> = [0, 19, 17], polls: Set<Int> = [7, 23, 270, 271]
        func wait(_ line: String) -> TerminalRule.Wait? {
            TerminalRule.wait(syscallLine: line, readCalls: reads, pollCalls: polls)
        }
        #expect(wait("0 0x3 0x7ffd1 0x1 0x0 0x0 0x0 0x7ffc 0x7f12") == .read(descriptor: 3))
        #expect(wait("0 0xa 0x7ffd1 0x1") == .read(descriptor: 10))
        #expect(wait("19 0x0 0x1 0x2") == .read(descriptor: 0))
        #expect(wait("7 0x7ffe 0x1 0xffffffff") == .poll)
        #expect(wait("271 0x7ffe 0x1 0x0") == .poll)
        #expect(wait("1 0x1 0x2 0x3") == nil)  // write
        #expect(wait("running") == nil)
        #expect(wait("-1 0x7ffe 0x0") == nil)
        #expect(wait("0") == nil)
        #expect(TerminalRule.descriptor(of: .read(descriptor: 5)) == 5)
        #expect(TerminalRule.descriptor(of: .poll) == 0)
    }
}
