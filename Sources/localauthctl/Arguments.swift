import LocalAuth

/// Parsed command-line arguments: `--name VALUE` or `--name=VALUE` options, and the rest
/// as positional words. Option values go through the option table (Options.swift), so the
/// same bounds apply as in the configuration file.
struct Arguments {
    var positional: [String] = []
    var options = Options()
    var help = false

    /// Flags a command accepts, and the option key each sets.
    typealias Flags = [String: String]

    static let busFlags: Flags = ["--dbus-address": "dbus_address", "--bus-timeout": "bus_timeout"]

    /// Parses `args`; on a usage error returns the one line to print.
    static func parse(_ args: [String], flags: Flags) -> Result<Arguments, UsageError> {
        var out = Arguments()
        var rest = args[...]
        while let arg = rest.popFirst() {
            if arg == "--help" || arg == "-h" { out.help = true; continue }
            guard arg.hasPrefix("-") else { out.positional.append(arg); continue }
            let (name, inline) = split(arg)
            guard let key = flags[name] else { return .failure(UsageError("unknown option \(name)")) }
            guard let value = inline ?? rest.popFirst() else {
                return .failure(UsageError("\(name) needs a value"))
            }
            let issues = ConfigParser.apply(arguments: ["\(key)=\(value)"], to: &out.options)
            if let issue = issues.first { return .failure(UsageError("\(name): \(issue.message)")) }
        }
        return .success(out)
    }

    private static func split(_ arg: String) -> (String, String?) {
        guard let eq = arg.firstIndex(of: "=") else { return (arg, nil) }
        return (String(arg[..<eq]), String(arg[arg.index(after: eq)...]))
    }
}

struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
