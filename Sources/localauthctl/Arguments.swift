#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// One command-line flag: `--name VALUE`, `--name=VALUE`, or a bare `--name` (a toggle).
struct Flag: Equatable {
    enum Kind: Equatable {
        /// Sets a key of the option table (Options.swift), with the same bounds as the file;
        /// the second text is its placeholder in help.
        case option(String, String)
        /// A value the command reads itself; the text is its placeholder in help.
        case value(String)
        /// Present or not.
        case toggle
    }

    let name: String
    let kind: Kind
    /// Accepted from root only: it changes where the tool reads or writes, what it talks
    /// to, or whose state it changes.
    let privileged: Bool
    let help: String

    init(_ name: String, _ kind: Kind, privileged: Bool = false, _ help: String) {
        self.name = name
        self.kind = kind
        self.privileged = privileged
        self.help = help
    }

    var placeholder: String {
        switch kind {
        case .option(_, let p): return p
        case .value(let p): return p
        case .toggle: return ""
        }
    }

    static let dbusAddress = Flag("--dbus-address", .option("dbus_address", "ADDRESS"), privileged: true,
                                  "the bus fprintd is on (default: the system bus)")
    static let stateDir = Flag("--state-dir", .option("state_dir", "DIR"), privileged: true,
                               "the state directory (default: state_dir from the config)")
    static let fprintDir = Flag("--fprint-dir", .option("fprint_dir", "DIR"), privileged: true,
                                "fprintd's print storage (default: fprint_dir from the config)")
    static let config = Flag("--config", .value("PATH"), privileged: true,
                             "read this file instead of /etc/security/localauth.conf")
    static let busTimeout = Flag("--bus-timeout", .option("bus_timeout", "SECONDS"),
                                 "seconds any one call to fprintd may take")
    static let scanTimeout = Flag("--scan-timeout", .option("scan_timeout", "SECONDS"),
                                  "seconds to wait for a finger on each try")
    static let user = Flag("--user", .value("USER"),
                           "the same as USER (another user than you needs root)")
    static let json = Flag("--json", .toggle, "one JSON object, for scripts")

    /// Every command takes these.
    static let common: [Flag] = [user, config, stateDir, dbusAddress, fprintDir, busTimeout]
}

/// A command line, split into positional words, flag values and toggles.
struct Invocation {
    var positional: [String] = []
    var values: [String: String] = [:]
    var toggles: Set<String> = []
    /// `key=value` for the option table, in command-line order.
    var optionArguments: [String] = []
    /// Flags given, in order (for the privilege check).
    var given: [Flag] = []
    var help = false

    func value(_ flag: Flag) -> String? { values[flag.name] }
    func has(_ flag: Flag) -> Bool { toggles.contains(flag.name) }

    /// Parses `args` against `flags`; a usage error is one line.
    static func parse(_ args: [String], flags: [Flag]) -> Result<Invocation, CLIError> {
        var out = Invocation()
        var rest = args[...]
        var onlyPositional = false
        while let arg = rest.popFirst() {
            if onlyPositional || arg == "-" || !arg.hasPrefix("-") {
                out.positional.append(arg)
                continue
            }
            if arg == "--" { onlyPositional = true; continue }
            if arg == "--help" || arg == "-h" { out.help = true; continue }
            let (name, inline) = split(arg)
            guard let flag = flags.first(where: { $0.name == name }) else {
                return .failure(.usage(tr(cliLanguage, "unknown option %s", printable(name))))
            }
            out.given.append(flag)
            if flag.kind == .toggle {
                guard inline == nil else { return .failure(.usage(tr(cliLanguage, "%s takes no value", name))) }
                out.toggles.insert(name)
                continue
            }
            guard let value = inline ?? rest.popFirst() else {
                return .failure(.usage(tr(cliLanguage, "%s needs a value", name)))
            }
            switch flag.kind {
            case .option(let key, _): out.optionArguments.append("\(key)=\(value)")
            case .value: out.values[name] = value
            case .toggle: break
            }
        }
        return .success(out)
    }

    /// The user named on the command line, as `USER` or `--user USER` (the same thing);
    /// nil when none. More than one positional word, or two different names, is wrong usage.
    func userArgument() -> Result<String?, CLIError> {
        guard positional.count <= 1 else {
            return .failure(.usage(tr(cliLanguage, "unexpected argument '%s' (one USER at most)", printable(positional[1]))))
        }
        let flag = value(.user)
        if let flag, let word = positional.first, flag != word {
            return .failure(.usage(tr(cliLanguage, "USER and --user name different users")))
        }
        return .success(flag ?? positional.first)
    }

    /// The first privileged flag given, if any.
    var privilegedFlag: Flag? { given.first { $0.privileged } }

    /// Defaults, then the configuration file (the module's parser, `Options.load`), then
    /// the option flags. Problems in the file are logged to `log`.
    func options(log: LogSink) -> Result<Options, CLIError> {
        let path = value(.config) ?? ConfigFile.installedPath
        if value(.config) != nil, case .failure(.missing) = ConfigFile.read(path) {
            return .failure(.usage(tr(cliLanguage, "--config: %s not found", printable(path))))
        }
        var o = Options.load(configPath: path, log: log)
        // One at a time, so a refused value is named by its flag (and nothing is "kept":
        // the command stops).
        for argument in optionArguments {
            let key = String(argument.prefix { $0 != "=" })
            let value = String(argument.dropFirst(key.count + 1))
            guard ConfigParser.apply(arguments: [argument], to: &o).isEmpty else {
                let name = given.first { if case .option(key, _) = $0.kind { return true } else { return false } }?.name
                    ?? key
                return .failure(.usage(tr(cliLanguage, "%s must be %s, not '%s'", name, Options.accepts(key, in: cliLanguage) ?? "valid",
                                          printable(value))))
            }
        }
        return .success(o)
    }

    private static func split(_ arg: String) -> (String, String?) {
        guard arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") else { return (arg, nil) }
        return (String(arg[..<eq]), String(arg[arg.index(after: eq)...]))
    }
}

/// Why a command stops before doing its work; each is one line and an exit status.
enum CLIError: Error, Equatable {
    case usage(String)
    case permission(String)
    case noUser(String)
    case unavailable(String)
    case failed(String)

    var status: Int32 {
        switch self {
        case .usage: return Exit.usage
        case .permission: return Exit.permission
        case .noUser: return Exit.noUser
        case .unavailable: return Exit.unavailable
        case .failed: return Exit.failed
        }
    }

    var message: String {
        switch self {
        case .usage(let m), .permission(let m), .noUser(let m), .unavailable(let m), .failed(let m):
            return m
        }
    }
}

/// Control characters shown as `?`, and cut to 80 characters: for echoing input in messages.
func printable(_ s: String) -> String {
    let cleaned = String(String.UnicodeScalarView(s.unicodeScalars.map {
        $0.value < 0x20 || $0.value == 0x7f ? "?" : $0
    }))
    return cleaned.count > 80 ? String(cleaned.prefix(77)) + "..." : cleaned
}
