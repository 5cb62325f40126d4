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

    func action(for result: String) -> PamAction {
        actions[result] ?? actions["default"] ?? .ignore
    }

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

/// One `auth` line of a service, after includes were followed.
struct PamRule {
    let file: String
    let line: Int
    let control: PamControl
    let module: String
    let arguments: [String]
    let text: String
    /// The line of the service file itself that brought this one in (an `@include` or an
    /// `include`/`substack` line), or this line when it is in the service file.
    let top: (file: String, line: Int, text: String)

    var moduleName: String { String(module.split(separator: "/").last ?? Substring(module)) }
    var location: String { "\(file):\(line)" }
    var topLocation: String { "\(top.file):\(top.line)" }
    var isLocalauth: Bool { moduleName == "pam_localauth.so" }
    var isAuthsucc: Bool { isLocalauth && arguments.contains("authsucc") }
    var isFirstLine: Bool { isLocalauth && !arguments.contains("authsucc") }
}

/// Reads service files like libpam: `#` comments, `\` continuations, `@include NAME`, and
/// `auth include|substack NAME`, names relative to the service directory.
struct PamStackReader {
    let directory: String
    /// Includes that could not be read: (where, what).
    private(set) var missing: [(String, String)] = []

    init(directory: String) { self.directory = directory }

    mutating func authStack(_ name: String) -> [PamRule]? {
        stack(path(name), top: nil, depth: 0)
    }

    private func path(_ name: String) -> String {
        name.hasPrefix("/") ? name : directory + "/" + name
    }

    private mutating func stack(_ path: String, top: (String, Int, String)?, depth: Int) -> [PamRule]? {
        guard depth < 16, let lines = PamStackReader.logicalLines(path) else { return nil }
        var rules: [PamRule] = []
        for (number, raw) in lines {
            let tokens = PamStackReader.tokens(raw)
            guard let first = tokens.first else { continue }
            let text = tokens.joined(separator: " ")  // tabs and runs of spaces as one space
            let here = top ?? (path, number, text)
            if first == "@include" {
                guard tokens.count >= 2 else { continue }
                if let included = stack(self.path(tokens[1]), top: here, depth: depth + 1) {
                    rules += included
                } else {
                    missing.append(("\(path):\(number)", tokens[1]))
                }
                continue
            }
            let type = first.hasPrefix("-") ? String(first.dropFirst()) : first
            guard type == "auth", tokens.count >= 3 else { continue }
            if tokens[1] == "include" || tokens[1] == "substack" {
                if let included = stack(self.path(tokens[2]), top: here, depth: depth + 1) {
                    rules += included
                } else {
                    missing.append(("\(path):\(number)", tokens[2]))
                }
                continue
            }
            guard let control = PamControl.parse(tokens[1]) else { continue }
            rules.append(PamRule(file: path, line: number, control: control, module: tokens[2],
                                 arguments: Array(tokens.dropFirst(3)), text: text, top: here))
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

/// Follows an auth stack from one line, as libpam would, with a guess at what each later
/// module returns: pam_deny fails, pam_permit succeeds, pam_faillock `authfail` fails,
/// an `authsucc` line of ours is ignored, anything else succeeds. A substack is treated as
/// inline (its `done`/`die` end the walk): an approximation on the safe side for our checks.
enum PamWalk {
    struct Path {
        /// Indices of the lines that run after the start line, in order.
        var reached: [Int] = []
        /// The line whose action ended the stack, or nil when it ran off the end.
        var endedAt: Int?
    }

    static func from(_ start: Int, result: String, in rules: [PamRule]) -> Path {
        var path = Path()
        var i = start
        var r = result
        for _ in 0..<(rules.count + 1) {
            let next: Int
            switch rules[i].control.action(for: r) {
            case .die, .done:
                path.endedAt = i
                return path
            case .jump(let n): next = i + n + 1
            case .ignore, .bad, .ok, .reset: next = i + 1
            }
            guard next < rules.count else { return path }
            i = next
            path.reached.append(i)
            r = guess(rules[i])
        }
        return path
    }

    static func guess(_ rule: PamRule) -> String {
        switch rule.moduleName {
        case "pam_deny.so": return "auth_err"
        case "pam_faillock.so" where rule.arguments.contains("authfail"): return "auth_err"
        case "pam_localauth.so" where rule.isAuthsucc: return "ignore"
        default: return "success"
        }
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
