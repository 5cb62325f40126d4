#if canImport(Glibc)
import Glibc
#endif

/// What a control field says to do with one return value (pam.conf(5)).
enum PamAction: Equatable {
    case ignore, bad, die, ok, done, reset
    case jump(Int)

    init?(_ text: String) {
        switch text {
        case "ignore": self = .ignore
        case "bad": self = .bad
        case "die": self = .die
        case "ok": self = .ok
        case "done": self = .done
        case "reset": self = .reset
        default:
            guard let n = Int(text), n > 0 else { return nil }
            self = .jump(n)
        }
    }
}

/// A control field: the keywords as their bracketed equivalents (pam.conf(5)), or
/// `[value=action ...]` as written.
struct PamControl: Equatable {
    let actions: [String: PamAction]
    let text: String

    /// What libpam does with `result`: the action written for it, else `default`'s, else
    /// `bad`. A bracketed control without `default` counts every value it does not name as a
    /// failure (libpam fills the unnamed ones with `bad`), so `[success=done]` refuses the
    /// login when its module is unavailable; the keywords always have a default.
    func action(for result: String) -> PamAction {
        actions[result] ?? actions["default"] ?? .bad
    }

    static let requisite = PamControl.parse("requisite")!

    static func parse(_ text: String) -> PamControl? {
        switch text {
        case "required":
            return PamControl(actions: ["success": .ok, "new_authtok_reqd": .ok, "ignore": .ignore,
                                        "default": .bad], text: text)
        case "requisite":
            return PamControl(actions: ["success": .ok, "new_authtok_reqd": .ok, "ignore": .ignore,
                                        "default": .die], text: text)
        case "sufficient":
            return PamControl(actions: ["success": .done, "new_authtok_reqd": .done, "default": .ignore],
                              text: text)
        case "optional":
            return PamControl(actions: ["success": .ok, "new_authtok_reqd": .ok, "default": .ignore],
                              text: text)
        default:
            guard text.hasPrefix("["), text.hasSuffix("]") else { return nil }
            var actions: [String: PamAction] = [:]
            for pair in text.dropFirst().dropLast().split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let action = PamAction(parts[1]) else { return nil }
                actions[parts[0]] = action
            }
            return PamControl(actions: actions, text: text)
        }
    }
}

/// One line of a service's stack of one type (`auth`, `account`), after includes were
/// followed.
struct PamRule {
    let file: String
    let line: Int
    var control: PamControl
    let module: String
    let arguments: [String]
    let text: String
    /// The line of the service file itself that brought this one in (an `@include` or an
    /// `include`/`substack` line), or this line when it is in the service file.
    let top: (file: String, line: Int, text: String)
    /// How many `substack` lines deep this line is: `done` and `die` end only its substack,
    /// and a jump over a substack counts it as one line (libpam's stack levels).
    let level: Int

    var moduleName: String { String(module.split(separator: "/").last ?? Substring(module)) }
    var location: String { "\(file):\(line)" }
    var isLocalauth: Bool { moduleName == "pam_localauth.so" }
    var isAuthsucc: Bool { isLocalauth && arguments.contains("authsucc") }
    var isFirstLine: Bool { isLocalauth && !arguments.contains("authsucc") }
    var isPasswordModule: Bool { PamRule.passwordModules.contains(moduleName) }
    /// A password the `authsucc` line can check itself (the local account's, as pam_unix).
    var isLocalPassword: Bool { moduleName == "pam_unix.so" }
    /// A password module that takes the password an earlier module asked for and never asks
    /// itself.
    var neverPrompts: Bool { arguments.contains("use_first_pass") || arguments.contains("use_authtok") }

    /// Modules that check an account password: local files, SSSD, Kerberos, Samba/winbind,
    /// LDAP (nss-pam-ldapd and libpam-ldap), systemd-homed. A user of any of them may be the
    /// one at the reader, so each must be able to clear a lockout and none may be made
    /// `requisite` in front of another.
    static let passwordModules: Set<String> = [
        "pam_unix.so", "pam_sss.so", "pam_krb5.so", "pam_winbind.so", "pam_ldap.so",
        "pam_systemd_home.so",
    ]
}

/// Reads service files like libpam: `#` comments, `\` continuations, `@include NAME`, and
/// `TYPE include|substack NAME`, names relative to the service directory.
struct PamStackReader {
    let directory: String
    /// Includes that could not be read: (where, what).
    private(set) var missing: [(String, String)] = []

    init(directory: String) { self.directory = directory }

    mutating func authStack(_ name: String) -> [PamRule]? { stack(name, type: "auth") }

    mutating func stack(_ name: String, type: String) -> [PamRule]? {
        stack(path(name), type: type, top: nil, depth: 0, level: 0)
    }

    private func path(_ name: String) -> String {
        name.hasPrefix("/") ? name : directory + "/" + name
    }

    private mutating func stack(_ path: String, type wanted: String, top: (String, Int, String)?,
                                depth: Int, level: Int) -> [PamRule]? {
        guard depth < 16, let lines = PamStackReader.logicalLines(path) else { return nil }
        var rules: [PamRule] = []
        for (number, raw) in lines {
            let tokens = PamStackReader.tokens(raw)
            guard let first = tokens.first else { continue }
            let text = tokens.joined(separator: " ")  // tabs and runs of spaces as one space
            let here = top ?? (path, number, text)
            if first == "@include" {
                guard tokens.count >= 2 else { continue }
                if let included = stack(self.path(tokens[1]), type: wanted, top: here, depth: depth + 1,
                                        level: level) {
                    rules += included
                } else {
                    missing.append(("\(path):\(number)", tokens[1]))
                }
                continue
            }
            let type = first.hasPrefix("-") ? String(first.dropFirst()) : first
            guard type == wanted, tokens.count >= 3 else { continue }
            if tokens[1] == "include" || tokens[1] == "substack" {
                let inner = tokens[1] == "substack" ? level + 1 : level
                if let included = stack(self.path(tokens[2]), type: wanted, top: here, depth: depth + 1,
                                        level: inner) {
                    rules += included
                } else {
                    missing.append(("\(path):\(number)", tokens[2]))
                }
                continue
            }
            guard let control = PamControl.parse(tokens[1]) else { continue }
            rules.append(PamRule(file: path, line: number, control: control, module: tokens[2],
                                 arguments: Array(tokens.dropFirst(3)), text: text, top: here, level: level))
        }
        return rules
    }

    /// Non-empty lines without comments, continuation lines joined, with the number of
    /// their first physical line. nil when the file cannot be read.
    static func logicalLines(_ path: String) -> [(Int, String)]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        var out: [(Int, String)] = []
        var pending = ""
        var start = 0
        for (i, raw) in String(decoding: bytes, as: UTF8.self)
            .split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = String(raw)
            if let hash = line.firstIndex(of: "#") { line = String(line[..<hash]) }
            if pending.isEmpty { start = i + 1 }
            if line.hasSuffix("\\") {
                pending += String(line.dropLast()) + " "
                continue
            }
            let whole = (pending + line).trimmingWhitespace
            pending = ""
            if !whole.isEmpty { out.append((start, whole)) }
        }
        return out
    }

    /// Whitespace-separated fields; a field starting with `[` runs to its `]`.
    static func tokens(_ line: String) -> [String] {
        var out: [String] = []
        var current = ""
        var inBracket = false
        for ch in line {
            if inBracket {
                current.append(ch)
                if ch == "]" { inBracket = false }
            } else if ch == " " || ch == "\t" {
                if !current.isEmpty { out.append(current); current = "" }
            } else {
                if ch == "[" && current.isEmpty { inBracket = true }
                current.append(ch)
            }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }
}

/// Runs a stack as libpam's dispatcher does (pam.conf(5)): each line's return value picks
/// an action; `ok`/`done` on success make the stack succeed unless something failed,
/// `bad`/`die` make it fail, `done`/`die` end it (or only their substack), `jump` skips lines
/// without changing the result (a substack counts as one line), `reset` forgets both.
enum PamWalk {
    struct Run {
        /// Indices of the lines that ran, in order.
        var ran: [Int] = []
        /// The stack's result.
        var succeeded = false
        /// The line whose `done` or `die` ended the whole stack; nil when it ran off the end.
        var endedAt: Int?
    }

    static func run(_ rules: [PamRule], result: (Int) -> String) -> Run {
        var run = Run()
        var positive = false
        var failed = false
        var i = 0
        while i < rules.count {
            run.ran.append(i)
            let r = result(i)
            let level = rules[i].level
            switch rules[i].control.action(for: r) {
            case .ignore:
                i += 1
            case .ok:
                if r == "success" { positive = true } else { failed = true }
                i += 1
            case .bad:
                failed = true
                i += 1
            case .reset:
                positive = false
                failed = false
                i += 1
            case .done, .die:
                let done = rules[i].control.action(for: r) == .done
                if done && r == "success" { positive = true } else if !done { failed = true }
                guard level > 0 else {
                    run.endedAt = i
                    run.succeeded = positive && !failed
                    return run
                }
                i += 1
                while i < rules.count && rules[i].level >= level { i += 1 }
            case .jump(let n):
                i = jumpTarget(from: i, over: n, in: rules)
            }
        }
        run.succeeded = positive && !failed
        return run
    }

    /// The line after skipping `n` lines of `from`'s level (a deeper run is one line).
    static func jumpTarget(from start: Int, over n: Int, in rules: [PamRule]) -> Int {
        let level = rules[start].level
        var j = start
        var left = n
        while left > 0 && j + 1 < rules.count && rules[j + 1].level >= level {
            j += 1
            while j + 1 < rules.count && rules[j + 1].level > level { j += 1 }
            left -= 1
        }
        return j + 1
    }

    /// Modules that let a user in without the password: security keys, smart cards, an SSH
    /// agent.
    static let alternatives: Set<String> = ["pam_u2f.so", "pam_yubico.so", "pam_p11.so", "pam_pkcs11.so",
                                            "pam_ssh_agent_auth.so", "pam_rssh.so"]

    /// What a line returns when nothing else is known: pam_deny, pam_rootok (the user is
    /// not root) and pam_faillock `authfail` fail; pam_fprintd finds no finger; a key or card
    /// (alternatives) is not used unless every user must pass it; an `authsucc` line of ours
    /// answers PAM_AUTHINFO_UNAVAIL, as the module always does there (never PAM_IGNORE):
    /// `optional` ignores that, `required` counts it as a failure; anything else succeeds.
    static func guess(_ rule: PamRule) -> String {
        if alternatives.contains(rule.moduleName) {
            // In a run where the password is what lets the user in, a key or card that would
            // end the stack by itself was not used; one every user must pass (`required`,
            // a second factor) was.
            return rule.control.action(for: "success") == .ok ? "success" : "authinfo_unavail"
        }
        switch rule.moduleName {
        case "pam_deny.so", "pam_rootok.so": return "auth_err"
        case "pam_faillock.so" where rule.arguments.contains("authfail"): return "auth_err"
        case "pam_fprintd.so": return "authinfo_unavail"
        case "pam_localauth.so" where rule.isAuthsucc: return "authinfo_unavail"
        default: return "success"
        }
    }
}

/// The ways an auth stack runs that matter to localauth, and what each must do.
struct PamScenarios {
    let rules: [PamRule]

    /// Indices of the password modules.
    var passwords: [Int] { rules.indices.filter { rules[$0].isPasswordModule } }
    var authsuccs: [Int] { rules.indices.filter { rules[$0].isAuthsucc } }

    /// The finger is unavailable or fails and every password module refuses.
    func everyPasswordFails() -> PamWalk.Run {
        PamWalk.run(rules) { i in
            if rules[i].isFirstLine { return "authinfo_unavail" }
            if rules[i].isPasswordModule { return "auth_err" }
            return PamWalk.guess(rules[i])
        }
    }

    /// The finger is unavailable and the password module `p` accepts the password (every
    /// other one refuses it: the user is one of `p`'s).
    func passwordAccepted(by p: Int) -> PamWalk.Run {
        PamWalk.run(rules) { i in
            if rules[i].isFirstLine { return "authinfo_unavail" }
            if rules[i].isPasswordModule { return i == p ? "success" : "auth_err" }
            return PamWalk.guess(rules[i])
        }
    }

    /// A finger matched at the module line.
    func fingerMatched() -> PamWalk.Run {
        PamWalk.run(rules) { i in
            if rules[i].isFirstLine { return "success" }
            if rules[i].isPasswordModule { return "auth_err" }
            return PamWalk.guess(rules[i])
        }
    }

    /// Problems of the `authsucc` placement, none when the lockout is cleared correctly:
    /// never after a refused password, and after the password of every module whose users
    /// get in. (`authsucc` lines are named by index.)
    func authsuccFaults() -> (afterFailure: Int?, missedBy: [Int]) {
        let failed = everyPasswordFails()
        let afterFailure = failed.ran.first { rules[$0].isAuthsucc }
        var missed: [Int] = []
        for p in passwords {
            let run = passwordAccepted(by: p)
            // A stack that refuses this module's users anyway is not ours to judge.
            // The line must come after the password in the run: before it, there is no
            // password to check yet.
            let after = run.ran.drop { $0 != p }
            if run.succeeded && !after.contains(where: { rules[$0].isAuthsucc }) { missed.append(p) }
        }
        return (afterFailure, missed)
    }

    /// `passwordAccepted(by:)` for the password module written at `location` (a changed
    /// stack has other indices).
    func passwordAccepted(byLocation location: String) -> PamWalk.Run {
        guard let p = passwords.first(where: { rules[$0].location == location }) else { return everyPasswordFails() }
        return passwordAccepted(by: p)
    }

    /// The password modules whose users get in: a change must keep every one of them.
    func modulesThatLetIn() -> Set<Int> {
        Set(passwords.filter { passwordAccepted(by: $0).succeeded })
    }
}

extension String {
    var trimmingWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s.removeLast() }
        return String(s)
    }
}
