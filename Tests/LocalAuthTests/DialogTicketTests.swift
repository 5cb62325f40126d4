#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// DialogTicket's text, and DialogTickets in a directory of the test's own.
@Suite struct DialogTicketTests {
    private let match = DialogTicket.Match(at: 2_000, method: .password, agent: .init(pid: 700, startTime: 5),
                                           transaction: .init(pid: 710, startTime: 9))

    @Test func aTicketReadsBackWithItsMatches() throws {
        let ticket = DialogTicket(user: "alice", createdAt: 1_000, dialog: .init(pid: 42, startTime: 7))
        let bytes = ticket.encodedHeader() + DialogTicket.encoded(match)
        let back = try DialogTicket.decode(bytes)
        #expect(back == DialogTicket(user: "alice", createdAt: 1_000, dialog: .init(pid: 42, startTime: 7),
                                     matches: [match]))
    }

    @Test func aTornOrForeignTicketIsDamaged() {
        let header = DialogTicket(user: "alice", createdAt: 1, dialog: .init(pid: 42, startTime: 7)).encodedHeader()
        #expect(throws: DialogTicket.Damaged.self) { try DialogTicket.decode(header + Array("match 5 finger".utf8)) }
        #expect(throws: DialogTicket.Damaged.self) { try DialogTicket.decode(header + Array("match 5 magic\n".utf8)) }
        #expect(throws: DialogTicket.Damaged.self) { try DialogTicket.decode(Array("user alice\n".utf8)) }
    }

    @Test func matchesGoOnlyToTheUsersTicketsOfRunningDialogs() throws {
        var template = Array("/tmp/dialog-tickets-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { _ = system("rm -rf '\(dir)'") }
        let tickets = DialogTickets(stateDirectory: dir)
        let alive = DialogTicket.Process(pid: 42, startTime: 7)
        let mine = try tickets.create(DialogTicket(user: "alice", createdAt: 1_000, dialog: alive))
        let bobs = try tickets.create(DialogTicket(user: "bob", createdAt: 1_000, dialog: alive))
        let ended = try tickets.create(DialogTicket(user: "alice", createdAt: 1_000, dialog: .init(pid: 43, startTime: 1)))
        #expect(mine != bobs)

        #expect(tickets.record(match, user: "alice", isAlive: { $0 == alive }) == 1)
        #expect(try tickets.read(mine).matches == [match])
        #expect(try tickets.read(bobs).matches == [])
        #expect(access(ended, F_OK) != 0)                 // the ended dialog's ticket is swept

        var st = stat()
        #expect(stat(mine, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(stat(tickets.directory, &st) == 0 && st.st_mode & 0o777 == 0o700)
        tickets.remove(mine)
        #expect(access(mine, F_OK) != 0)
    }
}
