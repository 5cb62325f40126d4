/// What polkit's yes in a right's dialog is worth (the helper's RightsDialog). polkit says
/// the `polkit-1` stack succeeded, not how, and a rule or default could say yes with no
/// prompt at all; the user's state file cannot tell this dialog's finger from the same
/// user's `sudo` elsewhere at the same time. So each dialog has a ticket of its own
/// (DialogTicket), into which only the helper serving a `polkit-1` transaction writes its
/// fingerprint match or proven password; the yes counts for the authentications of one
/// agent recorded there after the ticket was created. Pure: tested without a dialog
/// (Tests/LocalAuthTests/DialogProofTests.swift).
///
/// One agent, not one transaction: GNOME Shell's dialog starts polkit's agent helper again
/// after every attempt its agent library counts as failed (a conversation that ended in the
/// password module's failure; and, before the helper stopped sending "Fingerprint recognized"
/// to polkit's agents, a match whose last line was read after the helper had exited: seen in
/// the Debian 13 guest as two matches of agent 1311 for one dialog), and the desktop's agent
/// shows one dialog at a time. Two agents are two dialogs: which one was this dialog's is
/// unknown, and the yes counts for nothing.
public enum DialogProof: Equatable, Sendable {
    case fingerprint
    case password
    /// A password, for a right that needs the finger.
    case passwordNotAllowed
    /// Nothing recorded in the ticket: polkit's yes came without an authentication.
    case none
    /// Matches from this many agents: another dialog of the same user was passed while this
    /// one was open, and which one was this dialog's is unknown.
    case several(Int)

    public static func judge(_ ticket: DialogTicket, allowsPassword: Bool) -> DialogProof {
        // Lines dated before the ticket cannot be its own (a clock that went back, or a
        // writer gone wrong): they prove nothing.
        let matches = ticket.matches.filter { $0.at >= ticket.createdAt }
        var agents: [DialogTicket.Process] = []
        for m in matches where !agents.contains(m.agent) { agents.append(m.agent) }
        guard !agents.isEmpty else { return .none }
        guard agents.count == 1 else { return .several(agents.count) }
        // One agent: a finger in any of its transactions, else the password (a directory
        // account's account phase after the finger is the same transaction).
        if matches.contains(where: { $0.method == .fingerprint }) { return .fingerprint }
        return allowsPassword ? .password : .passwordNotAllowed
    }
}

extension DialogProof {
    /// The one PAM service whose matches go into the user's open dialog tickets: polkit's
    /// agent helper runs it, on root's path. A match on any other service (sudo, the lock
    /// screen, a program that is not root, login) was not typed or touched in a polkit dialog.
    public static let dialogService = "polkit-1"

    /// What a helper's authentication writes into the open tickets: a new fingerprint match
    /// (a reused one is no touch) on `dialogService`; nil for anything else. A proven
    /// password (`authsucc`) is `passwordMethod`'s.
    public static func ticketMethod(_ outcome: EvaluationMachine.Outcome, service: String) -> DialogTicket.Match.Method? {
        guard service == dialogService, case .success(.fingerprint) = outcome else { return nil }
        return .fingerprint
    }

    /// A password proven by `authsucc` (PasswordProofRule) on `service`: written into the
    /// open tickets only on `dialogService`.
    public static func passwordMethod(service: String) -> DialogTicket.Match.Method? {
        service == dialogService ? .password : nil
    }
}
