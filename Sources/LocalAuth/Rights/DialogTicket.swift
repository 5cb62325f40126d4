/// One rights dialog's ticket (DialogTickets keeps them, root's only): whose dialog it is,
/// when it began, the process running it, and the matches recorded into it since by the
/// helper serving the dialog's `polkit-1` stack (DialogProof judges them).
///
/// Text, one fact a line; the matches are appended, one whole line per write:
///
///     ticket 1
///     user alice
///     created 81234567890123            CLOCK_BOOTTIME nanoseconds
///     dialog 4242 987654                 the helper asking polkitd: pid, start time
///     match 81234999000000 fingerprint agent 1777 55501 helper 1790 55620
///
/// A match names the polkit agent (pid and start time, for the log) and the agent helper
/// running the PAM transaction it came from: the account phase of a directory account can
/// add a proven password to the same transaction's finger, and that is one authentication.
public struct DialogTicket: Equatable, Sendable {
    /// A process as the kernel tells one from a later one with its pid: pid and start time
    /// (clock ticks since boot, /proc/PID/stat field 22).
    public struct Process: Equatable, Hashable, Sendable {
        public let pid: Int32
        public let startTime: UInt64
        public init(pid: Int32, startTime: UInt64) {
            self.pid = pid
            self.startTime = startTime
        }
    }

    public struct Match: Equatable, Sendable {
        public enum Method: String, Sendable { case fingerprint, password }
        /// CLOCK_BOOTTIME nanoseconds.
        public let at: UInt64
        public let method: Method
        public let agent: Process
        /// polkit's agent helper: one PAM transaction.
        public let transaction: Process
        public init(at: UInt64, method: Method, agent: Process, transaction: Process) {
            self.at = at
            self.method = method
            self.agent = agent
            self.transaction = transaction
        }
    }

    public let user: String
    /// CLOCK_BOOTTIME nanoseconds.
    public let createdAt: UInt64
    public let dialog: Process
    public var matches: [Match]

    public init(user: String, createdAt: UInt64, dialog: Process, matches: [Match] = []) {
        self.user = user
        self.createdAt = createdAt
        self.dialog = dialog
        self.matches = matches
    }

    public struct Damaged: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The header a new ticket is written with.
    public func encodedHeader() -> [UInt8] {
        Array("ticket 1\nuser \(user)\ncreated \(createdAt)\ndialog \(dialog.pid) \(dialog.startTime)\n".utf8)
    }

    public static func encoded(_ m: Match) -> [UInt8] {
        Array(("match \(m.at) \(m.method.rawValue) agent \(m.agent.pid) \(m.agent.startTime)"
            + " helper \(m.transaction.pid) \(m.transaction.startTime)\n").utf8)
    }

    /// Anything but the shape above (a torn line included) is damaged: the dialog then
    /// refuses rather than guess.
    public static func decode(_ bytes: [UInt8]) throws(Damaged) -> DialogTicket {
        guard bytes.last == UInt8(ascii: "\n") else { throw Damaged(description: "it does not end with a whole line") }
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast()
            .map { String(decoding: $0, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false) }
        guard lines.count >= 4, lines[0] == ["ticket", "1"], lines[1].count == 2, lines[1][0] == "user",
              lines[2].count == 2, lines[2][0] == "created", let created = UInt64(lines[2][1]),
              lines[3].count == 3, lines[3][0] == "dialog", let dialog = process(lines[3][1], lines[3][2]) else {
            throw Damaged(description: "its header is not a ticket's")
        }
        var ticket = DialogTicket(user: String(lines[1][1]), createdAt: created, dialog: dialog)
        for words in lines.dropFirst(4) {
            guard let match = match(words) else { throw Damaged(description: "a match line is not whole") }
            ticket.matches.append(match)
        }
        return ticket
    }

    private static func match(_ w: [Substring]) -> Match? {
        guard w.count == 9, w[0] == "match", let at = UInt64(w[1]), let method = Match.Method(rawValue: String(w[2])),
              w[3] == "agent", let agent = process(w[4], w[5]),
              w[6] == "helper", let helper = process(w[7], w[8]) else { return nil }
        return Match(at: at, method: method, agent: agent, transaction: helper)
    }

    private static func process(_ pid: Substring, _ start: Substring) -> Process? {
        guard let p = Int32(pid), let s = UInt64(start) else { return nil }
        return Process(pid: p, startTime: s)
    }
}
