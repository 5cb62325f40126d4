#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// The module's request frame (docs/PROTOCOL.md), checked before anything else happens.
struct HelperRequest {
    /// `status`: the user's own summary, for localauthctl without root (StatusSummary).
    /// `app`: an application's LAContext (AppMode.swift), never sent by the module.
    /// `right`: an application's LARightStore and LARight (RightsMode.swift), never sent by the module.
    enum Mode: String { case authenticate, authsucc, status, app, right }
    /// `proof` in authsucc mode (AuthSucc).
    enum Proof: String { case authtok, account }

    var mode: Mode
    var user: UserName
    var service: String
    var tty: String
    var rhost: String
    var ruser: String
    var silent: Bool
    /// The application's stdin is a terminal; a graphical display is named.
    var stdinTTY: Bool
    var display: Bool
    var locale: String
    /// LANGUAGE of the caller (gettext's `:` list), for the messages only.
    var languageList: String
    var callerPID: Int32?
    /// The real uid of the program that called PAM (the module's getuid()).
    var callerUID: uid_t?
    /// On the unprivileged path, the only owner a terminal may have for the helper to end a
    /// prompt on it (a program run with `su user -c` from root's terminal shares root's).
    var terminalOwner: uid_t?
    var firstLine: Bool
    /// authsucc mode: what proves the password (AuthSucc); nil when not named.
    var proof: Proof?
    /// authsucc mode: fprintd failed earlier in this transaction (`reader=unreachable`), so
    /// it is not asked again. Only ever skips a contact; from a peer that is not root a user who
    /// sends it only loses the re-trust of their enrolled set.
    var readerUnreachable: Bool { keys.value("reader") == "unreachable" }
    var arguments: [String]
    /// Every key as sent, for what only one mode reads (`op`, `policy` in `mode=app`).
    var keys = KeyValues()

    struct Invalid: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }

    static func parse(_ frame: Frame) throws(Invalid) -> HelperRequest {
        guard frame.kind == .request else { throw Invalid("first frame is not a request") }
        let kv: KeyValues
        do { kv = try KeyValues.parse(frame.payload) } catch { throw Invalid("request is not key=value text: \(error)") }
        for key in ["version", "mode", "user", "service", "tty", "rhost", "ruser", "silent", "locale", "language",
                    "pid", "first_line", "stdin_tty", "display", "proof", "caller_uid", "op", "policy", "reader",
                    "identifier", "requirement", "secret", "digest", "localized_reason", "capability", "capabilities"]
        where kv.count(key) > 1 {
            throw Invalid("request repeats `\(key)`")
        }
        guard kv.value("version") == "1" else { throw Invalid("unsupported request version") }
        guard let mode = kv.value("mode").flatMap(Mode.init(rawValue:)) else { throw Invalid("unknown mode") }
        let user: UserName
        do { user = try UserName(kv.value("user") ?? "") } catch { throw Invalid("refused user name: \(error)") }
        return HelperRequest(
            mode: mode, user: user, service: kv.value("service") ?? "", tty: kv.value("tty") ?? "",
            rhost: kv.value("rhost") ?? "", ruser: kv.value("ruser") ?? "", silent: kv.value("silent") == "1",
            stdinTTY: kv.value("stdin_tty") == "1", display: kv.value("display") == "1",
            locale: kv.value("locale") ?? "", languageList: kv.value("language") ?? "",
            callerPID: kv.value("pid").flatMap { Int32($0) },
            callerUID: kv.value("caller_uid").flatMap { uid_t($0) },
            terminalOwner: nil, firstLine: kv.value("first_line") == "1",
            proof: kv.value("proof").flatMap(Proof.init(rawValue:)), arguments: kv.values("arg"),
            keys: kv)
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
