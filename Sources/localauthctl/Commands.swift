#if canImport(Glibc)
import Glibc
#endif

/// One subcommand: its synopsis, one line for the list, its help, the flags it takes, and
/// what runs it.
struct CommandSpec {
    let name: String
    let synopsis: String
    let summary: String
    let help: String
    let flags: [Flag]
    /// Tools for tests and diagnosis: not listed by --help.
    var hidden = false
    /// Only root may run it at all.
    var rootOnly = false
    let run: (Invocation) -> Int32

    var helpText: String {
        var text = "usage: localauthctl \(synopsis)\n\n\(help)\n"
        if !flags.isEmpty {
            text += "\noptions:\n"
            for flag in flags {
                let head = flag.placeholder.isEmpty ? flag.name : "\(flag.name) \(flag.placeholder)"
                let pad = head.count < 24 ? String(repeating: " ", count: 24 - head.count) : " "
                text += "  \(head)\(pad)\(flag.help)\(flag.privileged ? " (root only)" : "")\n"
            }
        }
        text += "  --help                  this text\n"
        return text
    }
}

enum Commands {
    static let all: [CommandSpec] = [
        StatusCommand.spec,
        SwitchCommand.enableSpec,
        SwitchCommand.disableSpec,
        ResetCommand.spec,
        VerifyCommand.spec,
        DoctorCommand.spec,
        SensorVerifyCommand.spec,
        EnrolledSetCommand.spec,
    ]

    static func run(_ args: [String]) -> Int32 {
        guard let first = args.first else {
            warn("a command is needed (see localauthctl --help)")
            return Exit.usage
        }
        if first == "--help" || first == "-h" || first == "help" {
            fputs(usageText, stdout)
            return Exit.ok
        }
        guard let command = all.first(where: { $0.name == first }) else {
            warn("unknown command '\(printable(first))' (see localauthctl --help)")
            return Exit.usage
        }
        let invocation: Invocation
        switch Invocation.parse(Array(args.dropFirst()), flags: command.flags) {
        case .success(let i): invocation = i
        case .failure(let e): return fail(command, e)
        }
        if invocation.help {
            fputs(command.helpText, stdout)
            return Exit.ok
        }
        if command.rootOnly && !callerIsRoot {
            return fail(command, .permission("root only"))
        }
        if let flag = invocation.privilegedFlag, !callerIsRoot {
            return fail(command, .permission("\(flag.name) is for root only"))
        }
        return command.run(invocation)
    }

    static var usageText: String {
        var text = "usage: localauthctl COMMAND [ARGS] (localauthctl COMMAND --help for each)\n\ncommands:\n"
        for command in all where !command.hidden {
            text += "  \(command.synopsis)\n      \(command.summary)\n"
        }
        text += "\nexit status:\n"
        for (code, meaning) in Exit.table {
            text += "  \(code)\(code < 10 ? " " : "")  \(meaning)\n"
        }
        return text
    }
}

/// Prints the error as one line and returns its status.
func fail(_ command: CommandSpec, _ error: CLIError) -> Int32 {
    if case .usage(let m) = error {
        warn("\(command.name): \(m) (see localauthctl \(command.name) --help)")
    } else {
        warn("\(command.name): \(error.message)")
    }
    return error.status
}

func usageError(_ command: CommandSpec, _ message: String) -> Int32 {
    fail(command, .usage(message))
}
