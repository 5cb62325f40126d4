#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// The request (LocalAuthProtocol's `Request`, docs/PROTOCOL.md), checked before anything
/// else happens, with what the helper adds to it: the user name checked, and on the paths
/// of localauthd the caller's pid, uid and presence facts as the kernel and /proc give them
/// (Launch.admit), not as the request claims them.
struct HelperRequest {
    typealias Mode = Request.Mode
    /// `proof` in authsucc mode (AuthSucc).
    typealias Proof = Request.Proof

    /// The request as it came, typed.
    let wire: Request
    var mode: Mode { wire.mode }
    var user: UserName
    var service: String { wire.caller.service }
    var tty: String { wire.caller.tty }
    var rhost: String { wire.caller.rhost }
    var ruser: String { wire.caller.ruser }
    var silent: Bool { wire.caller.silent }
    /// The application's stdin is a terminal; a graphical display is named.
    var stdinTTY: Bool
    var display: Bool
    var locale: String { wire.caller.locale }
    /// LANGUAGE of the caller (gettext's `:` list), for the messages only.
    var languageList: String { wire.caller.language }
    var callerPID: Int32?
    /// The real uid of the program that called PAM (the module's getuid()).
    var callerUID: uid_t?
    /// On the unprivileged path, the only owner a terminal may have for the helper to end a
    /// prompt on it (a program run with `su user -c` from root's terminal shares root's).
    var terminalOwner: uid_t?
    /// authsucc mode's keys; all off in any other mode.
    var authsucc: Request.AuthSucc {
        if case .authsucc(_, let a) = wire { return a }
        return Request.AuthSucc()
    }
    var firstLine: Bool { authsucc.firstLine }
    /// authsucc mode: what proves the password (AuthSucc); nil when not named.
    var proof: Proof? { authsucc.proof }
    /// authsucc mode: fprintd failed earlier in this transaction (`reader=unreachable`), so
    /// it is not asked again. Only ever skips a contact; from a peer that is not root a user who
    /// sends it only loses the re-trust of their enrolled set.
    var readerUnreachable: Bool { authsucc.readerUnreachable }
    var arguments: [String] { wire.caller.arguments }
    /// polkit's words localauthd handed over for a root peer (RootPeer); used only when the
    /// peer is polkit's agent helper (CallerPurpose).
    var polkit: PolkitPurpose?
    /// Every key as sent, for what still reads a mode's keys by name (RightsMode: `op`,
    /// `identifier`, …; the typed ones are `wire`'s `.right`).
    let keys: KeyValues

    struct Invalid: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }

    static func parse(_ frame: Frame) throws(Invalid) -> HelperRequest {
        guard frame.kind == .request else { throw Invalid("first frame is not a request") }
        let kv: KeyValues
        do { kv = try KeyValues.parse(frame.payload) } catch { throw Invalid("request is not key=value text: \(error)") }
        let wire: Request
        switch Request.decode(kv) {
        case .success(let decoded): wire = decoded
        case .failure(let problem): throw Invalid(problem.description)
        }
        let user: UserName
        do { user = try UserName(wire.caller.user) } catch { throw Invalid("refused user name: \(error)") }
        return HelperRequest(wire: wire, user: user, stdinTTY: wire.caller.stdinTTY, display: wire.caller.display,
                             callerPID: wire.caller.pid, callerUID: wire.caller.callerUID.map { uid_t($0) },
                             terminalOwner: nil, keys: kv)
    }

    /// PAM_RHOST names another machine (RemoteHost).
    var isRemote: Bool { RemoteHost.namesAnotherMachine(rhost) }

    /// The messages' language, as gettext would pick it from the caller's variables.
    var language: Language { Language(language: languageList, lcAll: locale, lcMessages: nil, lang: nil) }

    /// Whether the program asking is run by the account's owner (sudo, a screen locker,
    /// polkit for oneself), as opposed to login (run by root for whoever sits down) or su
    /// (run by one user for another): only the owner is told the account's state.
    var callerIsTheUser: Bool {
        guard let callerUID, let entry = getpwnam(user.value) else { return false }
        return entry.pointee.pw_uid == callerUID
    }

    /// Where the request came from, for the audit records and the journal.
    var eventContext: EventContext {
        EventContext(service: service, tty: tty, rhost: rhost, ruser: ruser)
    }

    /// PAM_TTY names a terminal device (`/dev/pts/3`, `pts/3`, `tty1`), not an X display.
    var ttyDevicePath: String? {
        guard !tty.isEmpty, !tty.hasPrefix(":"), !tty.includes("..") else { return nil }
        let path = tty.hasPrefix("/") ? tty : "/dev/" + tty
        return path.hasPrefix("/dev/") ? path : nil
    }
}
