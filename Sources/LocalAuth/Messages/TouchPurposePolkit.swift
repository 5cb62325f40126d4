/// What polkit asks one authentication for, as root read it from polkitd's call to the agent
/// (localauthd's monitor of the system bus), never from the agent or the agent helper: the
/// action's id, the message polkitd gave the agent, and the program (pkexec's `program`
/// detail). Every field is cleaned here (CleanText) whoever builds it, so a value of this
/// type is always shown and logged as it is.
///
/// It travels from localauthd to the request's helper in the spare handoff (SpareWait): after
/// `UID\nPID\nNANOS\nCONFIG`, four more lines `polkit\nACTION\nMESSAGE\nPROGRAM` (an empty line
/// for a field that is absent). Never with the `ssh-agent` line.
public struct PolkitPurpose: Equatable, Sendable {
    /// Scalars of an action id: polkit's ids are short reverse-DNS names.
    public static let actionLimit = 128

    public let action: String
    public let message: String?
    public let program: String?

    /// Nil when the action is empty once cleaned (nothing to name).
    public init?(action: String, message: String?, program: String?) {
        let action = CleanText.line(action, limit: Self.actionLimit, mark: .dots)
        guard !action.isEmpty else { return nil }
        self.action = action
        self.message = Self.field(message)
        self.program = Self.field(program)
    }

    private static func field(_ text: String?) -> String? {
        guard let text else { return nil }
        let clean = CleanText.line(text, mark: .dots)
        return clean.isEmpty ? nil : clean
    }

    /// The first of the handoff's four lines.
    public static let handoffKind = "polkit"

    /// The four lines that follow the handoff's first four, joined by `\n` by the writer.
    public var handoffLines: [String] { [Self.handoffKind, action, message ?? "", program ?? ""] }

    /// From the handoff's lines after its first four: exactly `polkit`, ACTION, MESSAGE, PROGRAM.
    /// Each is cleaned again: the reader does not count on the writer.
    public init?(handoffLines lines: [Substring]) {
        guard lines.count == 4, lines[0] == Self.handoffKind else { return nil }
        self.init(action: String(lines[1]), message: String(lines[2]), program: String(lines[3]))
    }
}
