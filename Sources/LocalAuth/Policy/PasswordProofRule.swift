/// What proves a password, for `mode=authsucc` (docs/PROTOCOL.md): after the password, the
/// lockout is cleared and the password time and boot recorded only when the password is
/// proven. Pure: the helper (AuthSucc) gathers the facts and performs the effects (the
/// password check, the record, the remote login's record); the tests give it every branch
/// (`Tests/LocalAuthTests/PasswordProofRuleTests.swift`).
///
/// * `proof=authtok`, the auth line after the password module. `required` does not stop a
///   stack, so that line also runs after a *wrong* password: the password the stack saw
///   (PAM_AUTHTOK) is checked against the account (paced for a caller that is not root).
/// * `proof=account`, the account phase, which sudo, su, login and polkit reach only after
///   the whole auth stack succeeded (where pam_faillock resets too). Trusted from root's
///   stack; from a peer that is not root a user can forge it, so there it proves nothing. sshd
///   reaches it after a public key on the handle where a wrong password failed, so a
///   networked handle proves nothing either. Where the account has a local hash,
///   PAM_AUTHTOK must still be its password; only for an account without one (SSSD,
///   Kerberos) is the account phase itself the proof.
/// * A request that names no proof (written by hand) gets the stricter one, `authtok`.
/// * A password typed on another machine lifts no lockout of this one's reader, whatever
///   the proof; nor does a line that is not the first of its kind in the handle.
public enum PasswordProofRule {
    public enum Proof: String, Equatable, Sendable { case authtok, account }

    /// The password checked against the account.
    public enum Check: Equatable, Sendable {
        case matches
        case differs
        /// The account has no local hash to check against (a directory service, a locked or
        /// passwordless account).
        case unprovable(String)
        /// The check could not be done (the paced check could not be serialized).
        case notDone
    }

    public struct Facts: Equatable, Sendable {
        /// As the request names it; nil: not named.
        public var proof: Proof?
        /// The first `authsucc` line of this handle ran.
        public var firstLine: Bool
        /// Where the handle comes from (RemoteRule).
        public var origin: Origin
        /// The peer is root (root's PAM stack); otherwise a user may have written the request.
        public var fromRoot: Bool
        /// PAM_AUTHTOK was not empty.
        public var passwordGiven: Bool
        /// The password checked against the account, once `decide` asked for it.
        public var check: Check?
        /// fprintd failed earlier in this transaction (`reader=unreachable`).
        public var readerUnreachable: Bool
        /// Without a required switch, a proven password re-trusts the enrolled set seen now.
        public var optInRequired: Bool
        /// PAM_SERVICE: the word a remote login recorded without PAM_RHOST is "from"; polkit's
        /// stack's password goes into a rights dialog's ticket.
        public var service: String

        public init(proof: Proof?, firstLine: Bool, origin: Origin, fromRoot: Bool, passwordGiven: Bool,
                    check: Check? = nil, readerUnreachable: Bool = false, optInRequired: Bool = false,
                    service: String = "") {
            self.proof = proof
            self.firstLine = firstLine
            self.origin = origin
            self.fromRoot = fromRoot
            self.passwordGiven = passwordGiven
            self.check = check
            self.readerUnreachable = readerUnreachable
            self.optInRequired = optInRequired
            self.service = service
        }
    }

    public enum Decision: Equatable, Sendable {
        /// Check the password against the account, then decide again with `Facts.check`.
        /// `paced`: as PacedPasswordCheck does for a caller that may call in a loop.
        case checkPassword(paced: Bool)
        /// Nothing changes.
        case refuse(Refusal)
        /// The password is proven: record it (the lockout cleared). `localUnlock`: the handle
        /// is no login from elsewhere (RemoteLogins). `readEnrolledSet`: the enrolled set is
        /// read and trusted again (no required switch, and fprintd not failed already).
        /// `dialogMatch`: it goes into the user's open rights dialog tickets (polkit's stack,
        /// DialogProof.passwordMethod).
        case proven(localUnlock: Bool, readEnrolledSet: Bool, dialogMatch: Bool)
    }

    public enum Refusal: Equatable, Sendable, CustomStringConvertible {
        case notFirstLine
        case anotherMachine(rhost: String)
        case accountPhaseFromUser
        case accountPhaseNetworked(String)
        case accountPhaseWithoutAuthtok
        case accountPhaseAuthtokDiffers
        case noPassword
        case passwordDiffers
        case unprovable(String)
        case notChecked

        public var description: String {
            switch self {
            case .notFirstLine:
                return "authsucc without the first line in this handle"
            case .anotherMachine(let rhost):
                return "a login from another machine (PAM_RHOST \(LogWords.short(rhost))) clears no lockout"
            case .accountPhaseFromUser:
                return "the account phase proves nothing from a caller that is not root (a user can send it)"
            case .accountPhaseNetworked(let why):
                return "the account phase proves no password for a networked handle (\(why))"
            case .accountPhaseWithoutAuthtok:
                return "the account has a local password hash and PAM_AUTHTOK is empty (libpam drops it "
                    + "after pam_authenticate): for a local account the `auth optional pam_localauth.so "
                    + "authsucc` line after the password module clears the lockout"
            case .accountPhaseAuthtokDiffers:
                return "PAM_AUTHTOK is not the local account's password"
            case .noPassword:
                return "no password in PAM_AUTHTOK"
            case .passwordDiffers:
                return "the password does not match the account"
            case .unprovable(let why):
                return "the password cannot be checked here (\(why)); clear it in the account "
                    + "phase: `account optional pam_localauth.so`"
            case .notChecked:
                return "the password could not be checked"
            }
        }
    }

    /// What to do next: check the password, refuse, or record it.
    public static func decide(_ facts: Facts) -> Decision {
        guard facts.firstLine else { return .refuse(.notFirstLine) }
        if case .anotherMachine(let rhost) = facts.origin { return .refuse(.anotherMachine(rhost: rhost)) }
        let proven = Decision.proven(localUnlock: !facts.origin.fromElsewhere,
                                     readEnrolledSet: !facts.readerUnreachable && !facts.optInRequired,
                                     dialogMatch: DialogProof.passwordMethod(service: facts.service) != nil)
        switch facts.proof ?? .authtok {
        case .account:
            guard facts.fromRoot else { return .refuse(.accountPhaseFromUser) }
            if let networked = facts.origin.networked { return .refuse(.accountPhaseNetworked(networked)) }
            // Linux-PAM drops PAM_AUTHTOK when pam_authenticate returns, so for a local
            // account it is usually empty here: the `authsucc` line, which sees it, clears.
            guard let check = facts.check else { return .checkPassword(paced: false) }
            switch check {
            case .matches, .unprovable: return proven
            case .differs, .notDone:
                return .refuse(facts.passwordGiven ? .accountPhaseAuthtokDiffers : .accountPhaseWithoutAuthtok)
            }
        case .authtok:
            guard let check = facts.check else { return .checkPassword(paced: !facts.fromRoot) }
            switch check {
            case .matches: return proven
            case .differs: return .refuse(facts.passwordGiven ? .passwordDiffers : .noPassword)
            case .unprovable(let why): return .refuse(.unprovable(why))
            case .notDone: return .refuse(.notChecked)
            }
        }
    }

    /// The remote login the account phase records, whatever else the request proves.
    public struct RemoteLoginRecord: Equatable, Sendable {
        /// One word: PAM_RHOST, else the service (`sshd`).
        public var from: String
        /// Why the handle is networked, in the log's words.
        public var networked: String
    }

    /// The account phase of a login from elsewhere (sshd's, by key as by password), on
    /// root's stack: its remote login is recorded. nil for any other request. Never from a
    /// peer that is not root: a user could record a login, which only tightens, but nothing
    /// of the user's has a reason to.
    public static func remoteLogin(_ facts: Facts) -> RemoteLoginRecord? {
        guard facts.proof == .account, facts.fromRoot, facts.origin.fromElsewhere,
              let networked = facts.origin.networked else { return nil }
        return RemoteLoginRecord(from: facts.origin.rhost.isEmpty ? facts.service : facts.origin.rhost,
                                 networked: networked)
    }

    /// The lockout the record lifts: its consecutive failed matches, when the state before
    /// (nil: not read) was a lockout; nil when there was none to lift.
    public static func lockoutCleared(before: StoredState?, rules: Rules) -> Int? {
        guard case .state(let s)? = before, rules.isLockedOut(s) else { return nil }
        return s.consecutiveFailures
    }

    /// What recording the password changed, in the log's words: a lockout is said to be
    /// cleared only when there was one. `before`: the state before the record (nil: not read).
    public static func recorded(before: StoredState?, rules: Rules) -> String {
        if case .damaged? = before { return "password recorded, the damaged state rewritten (it counted as a lockout)" }
        let state = before?.userState ?? UserState()
        let failures = state.consecutiveFailures
        if rules.isLockedOut(state) { return "password recorded, lockout cleared (\(failures) consecutive failed matches)" }
        if failures > 0 { return "password recorded, \(failures) failed matches forgotten (no lockout)" }
        return "password recorded (no lockout to clear)"
    }
}

extension Origin {
    /// PAM_RHOST as the handle gave it (empty for a logind session).
    public var rhost: String {
        switch self {
        case .namesThisMachine(let r), .sshd(let r), .anotherMachine(let r): return r
        case .here, .remoteSession: return ""
        }
    }
}
