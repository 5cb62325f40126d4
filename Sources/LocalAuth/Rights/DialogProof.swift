/// What polkit's yes in a right's dialog rests on (the helper's RightsDialog): polkit says
/// the `polkit-1` stack succeeded, not how, and a rule or default could say yes with no
/// prompt at all. So the user's state is read before the dialog and after it, and the yes
/// counts only for a fingerprint match recorded since the dialog began (the stored time
/// moved, and is not older than the start) or, where the right allows it, a password
/// entered since then (`authsucc`). Pure: the times come in, tested without a dialog
/// (Tests/LocalAuthTests/DialogProofTests.swift).
///
/// Times are seconds: a match in the same second as one recorded before the dialog leaves
/// the stored time as it was, and is refused (never the other way round).
public enum DialogProof: Equatable, Sendable {
    case fingerprint
    case password
    /// A password, for a right that needs the finger.
    case passwordNotAllowed
    /// Neither a new match nor a new password.
    case none

    public static func judge(before: UserState, after: UserState, began: Timestamp,
                             allowsPassword: Bool) -> DialogProof {
        if isNew(before.lastFingerprintAt, after.lastFingerprintAt, since: began) { return .fingerprint }
        guard isNew(before.lastPasswordAt, after.lastPasswordAt, since: began) else { return .none }
        return allowsPassword ? .password : .passwordNotAllowed
    }

    static func isNew(_ old: Timestamp?, _ now: Timestamp?, since began: Timestamp) -> Bool {
        guard let now, now >= began else { return false }
        return old != now
    }
}
