#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// `localauthctl ssh SUBCOMMAND`: the caller's SSH keys, which localauthd keeps on root's
/// side (the private key never leaves it) and signs with only after the finger (its
/// ssh-agent socket). Everything goes through localauthd (`mode=ssh`): its helper answers
/// for the peer's uid only, so no user reaches another's keys, and deleting a key or
/// changing its policy asks for the finger there.
enum SSHCommand {
    static let requirementFlag = Flag("--requirement", .value("REQUIREMENT"),
                                      "biometry (a finger, the default), biometry-or-password, or biometry-current-set (a finger of the fingers enrolled now)")
    static let reuseFlag = Flag("--reuse", .value("SECONDS"),
                                "seconds an approval holds for the same destination or namespace (0 to 300; default 0: every use asks)")
    static let allowForwardingFlag = Flag("--allow-forwarding", .toggle,
                                          "a forwarded request (ssh -A) may be asked for (default: refused without a scan)")
    static let refuseForwardingFlag = Flag("--refuse-forwarding", .toggle, "policy: refuse forwarded requests again")
    static let commentFlag = Flag("--comment", .value("TEXT"), "the comment after the public key (printable ASCII)")
    static let principalFlag = Flag("--principal", .value("EMAIL"), "allowed-signers: the signer's email (git's user.email)")
    static let writeFlag = Flag("--write", .toggle, "setup: append the line to ~/.ssh/config (never over another agent)")

    static let subcommands = ["create", "list", "public-key", "allowed-signers", "delete", "policy", "log", "setup"]

    static let spec = CommandSpec(
        name: "ssh", synopsis: "ssh SUBCOMMAND [NAME] [OPTIONS]",
        summary: "your SSH keys behind the finger (create, list, public-key, delete, ...)",
        help: """
        Keys that localauthd keeps on root's side and signs with only after your finger (its
        ssh-agent socket, /run/localauth/ssh-agent).

        create NAME: a new ecdsa-sha2-nistp256 key; prints its public key. Its options
        (--requirement, --reuse, --allow-forwarding and --comment) set its policy.

        list: your keys: name, type, SHA256 fingerprint, policy (--json for scripts).

        public-key NAME: the public key in OpenSSH's one-line form (for authorized_keys).

        allowed-signers NAME --principal EMAIL: a line for git's gpg.ssh.allowedSignersFile.

        delete NAME: removes the key, after your finger (the password only where the key
        allows it).

        policy NAME: changes --requirement, --reuse or forwarding, after your finger.

        log: the last uses of your keys and the refusals (--json for scripts).

        setup: prints the line that points ssh at localauthd's agent; --write appends it to
        ~/.ssh/config, only when nothing there or in SSH_AUTH_SOCK names another agent.

        A NAME is 1 to 64 of A-Z a-z 0-9 . _ - (not starting with . or -).
        """,
        flags: [requirementFlag, reuseFlag, allowForwardingFlag, refuseForwardingFlag, commentFlag, principalFlag,
                writeFlag, .json],
        run: run)

    /// The flags each subcommand takes (any other is wrong usage, not ignored).
    static let accepted: [String: [Flag]] = [
        "create": [requirementFlag, reuseFlag, allowForwardingFlag, commentFlag],
        "list": [.json],
        "public-key": [],
        "allowed-signers": [principalFlag],
        "delete": [],
        "policy": [requirementFlag, reuseFlag, allowForwardingFlag, refuseForwardingFlag],
        "log": [.json],
        "setup": [writeFlag],
    ]

    static func run(_ inv: Invocation) -> Int32 {
        guard let sub = inv.positional.first else {
            return usageError(spec, tr(cliLanguage, "a subcommand is needed: %s", subcommands.joined(separator: ", ")))
        }
        guard let flags = accepted[sub] else {
            return usageError(spec, tr(cliLanguage, "unknown subcommand '%s'", printable(sub)))
        }
        if let wrong = inv.given.first(where: { !flags.contains($0) }) {
            return usageError(spec, tr(cliLanguage, "%s does not apply to ssh %s", wrong.name, sub))
        }
        let takesName = !["list", "log", "setup"].contains(sub)
        let words = Array(inv.positional.dropFirst())
        if words.count > (takesName ? 1 : 0) {
            return usageError(spec, tr(cliLanguage, "unexpected argument '%s'", printable(words[takesName ? 1 : 0])))
        }
        var name = ""
        if takesName {
            guard let given = words.first else { return usageError(spec, tr(cliLanguage, "ssh %s needs a NAME", sub)) }
            guard SSHKeyRecord.nameProblem(given) == nil else {
                return usageError(spec, tr(cliLanguage, "'%s' is no key name: 1 to 64 of A-Z a-z 0-9 . _ -, not starting with . or -",
                                           printable(given)))
            }
            name = given
        }
        if sub == "setup" { return SSHSetup.run(write: inv.has(writeFlag)) }
        guard !callerIsRoot else {
            return fail(spec, .permission(tr(cliLanguage, "SSH keys are kept for ordinary users: run this as yourself, not as root")))
        }
        guard let account = Account.caller() else {
            return fail(spec, .noUser(tr(cliLanguage, "the calling uid %s has no account name", getuid())))
        }
        let context = SSHContext(inv: inv, account: account, name: name)
        switch sub {
        case "create": return context.create()
        case "list": return context.list()
        case "public-key": return context.publicKey()
        case "allowed-signers": return context.allowedSigners()
        case "delete": return context.delete()
        case "policy": return context.policy()
        default: return context.log()
        }
    }
}

/// One `localauthctl ssh` run: the subcommands that ask localauthd.
struct SSHContext {
    let inv: Invocation
    let account: Account
    let name: String
    var spec: CommandSpec { SSHCommand.spec }

    /// A subcommand that stopped, its message printed: the exit status.
    struct Stop: Error {
        let status: Int32
    }

    func create() -> Int32 {
        let requirement: String
        let reuse: Int
        switch (requirementOption(), reuseOption()) {
        case (.failure(let e), _), (_, .failure(let e)): return fail(spec, e)
        case (.success(let r), .success(let s)): requirement = r ?? SSHKeyRequirement.biometry.rawValue; reuse = s ?? 0
        }
        let comment = inv.value(SSHCommand.commentFlag) ?? ""
        if SSHKeyRecord.commentProblem(comment) != nil {
            return usageError(spec, tr(cliLanguage, "--comment is at most 128 printable ASCII characters"))
        }
        let op = Request.SSH.create(name: name, requirement: requirement, reuseSeconds: reuse,
                                    forwarding: inv.has(SSHCommand.allowForwardingFlag), comment: comment)
        switch ask(op) {
        case .failure(let stop): return stop.status
        case .success(let answer):
            guard let key = answer.extra.values("key").first.flatMap(SSHKeyListing.init(line:)) else {
                return fail(spec, .unavailable(tr(cliLanguage, "localauthd's answer holds no key")))
            }
            warn(tr(cliLanguage, "created %s (%s)", key.name, key.fingerprint))
            say(key.openSSHLine)
            return Exit.ok
        }
    }

    func list() -> Int32 {
        let keys: [SSHKeyListing]
        let damaged: [String]
        switch allKeys() {
        case .failure(let stop): return stop.status
        case .success(let got): (keys, damaged) = got
        }
        if inv.has(.json) {
            say(JSON.object([("keys", .array(keys.map(json))), ("damaged", .array(damaged.map { .string($0) }))]).encoded())
            return Exit.ok
        }
        if keys.isEmpty && damaged.isEmpty { warn(tr(cliLanguage, "no SSH keys yet (localauthctl ssh create NAME)")) }
        let width = max(4, keys.map(\.name.count).max() ?? 0)
        for key in keys {
            say("\(padCells(key.name, width))  \(SSHKeyText.keyType)  \(key.fingerprint)  \(policyText(key))")
        }
        for name in damaged {
            warn(tr(cliLanguage, "the record of key %s is damaged: localauthctl ssh delete %s removes it", shownLine(name), shownLine(name)))
        }
        return Exit.ok
    }

    func publicKey() -> Int32 {
        switch key() {
        case .failure(let stop): return stop.status
        case .success(let key):
            say(key.openSSHLine)
            return Exit.ok
        }
    }

    func allowedSigners() -> Int32 {
        guard let principal = inv.value(SSHCommand.principalFlag) else {
            return usageError(spec, tr(cliLanguage, "allowed-signers needs --principal EMAIL (git compares it with the committer's email)"))
        }
        guard SSHKeyText.principalProblem(principal) == nil else {
            return usageError(spec, tr(cliLanguage, "--principal is one email: printable ASCII without spaces, quotes or commas"))
        }
        switch key() {
        case .failure(let stop): return stop.status
        case .success(let key):
            say(SSHKeyText.allowedSignersLine(principal: principal, point: key.publicKey))
            return Exit.ok
        }
    }

    func delete() -> Int32 {
        warn(tr(cliLanguage, "to delete the SSH key %s, touch the fingerprint reader", name))
        switch ask(.delete(name: name)) {
        case .failure(let stop): return stop.status
        case .success:
            say(tr(cliLanguage, "deleted %s", name))
            return Exit.ok
        }
    }

    func policy() -> Int32 {
        let requirement: String?
        let reuse: Int?
        switch (requirementOption(), reuseOption()) {
        case (.failure(let e), _), (_, .failure(let e)): return fail(spec, e)
        case (.success(let r), .success(let s)): (requirement, reuse) = (r, s)
        }
        let allow = inv.has(SSHCommand.allowForwardingFlag)
        let refuse = inv.has(SSHCommand.refuseForwardingFlag)
        if allow && refuse {
            return usageError(spec, tr(cliLanguage, "--allow-forwarding and --refuse-forwarding contradict each other"))
        }
        let forwarding: Bool? = allow ? true : refuse ? false : nil
        guard requirement != nil || reuse != nil || forwarding != nil else {
            return usageError(spec, tr(cliLanguage, "policy needs --requirement, --reuse, --allow-forwarding or --refuse-forwarding"))
        }
        warn(tr(cliLanguage, "to change the policy of the SSH key %s, touch the fingerprint reader", name))
        switch ask(.policy(name: name, requirement: requirement, reuseSeconds: reuse, forwarding: forwarding)) {
        case .failure(let stop): return stop.status
        case .success(let answer):
            guard let key = answer.extra.values("key").first.flatMap(SSHKeyListing.init(line:)) else {
                return fail(spec, .unavailable(tr(cliLanguage, "localauthd's answer holds no key")))
            }
            say("\(key.name)  \(policyText(key))")
            return Exit.ok
        }
    }

    func log() -> Int32 {
        var uses: [SSHKeyUse] = []
        while true {
            switch ask(.uses(skip: uses.count)) {
            case .failure(let stop): return stop.status
            case .success(let answer):
                let page = answer.extra.values("use").compactMap { SSHKeyUse(line: Substring($0)) }
                uses += page
                guard answer.value("more") == "1", !page.isEmpty, uses.count < SSHKeyStore.maxUses else { return show(uses) }
            }
        }
    }

    private func show(_ uses: [SSHKeyUse]) -> Int32 {
        if inv.has(.json) {
            say(JSON.object([("uses", .array(uses.map { use in
                .object([("time", .int(use.at)), ("key", .string(use.key)), ("outcome", .string(use.outcome)),
                         ("what", .string(use.what)), ("program", .string(use.chain))])
            }))]).encoded())
            return Exit.ok
        }
        if uses.isEmpty { warn(tr(cliLanguage, "no uses of your SSH keys recorded yet")) }
        for use in uses {
            say("\(SSHContext.timeText(use.at))  \(use.key)  \(use.outcome)  \(shownLine(use.what))  \(shownLine(use.chain))")
        }
        return Exit.ok
    }

    // MARK: - Asking localauthd

    /// The answer when it is a success; otherwise its cause printed and the exit status.
    private func ask(_ op: Request.SSH) -> Result<Answer, Stop> {
        switch SSHService.converse(SSHService.request(op, account: account)) {
        case .failure(let e): return .failure(Stop(status: fail(spec, e)))
        case .success(let answer) where answer.isSuccess: return .success(answer)
        case .success(let answer):
            warn("ssh: \(shownLine(answer.cause ?? answer.name))")
            return .failure(Stop(status: SSHService.status(answer)))
        }
    }

    /// Every key, page by page (an answer is one frame).
    private func allKeys() -> Result<([SSHKeyListing], [String]), Stop> {
        var keys: [SSHKeyListing] = []
        var damaged: [String] = []
        var after: String?
        for _ in 0...SSHKeyStore.maxKeys {
            switch ask(.list(after: after)) {
            case .failure(let stop): return .failure(stop)
            case .success(let answer):
                let page = answer.extra.values("key").compactMap(SSHKeyListing.init(line:))
                keys += page
                damaged += answer.extra.values("damaged")
                guard answer.value("more") == "1", let last = page.last else { return .success((keys, damaged)) }
                after = last.name
            }
        }
        return .success((keys, damaged))
    }

    private func key() -> Result<SSHKeyListing, Stop> {
        switch allKeys() {
        case .failure(let stop): return .failure(stop)
        case .success(let (keys, _)):
            guard let key = keys.first(where: { $0.name == name }) else {
                warn("ssh: " + tr(cliLanguage, "no SSH key is named %s", name))
                return .failure(Stop(status: Exit.failed))
            }
            return .success(key)
        }
    }

    // MARK: - Options

    private func requirementOption() -> Result<String?, CLIError> {
        guard let text = inv.value(SSHCommand.requirementFlag) else { return .success(nil) }
        guard SSHKeyRequirement(rawValue: text) != nil else {
            return .failure(.usage(tr(cliLanguage, "--requirement must be biometry, biometry-or-password or biometry-current-set, not '%s'",
                                      printable(text))))
        }
        return .success(text)
    }

    private func reuseOption() -> Result<Int?, CLIError> {
        guard let text = inv.value(SSHCommand.reuseFlag) else { return .success(nil) }
        guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), text.utf8.count <= 3, let n = Int(text),
              SSHKeyRecord.reuseProblem(n) == nil else {
            return .failure(.usage(tr(cliLanguage, "--reuse must be 0 to 300 seconds, not '%s'", printable(text))))
        }
        return .success(n)
    }

    // MARK: - Text

    private func policyText(_ key: SSHKeyListing) -> String {
        var parts: [String]
        switch key.requirement {
        case .biometry: parts = [tr(cliLanguage, "finger")]
        case .biometryOrPassword: parts = [tr(cliLanguage, "finger or password")]
        case .biometryCurrentSet: parts = [tr(cliLanguage, "finger of the fingers enrolled when created")]
        }
        parts.append(key.reuseSeconds > 0 ? tr(cliLanguage, "reuse %s s", key.reuseSeconds) : tr(cliLanguage, "every use asks"))
        parts.append(key.forwardingAllowed ? tr(cliLanguage, "forwarding allowed") : tr(cliLanguage, "forwarding refused"))
        return parts.joined(separator: ", ")
    }

    private func json(_ key: SSHKeyListing) -> JSON {
        .object([("name", .string(key.name)), ("type", .string(SSHKeyText.keyType)),
                 ("fingerprint", .string(key.fingerprint)), ("requirement", .string(key.requirement.rawValue)),
                 ("reuse_seconds", .int(Int64(key.reuseSeconds))), ("forwarding", .bool(key.forwardingAllowed)),
                 ("comment", .string(key.comment)), ("created", .int(key.created)),
                 ("public_key", .string(key.openSSHLine))])
    }

    /// Local time, `YYYY-MM-DD HH:MM:SS`.
    static func timeText(_ at: Timestamp) -> String {
        var t = time_t(at)
        var parts = tm()
        guard localtime_r(&t, &parts) != nil else { return String(at) }
        var buffer = [CChar](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S", &parts)
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
