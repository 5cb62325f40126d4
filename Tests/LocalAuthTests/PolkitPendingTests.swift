import Testing
@testable import LocalAuth

/// PolkitPending: one pending authentication of the asking agent is named; none, several,
/// one whose agent is not known, or one forgotten unanswered: nothing.
@Suite struct PolkitPendingTests {
    static let exec = "org.freedesktop.policykit.exec"

    func begin(_ table: inout PolkitPending, agent: String = ":1.7", serial: UInt64 = 10, cookie: String = "c1",
               action: String = exec, message: String = "Authentication is needed", program: String? = nil,
               caller: Int32? = nil, at now: Int64 = 1_000) -> (forgotten: PolkitPending.Authentication?, askAgent: Bool) {
        table.began(.init(agent: agent, serial: serial, cookie: cookie, action: action, message: message,
                          program: program, callerPID: caller, seenAt: now))
    }

    func found(_ table: inout PolkitPending, agent pid: Int32 = 400, at now: Int64 = 1_001,
               pkexec: Set<Int32> = [], newer: Bool = true) -> PolkitPending.Found {
        table.found(agentPID: pid, agentIsNewer: newer, now: now) { pkexec.contains($0) }
    }

    @Test func oneAuthenticationOfTheAgentIsNamed() {
        var table = PolkitPending()
        let got1 = begin(&table, program: "/usr/bin/id").askAgent
        #expect(got1)
        table.agent(":1.7", is: 400)
        let named = found(&table)
        #expect(named == .one(PolkitPurpose(action: Self.exec, message: "Authentication is needed",
                                                     program: "/usr/bin/id")!))
    }

    @Test func aQuestionOpenAboutAProcessIsKnownUntilItsAnswer() {
        var table = PolkitPending()
        #expect(!table.awaitingProcesses)
        _ = begin(&table)
        #expect(table.awaitingProcesses)
        table.agent(":1.7", is: 400)
        #expect(!table.awaitingProcesses)
        _ = table.checked(.init(sender: ":1.30", program: "/usr/bin/id", seenAt: 1_000))
        #expect(table.awaitingProcesses)
        table.caller(":1.30", is: nil)
        #expect(!table.awaitingProcesses)
    }

    @Test func anAgentOlderThanTheWatchIsNamedNothing() {
        var table = PolkitPending()
        _ = begin(&table)
        table.agent(":1.7", is: 400)
        let older = found(&table, newer: false)
        #expect(older == .olderThanTheWatch)
    }

    @Test func anotherAgentsAuthenticationIsNotThisOnes() {
        var table = PolkitPending()
        _ = begin(&table)
        table.agent(":1.7", is: 401)
        let got2 = found(&table, agent: 400)
        #expect(got2 == .none)
    }

    @Test func twoPendingOfOneAgentNameNothing() {
        var table = PolkitPending()
        _ = begin(&table)
        let got3 = begin(&table, serial: 11, cookie: "c2").askAgent
        #expect(!got3)   // its process asked once
        table.agent(":1.7", is: 400)
        let got4 = found(&table)
        #expect(got4 == .several(2))
    }

    @Test func anAgentNotKnownYetBlocksEveryName() {
        var table = PolkitPending()
        _ = begin(&table)
        table.agent(":1.7", is: 400)
        _ = begin(&table, agent: ":1.9", serial: 12, cookie: "c3")
        let got5 = found(&table)
        #expect(got5 == .agentsUnknown(1))
        table.agent(":1.9", is: nil)                                  // the daemon could not say
        let got6 = found(&table)
        #expect(got6 == .agentsUnknown(1))
    }

    @Test func theAgentsAnswerEndsIt() {
        var table = PolkitPending()
        _ = begin(&table)
        _ = begin(&table, serial: 11, cookie: "c2")
        table.agent(":1.7", is: 400)
        let got7 = table.answered(serial: 11, by: ":1.66")
        #expect(!got7)            // someone else's answer ends nothing
        let got8 = table.answered(serial: 11, by: ":1.7")
        #expect(got8)
        if case .one = found(&table) {} else { Issue.record("the other one should be named") }
        let got9 = table.answered(serial: 10, by: PolkitPending.busDaemon)
        #expect(got9)   // the agent left the bus
        let got10 = found(&table)
        #expect(got10 == .none)
    }

    @Test func polkitdsCancelEndsIt() {
        var table = PolkitPending()
        _ = begin(&table)
        table.agent(":1.7", is: 400)
        let got11 = table.cancelled(cookie: "c1")
        #expect(got11)
        let got12 = found(&table)
        #expect(got12 == .none)
        #expect(table.agents.isEmpty)
    }

    @Test func anAuthenticationPastItsLifetimeMarksItsAgentUntilItsEnd() {
        var table = PolkitPending()
        _ = begin(&table, at: 0)
        table.agent(":1.7", is: 400)
        let later = PolkitPending.lifetimeMillis + 5
        _ = begin(&table, serial: 11, cookie: "c2", at: later)
        #expect(table.entries.count == 1)
        // Still pending for the agent: the one left is not known to be the one answered.
        let got13 = found(&table, at: later)
        #expect(got13 == .forgotten)
        let got14 = table.answered(serial: 10, by: ":1.7")
        #expect(got14 == false)     // ends the mark only
        if case .one = found(&table, at: later) {} else { Issue.record("named once the forgotten one ended") }
    }

    @Test func aFullTableForgetsTheOldestAndMarksItsAgent() {
        var table = PolkitPending()
        _ = begin(&table, agent: ":1.7", serial: 1, cookie: "old")
        table.agent(":1.7", is: 400)
        for i in 0..<(PolkitPending.capacity - 1) {
            _ = begin(&table, agent: ":2.\(i)", serial: UInt64(100 + i), cookie: "k\(i)")
            table.agent(":2.\(i)", is: Int32(1000 + i))
        }
        let full = begin(&table, agent: ":1.7", serial: 2, cookie: "new")
        #expect(full.forgotten?.cookie == "old")
        #expect(table.entries.count == PolkitPending.capacity)
        let got15 = found(&table)
        #expect(got15 == .forgotten)
    }

    @Test func polkitdChangingHandsForgetsEverything() {
        var table = PolkitPending()
        _ = begin(&table)
        table.agent(":1.7", is: 400)
        table.forgetAll()
        let got16 = found(&table)
        #expect(got16 == .none)
        #expect(table.agents.isEmpty && table.entries.isEmpty && table.forgotten.isEmpty)
    }

    @Test func pkexecsProgramComesFromItsOwnCallWhenTheCallerIsPkexec() {
        var table = PolkitPending()
        let got17 = table.checked(.init(sender: ":1.30", program: "/usr/bin/id", seenAt: 999))
        #expect(got17)
        table.caller(":1.30", is: 555)
        _ = begin(&table, caller: 555)
        table.agent(":1.7", is: 400)
        let named = PolkitPurpose(action: Self.exec, message: "Authentication is needed", program: "/usr/bin/id")!
        let got18 = found(&table, pkexec: [555])
        #expect(got18 == .one(named))
        // The same call by a process that is not the system's pkexec gives no program.
        let unnamed = PolkitPurpose(action: Self.exec, message: "Authentication is needed", program: nil)!
        let got19 = found(&table, pkexec: [])
        #expect(got19 == .one(unnamed))
    }

    @Test func twoCallsOfOneCallerProcessGiveNoProgram() {
        var table = PolkitPending()
        _ = table.checked(.init(sender: ":1.30", program: "/usr/bin/id", seenAt: 999))
        _ = table.checked(.init(sender: ":1.31", program: "/usr/bin/rm", seenAt: 999))
        table.caller(":1.30", is: 555)
        table.caller(":1.31", is: 555)
        _ = begin(&table, caller: 555)
        table.agent(":1.7", is: 400)
        let named = found(&table, pkexec: [555])
        #expect(named == .one(PolkitPurpose(action: Self.exec, message: "Authentication is needed",
                                                                   program: nil)!))
    }

    @Test func textsAreKeptBoundedAndCleanedWhenNamed() {
        var table = PolkitPending()
        let long = String(repeating: "é", count: 10_000) + "\u{1b}[2J\nnext"
        _ = begin(&table, message: long, program: "/bin/x\u{202e}\n")
        #expect(table.entries[0].message.utf8.count <= PolkitPending.textBytes)
        table.agent(":1.7", is: 400)
        guard case .one(let purpose) = found(&table) else {
            Issue.record("one expected")
            return
        }
        #expect(!(purpose.message ?? "").contains("\n") && !(purpose.program ?? "").contains("\n"))
        #expect(!(purpose.program ?? "").unicodeScalars.contains("\u{202e}"))
    }
}
