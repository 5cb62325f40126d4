/// A problem found while reading options: logged by the caller; the option keeps the value
/// it had before (an earlier line's or file's, or the default).
public struct ConfigIssue: Equatable, CustomStringConvertible, Sendable {
    /// The file, or `module arguments`.
    public var source: String
    /// 1-based line (file) or argument position; 0 when not applicable.
    public var line: Int
    public var kind: Kind

    /// What is wrong with the line; keys and values as written (never translated).
    public enum Kind: Equatable, Sendable {
        case expectedKeyValue(found: String)
        case moduleOnly(key: String)
        case unknownOption(key: String)
        case notAllowedHere(key: String)
        /// `stays` is the value the option keeps.
        case badValue(key: String, value: String, stays: String)
    }

    /// The message in English, as logs have it.
    public var message: String { text(.english) }

    public var description: String {
        line > 0 ? "\(source):\(line): \(message)" : "\(source): \(message)"
    }

    /// The message in `l` (`localauthctl doctor` says it in the user's language).
    public func text(_ l: Language) -> String {
        switch kind {
        case .expectedKeyValue(let found): return tr(l, "expected `key = value`, found `%s`", found)
        case .moduleOnly(let key): return tr(l, "`%s` is a module argument only; ignored here", key)
        case .unknownOption(let key): return tr(l, "unknown option `%s`", key)
        case .notAllowedHere(let key):
            return tr(l, "option `%s` is ignored here (only root's configuration may set it)", key)
        case .badValue(let key, let value, let stays):
            return tr(l, "`%s` must be %s, not `%s`; it stays `%s`", key, Options.accepts(key, in: l) ?? "?", value, stays)
        }
    }

    /// `file:line: message` in `l`.
    public func located(_ l: Language) -> String {
        line > 0 ? "\(source):\(line): \(text(l))" : "\(source): \(text(l))"
    }
}

/// Reads `/etc/security/localauth.conf` (`key = value`, `#` comments) and module arguments
/// (`key=value` or a bare `debug`) through the one option table in Options.swift.
public enum ConfigParser {
    /// The largest config file read; a larger one is refused whole.
    public static let maxFileSize = 64 * 1024

    /// Applies the text of a config file. Later lines override earlier ones. As in
    /// faillock.conf, `#` after whitespace starts a comment after a value, and a yes/no
    /// option alone on a line (`debug`) means yes. `set` hears each key that was set and
    /// its line.
    public static func apply(fileText: String, source: String, to options: inout Options,
                             allowing allowed: (String) -> Bool = { _ in true },
                             set recorded: (String, Int) -> Void = { _, _ in }) -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        var lineNumber = 0
        // Split at every "\n" scalar: as Characters, a CRLF file would be one line.
        for scalars in fileText.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let rawLine = String(String.UnicodeScalarView(scalars))
            let line = withoutComment(trimmed(String(rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine[...])))
            if line.isEmpty { continue }
            if !line.contains("="), let spec = Options.spec(for: line), spec.isYesNo {
                if let issue = set(line, "yes", in: &options, allowed: allowed) {
                    issues.append(ConfigIssue(source: source, line: lineNumber, kind: issue))
                } else {
                    recorded(line, lineNumber)
                }
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                issues.append(ConfigIssue(source: source, line: lineNumber,
                                          kind: .expectedKeyValue(found: printable(line))))
                continue
            }
            let key = trimmed(String(line[..<eq]))
            let value = trimmed(String(line[line.index(after: eq)...]))
            if Options.moduleOnlyKeys.contains(key) {
                issues.append(ConfigIssue(source: source, line: lineNumber, kind: .moduleOnly(key: key)))
                continue
            }
            if let issue = set(key, value, in: &options, allowed: allowed) {
                issues.append(ConfigIssue(source: source, line: lineNumber, kind: issue))
            } else {
                recorded(key, lineNumber)
            }
        }
        return issues
    }

    /// The line before a `#` that starts it or follows a space or tab (a `#` inside a value,
    /// `reason = Touch #1`... is a comment too when a space comes before it).
    static func withoutComment(_ line: String) -> String {
        var previous: Character = " "
        for i in line.indices {
            if line[i] == "#" && (previous == " " || previous == "\t") { return trimmed(String(line[..<i])) }
            previous = line[i]
        }
        return line
    }

    /// Applies module arguments. `authsucc` is the module's own mode word and is skipped here.
    public static func apply(arguments: [String], to options: inout Options,
                             allowing allowed: (String) -> Bool = { _ in true },
                             set recorded: (String, Int) -> Void = { _, _ in }) -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        for (i, arg) in arguments.enumerated() {
            if moduleWords.contains(arg) { continue }
            let key: String, value: String
            if let eq = arg.firstIndex(of: "=") {
                key = String(arg[..<eq])
                value = String(arg[arg.index(after: eq)...])
            } else if let spec = Options.spec(for: arg), spec.isYesNo {
                key = arg
                value = "yes"
            } else {
                key = arg
                value = ""
            }
            if let issue = set(key, value, in: &options, allowed: allowed) {
                issues.append(ConfigIssue(source: "module arguments", line: i + 1, kind: issue))
            } else {
                recorded(key, i + 1)
            }
        }
        return issues
    }

    /// Words the module reads itself and that are not options.
    static let moduleWords: Set<String> = ["authsucc"]

    /// Sets one option; returns what is wrong when it was not set.
    static func set(_ key: String, _ value: String, in options: inout Options,
                    allowed: (String) -> Bool) -> ConfigIssue.Kind? {
        guard let spec = Options.spec(for: key) else { return .unknownOption(key: printable(key)) }
        guard allowed(key) else { return .notAllowedHere(key: key) }
        guard spec.apply(&options, value) else {
            return .badValue(key: key, value: printable(value), stays: printable(spec.show(options)))
        }
        return nil
    }

    /// Makes a value safe to put in a log line: control characters become `?`, and it is cut.
    static func printable(_ s: String) -> String {
        let cleaned = String(String.UnicodeScalarView(s.unicodeScalars.map {
            $0.value < 0x20 || $0.value == 0x7f ? "?" : $0
        }))
        return cleaned.utf8.count > 80 ? String(cleaned.prefix(77)) + "..." : cleaned
    }
}
