/// What polkit's yes in a right's dialog is worth (the helper's RightsDialog). polkit says
/// the `polkit-1` stack succeeded, not how, and a rule or default could say yes with no
/// prompt at all; the user's state file cannot tell this dialog's finger from the same
/// user's `sudo` elsewhere at the same time. So each dialog has a ticket of its own
/// (DialogTicket), into which only the helper serving a `polkit-1` transaction writes its
/// fingerprint match or proven password; the yes counts for exactly one authentication
/// recorded there after the ticket was created. Pure: tested without a dialog
/// (Tests/LocalAuthTests/DialogProofTests.swift).
public enum DialogProof: Equatable, Sendable {
    case fingerprint
    case password
    /// A password, for a right that needs the finger.
    case passwordNotAllowed
    /// Nothing recorded in the ticket: polkit's yes came without an authentication.
    case none
    /// Matches of this many authentications (PAM transactions): another dialog of the same
    /// user was passed while this one was open, and which one was this dialog's is unknown.
    case several(Int)

    public static func judge(_ ticket: DialogTicket, allowsPassword: Bool) -> DialogProof {
        // Lines dated before the ticket cannot be its own (a clock that went back, or a
        // writer gone wrong): they prove nothing.
        let matches = ticket.matches.filter { $0.at >= ticket.createdAt }
        var transactions: [DialogTicket.Process] = []
        for m in matches where !transactions.contains(m.transaction) { transactions.append(m.transaction) }
        guard !transactions.isEmpty else { return .none }
        guard transactions.count == 1 else { return .several(transactions.count) }
        // One transaction: its finger, with perhaps the account phase's password after it.
        if matches.contains(where: { $0.method == .fingerprint }) { return .fingerprint }
        return allowsPassword ? .password : .passwordNotAllowed
    }
}
