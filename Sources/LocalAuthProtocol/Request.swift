/// The `Q` frame's payload (docs/PROTOCOL.md): what a caller asks of the root side, one case
/// per mode and operation, with the fields that mode carries. The one encoder and the one
/// decoder of requests for every Swift side: the library and localauthctl encode, localauthd
/// (RequestPeek) and the helper decode. The module's C encoder (`request.c`) writes the same
/// lines; a unit test runs it and decodes its output here (RequestTableTests).
///
/// On the wire a request is `key=value` lines (KeyValues), in this order: `version`, `mode`,
/// the operation's keys (`op`, `policy`, a right's keys), the caller's (`user` … `pid`),
/// `authsucc`'s (`first_line`, `proof`, `reader`), every `arg`, then `keep`. The order is
/// the module's and the library's own; the decoder does not depend on it.
public enum Request: Equatable, Sendable {
    /// The module's first line: a finger, or the password.
    case authenticate(Caller)
    /// After the password: the `authsucc` line, or the account phase (`proof=account`).
    case authsucc(Caller, AuthSucc)
    /// `localauthctl status` without root: the caller's own summary.
    case status(Caller)
    /// An application's `LAContext` (`canEvaluatePolicy`, `evaluatePolicy`).
    case app(Caller, App)
    /// An application's `LARightStore` and `LAPersistedRight`.
    case right(Caller, Right)
    /// `localauthctl ssh`: the user's SSH keys on root's side (RequestSSH.swift).
    case ssh(Caller, SSH)

    /// The only version there is.
    public static let version = "1"

    /// The `mode` key's values.
    public enum Mode: String, CaseIterable, Sendable {
        case authenticate, authsucc, status, app, right, ssh
    }

    /// What every request says about who asks, from where (the module's PAM items, or a
    /// program's own). From a peer that is not root every one of these is only a claim.
    public struct Caller: Equatable, Sendable {
        /// PAM_USER, or the name of the program's real uid.
        public var user: String
        /// PAM_SERVICE, or the program's name.
        public var service: String
        public var tty: String
        public var rhost: String
        public var ruser: String
        /// PAM_SILENT.
        public var silent: Bool
        /// The application's stdin is a terminal.
        public var stdinTTY: Bool
        /// A graphical session is named.
        public var display: Bool
        /// A plain locale name, or empty.
        public var locale: String
        /// LANGUAGE (gettext's `:` list), or empty.
        public var language: String
        /// `caller_uid`: the calling process's real uid; nil when not sent (or not a number).
        public var callerUID: UInt32?
        /// `pid`: the calling process; nil when not sent (or not a number).
        public var pid: Int32?
        /// The module's arguments, verbatim and in order (`arg`, repeated).
        public var arguments: [String]

        public init(user: String, service: String = "", tty: String = "", rhost: String = "", ruser: String = "",
                    silent: Bool = false, stdinTTY: Bool = false, display: Bool = false, locale: String = "",
                    language: String = "", callerUID: UInt32? = nil, pid: Int32? = nil, arguments: [String] = []) {
            self.user = user
            self.service = service
            self.tty = tty
            self.rhost = rhost
            self.ruser = ruser
            self.silent = silent
            self.stdinTTY = stdinTTY
            self.display = display
            self.locale = locale
            self.language = language
            self.callerUID = callerUID
            self.pid = pid
            self.arguments = arguments
        }
    }

    /// `proof` in `authsucc` mode: what proves the password that follows.
    public enum Proof: String, CaseIterable, Sendable {
        /// The `auth ... authsucc` line: the password is checked against the account.
        case authtok
        /// The account phase (sudo, su, login, polkit call it only after the auth stack succeeded).
        case account
    }

    /// `authsucc` mode's own keys.
    public struct AuthSucc: Equatable, Sendable {
        /// `first_line=1`: this handle's first line ran for the user without a match.
        public var firstLine: Bool
        /// nil when not sent, or another word (both read as `authtok`).
        public var proof: Proof?
        /// `reader=unreachable`: the first line found fprintd unreachable.
        public var readerUnreachable: Bool

        public init(firstLine: Bool = false, proof: Proof? = nil, readerUnreachable: Bool = false) {
            self.firstLine = firstLine
            self.proof = proof
            self.readerUnreachable = readerUnreachable
        }
    }

    /// `policy` in `mode=app`: Apple's policies as the root side knows them.
    public enum Policy: String, CaseIterable, Sendable {
        /// Apple's 1 and 4: a finger only.
        case biometrics
        /// Apple's 2: a finger, or the account password.
        case owner
    }

    /// `mode=app`: `op` and `policy`.
    public enum App: Equatable, Sendable {
        /// `canEvaluatePolicy`; `keep`: the program would keep the connection for its next
        /// preflight (`keep=1`).
        case preflight(Policy, keep: Bool)
        /// `evaluatePolicy`.
        case evaluate(Policy)

        public var policy: Policy {
            switch self {
            case .preflight(let p, _), .evaluate(let p): return p
            }
        }

        public var op: String {
            switch self {
            case .preflight: return "preflight"
            case .evaluate: return "evaluate"
            }
        }
    }

    /// `mode=right`: the `op` and its keys. Identifiers, secrets, digests and reasons travel
    /// as hex text (any bytes in one line); a capability is 64 hex digits. The root side
    /// checks their contents (RightsMode); here they are what was sent.
    public enum Right: Equatable, Sendable {
        /// `requirement`: `default`, `biometry`, `biometry-current-set`, `biometry-or-password`.
        case save(identifier: String, requirement: String, secret: String, capability: String?)
        case get(identifier: String)
        case check(identifier: String)
        /// `localizedReason`: hex of the reason's UTF-8, for the polkit dialog.
        case authorize(identifier: String, localizedReason: String?)
        case deauthorize(identifier: String)
        case secret(identifier: String, capability: String?)
        /// `digest`: the SHA-256 to sign, in hex.
        case sign(identifier: String, digest: String, capability: String?)
        case remove(identifier: String, capability: String?)
        /// `capabilities`: comma-separated on the wire.
        case removeAll(capabilities: [String])

        /// The `op` words, in the order of docs/PROTOCOL.md.
        public static let operations = ["save", "get", "check", "authorize", "deauthorize", "secret", "sign",
                                        "remove", "remove_all"]

        public var op: String {
            switch self {
            case .save: return "save"
            case .get: return "get"
            case .check: return "check"
            case .authorize: return "authorize"
            case .deauthorize: return "deauthorize"
            case .secret: return "secret"
            case .sign: return "sign"
            case .remove: return "remove"
            case .removeAll: return "remove_all"
            }
        }

        /// The right's identifier (hex); nil for `remove_all`.
        public var identifier: String? {
            switch self {
            case .save(let i, _, _, _), .get(let i), .check(let i), .authorize(let i, _), .deauthorize(let i),
                 .secret(let i, _), .sign(let i, _, _), .remove(let i, _):
                return i
            case .removeAll:
                return nil
            }
        }

        /// The keys after `op`, in the library's order.
        var keys: [(String, String)] {
            var out: [(String, String)] = []
            if let identifier { out.append(("identifier", identifier)) }
            switch self {
            case .save(_, let requirement, let secret, let capability):
                out += [("requirement", requirement), ("secret", secret)]
                if let capability { out.append(("capability", capability)) }
            case .authorize(_, let reason):
                if let reason { out.append(("localized_reason", reason)) }
            case .sign(_, let digest, let capability):
                out.append(("digest", digest))
                if let capability { out.append(("capability", capability)) }
            case .secret(_, let capability), .remove(_, let capability):
                if let capability { out.append(("capability", capability)) }
            case .removeAll(let capabilities):
                out.append(("capabilities", capabilities.joined(separator: ",")))
            case .get, .check, .deauthorize:
                break
            }
            return out
        }

        static func decode(op: String?, _ kv: KeyValues) -> Right? {
            let identifier = kv.value("identifier") ?? ""
            let capability = kv.value("capability")
            switch op {
            case "save":
                return .save(identifier: identifier, requirement: kv.value("requirement") ?? "",
                             secret: kv.value("secret") ?? "", capability: capability)
            case "get": return .get(identifier: identifier)
            case "check": return .check(identifier: identifier)
            case "authorize": return .authorize(identifier: identifier, localizedReason: kv.value("localized_reason"))
            case "deauthorize": return .deauthorize(identifier: identifier)
            case "secret": return .secret(identifier: identifier, capability: capability)
            case "sign": return .sign(identifier: identifier, digest: kv.value("digest") ?? "", capability: capability)
            case "remove": return .remove(identifier: identifier, capability: capability)
            case "remove_all":
                return .removeAll(capabilities: (kv.value("capabilities") ?? "").split(separator: ",").map(String.init))
            default: return nil
            }
        }
    }

    /// Why bytes are not a request; the description is the helper's "bad request" cause.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Keys that carry one field each: a second one is refused, so that no second `mode`,
    /// `user` or `proof` can hide behind the first. `arg` is the one repeated key.
    public static let singleKeys = ["version", "mode", "user", "service", "tty", "rhost", "ruser", "silent",
                                    "locale", "language", "pid", "first_line", "stdin_tty", "display", "proof",
                                    "caller_uid", "op", "policy", "reader", "identifier", "requirement", "secret",
                                    "digest", "localized_reason", "capability", "capabilities", "keep",
                                    "name", "reuse", "forwarding", "comment", "after", "skip"]

    // MARK: - the fields every mode has

    public var mode: Mode {
        switch self {
        case .authenticate: return .authenticate
        case .authsucc: return .authsucc
        case .status: return .status
        case .app: return .app
        case .right: return .right
        case .ssh: return .ssh
        }
    }

    public var caller: Caller {
        get {
            switch self {
            case .authenticate(let c), .authsucc(let c, _), .status(let c), .app(let c, _), .right(let c, _),
                 .ssh(let c, _): return c
            }
        }
        set {
            switch self {
            case .authenticate: self = .authenticate(newValue)
            case .authsucc(_, let a): self = .authsucc(newValue, a)
            case .status: self = .status(newValue)
            case .app(_, let a): self = .app(newValue, a)
            case .right(_, let r): self = .right(newValue, r)
            case .ssh(_, let o): self = .ssh(newValue, o)
            }
        }
    }

    /// A preflight that would keep its connection for the next one (`keep=1`).
    public var keepsConnection: Bool {
        if case .app(_, .preflight(_, keep: true)) = self { return true }
        return false
    }

    // MARK: - encoding

    /// The key/value lines, in the wire's order.
    public var keyValues: KeyValues {
        var kv = KeyValues()
        kv.add("version", Self.version)
        kv.add("mode", mode.rawValue)
        switch self {
        case .app(_, let app):
            kv.add("op", app.op)
            kv.add("policy", app.policy.rawValue)
        case .right(_, let right):
            kv.add("op", right.op)
            for (key, value) in right.keys { kv.add(key, value) }
        case .ssh(_, let ssh):
            kv.add("op", ssh.op)
            for (key, value) in ssh.keys { kv.add(key, value) }
        case .authenticate, .authsucc, .status:
            break
        }
        let c = caller
        kv.add("user", c.user)
        kv.add("service", c.service)
        kv.add("tty", c.tty)
        kv.add("rhost", c.rhost)
        kv.add("ruser", c.ruser)
        kv.add("silent", c.silent ? "1" : "0")
        kv.add("stdin_tty", c.stdinTTY ? "1" : "0")
        kv.add("display", c.display ? "1" : "0")
        kv.add("locale", c.locale)
        kv.add("language", c.language)
        if let uid = c.callerUID { kv.add("caller_uid", String(uid)) }
        if let pid = c.pid { kv.add("pid", String(pid)) }
        if case .authsucc(_, let a) = self {
            if a.firstLine { kv.add("first_line", "1") }
            if let proof = a.proof { kv.add("proof", proof.rawValue) }
            if a.readerUnreachable { kv.add("reader", "unreachable") }
        }
        for argument in c.arguments { kv.add("arg", argument) }
        if case .app(_, .preflight(_, keep: true)) = self { kv.add("keep", "1") }
        return kv
    }

    /// The `Q` frame's payload. Values lose any `\n` and NUL (KeyValues): the module
    /// refuses such a value instead, and no Swift side has one to send.
    public func encode() -> [UInt8] { keyValues.encoded() }

    /// The `Q` frame.
    public var frame: Frame { Frame(.request, encode()) }

    // MARK: - decoding

    /// A `Q` frame's payload as a request, or why it is none. Keys no mode reads are
    /// ignored, and so are a mode's keys in another mode; a missing text is empty and a
    /// missing flag `0` (the module sends every key, localauthctl and forged requests may not).
    public static func decode(_ payload: [UInt8]) -> Result<Request, Problem> {
        let kv: KeyValues
        do { kv = try KeyValues.parse(payload) } catch {
            return .failure(Problem("request is not key=value text: \(error)"))
        }
        return decode(kv)
    }

    /// The same, from lines already parsed.
    public static func decode(_ kv: KeyValues) -> Result<Request, Problem> {
        for key in singleKeys where kv.count(key) > 1 {
            return .failure(Problem("request repeats `\(key)`"))
        }
        guard kv.value("version") == version else { return .failure(Problem("unsupported request version")) }
        guard let mode = kv.value("mode").flatMap(Mode.init(rawValue:)) else { return .failure(Problem("unknown mode")) }
        let caller = Caller(
            user: kv.value("user") ?? "", service: kv.value("service") ?? "", tty: kv.value("tty") ?? "",
            rhost: kv.value("rhost") ?? "", ruser: kv.value("ruser") ?? "", silent: kv.value("silent") == "1",
            stdinTTY: kv.value("stdin_tty") == "1", display: kv.value("display") == "1",
            locale: kv.value("locale") ?? "", language: kv.value("language") ?? "",
            callerUID: kv.value("caller_uid").flatMap { UInt32($0) }, pid: kv.value("pid").flatMap { Int32($0) },
            arguments: kv.values("arg"))
        switch mode {
        case .authenticate:
            return .success(.authenticate(caller))
        case .authsucc:
            return .success(.authsucc(caller, AuthSucc(firstLine: kv.value("first_line") == "1",
                                                       proof: kv.value("proof").flatMap(Proof.init(rawValue:)),
                                                       readerUnreachable: kv.value("reader") == "unreachable")))
        case .status:
            return .success(.status(caller))
        case .app:
            guard let policy = kv.value("policy").flatMap(Policy.init(rawValue:)) else {
                return .failure(Problem("mode=app needs op=preflight|evaluate and policy=biometrics|owner"))
            }
            switch kv.value("op") {
            case "preflight": return .success(.app(caller, .preflight(policy, keep: kv.value("keep") == "1")))
            case "evaluate": return .success(.app(caller, .evaluate(policy)))
            default: return .failure(Problem("mode=app needs op=preflight|evaluate and policy=biometrics|owner"))
            }
        case .right:
            guard let right = Right.decode(op: kv.value("op"), kv) else {
                return .failure(Problem("mode=right needs a known op (\(Right.operations.joined(separator: "|")))"))
            }
            return .success(.right(caller, right))
        case .ssh:
            return SSH.decode(op: kv.value("op"), kv).map { .ssh(caller, $0) }
        }
    }
}
