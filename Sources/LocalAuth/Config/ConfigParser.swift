/// A problem found while reading options: logged by the caller; the option keeps the value
/// it had before (an earlier line's or file's, or the default).
public struct ConfigIssue: Equatable, CustomStringConvertible, Sendable {
    /// The file, or `module arguments`.
    public var source: String
    /// 1-based line (file) or argument position; 0 when not applicable.
    public var line: Int
    public var message: String

    public var description: String {
        line > 0 ? "\(source):\(line): \(message)" : "\(source): \(message)"
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
            if !line.contains("="), let spec = Options.spec(for: line), spec.accepts == "yes or no" {
                if let issue = set(line, "yes", in: &options, allowed: allowed) {
                    issues.append(ConfigIssue(source: source, line: lineNumber, message: issue))
                } else {
                    recorded(line, lineNumber)
                }
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                issues.append(ConfigIssue(source: source, line: lineNumber,
                                          message: "expected `key = value`, found `\(printable(line))`"))
                continue
            }
            let key = trimmed(String(line[..<eq]))
            let value = trimmed(String(line[line.index(after: eq)...]))
            if Options.moduleOnlyKeys.contains(key) {
                issues.append(ConfigIssue(source: source, line: lineNumber,
                                          message: "`\(key)` is a module argument only; ignored here"))
                continue
            }
            if let issue = set(key, value, in: &options, allowed: allowed) {
                issues.append(ConfigIssue(source: source, line: lineNumber, message: issue))
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
            } else if let spec = Options.spec(for: arg), spec.accepts == "yes or no" {
                key = arg
                value = "yes"
            } else {
                key = arg
                value = ""
            }
            if let issue = set(key, value, in: &options, allowed: allowed) {
                issues.append(ConfigIssue(source: "module arguments", line: i + 1, message: issue))
            } else {
                recorded(key, i + 1)
            }
        }
        return issues
    }

    /// Words the module reads itself and that are not options.
    static let moduleWords: Set<String> = ["authsucc"]

    /// Sets one option; returns a message when it was not set.
    static func set(_ key: String, _ value: String, in options: inout Options,
                    allowed: (String) -> Bool) -> String? {
        guard let spec = Options.spec(for: key) else {
            return "unknown option `\(printable(key))`"
        }
        guard allowed(key) else {
            return "option `\(key)` is ignored here (only root's configuration may set it)"
        }
        guard spec.apply(&options, value) else {
            return "`\(key)` must be \(spec.accepts), not `\(printable(value))`; it stays `\(printable(spec.show(options)))`"
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
