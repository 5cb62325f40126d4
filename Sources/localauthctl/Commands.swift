#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

/// One subcommand: its synopsis, one line for the list, its help, the flags it takes, and
/// what runs it.
struct CommandSpec: Sendable {
    let name: String
    let synopsis: String
    let summary: String
    let help: String
    let flags: [Flag]
    /// Tools for tests and diagnosis: not listed by --help.
    var hidden = false
    /// Only root may run it at all.
    var rootOnly = false
    let run: @Sendable (Invocation) -> Int32

    var helpText: String {
        var text = "usage: localauthctl \(synopsis)\n\n\(Help.reflow(help))"
        if !flags.isEmpty {
            text += "\noptions:\n"
            for flag in flags {
                let head = flag.placeholder.isEmpty ? flag.name : "\(flag.name) \(flag.placeholder)"
                text += Help.entry(head, flag.help + (flag.privileged ? " (root only)" : ""))
            }
        }
        text += Help.entry("--help", "this text")
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
        ConfigCommand.spec,
        SensorVerifyCommand.spec,
        EnrolledSetCommand.spec,
        SSHCommand.spec,
    ]

    static func run(_ args: [String]) -> Int32 {
        guard let first = args.first else {
            warn(tr(cliLanguage, "a command is needed (see localauthctl --help)"))
            return Exit.usage
        }
        if first == "--help" || first == "-h" || (first == "help" && args.count == 1) {
            fputs(usageText, la_stdout())
            return Exit.ok
        }
        if first == "--version" {
            say("localauthctl \(Version.text)")
            return Exit.ok
        }
        if first == "help" {
            guard args.count == 2, let command = all.first(where: { $0.name == args[1] }) else {
                warn("help: " + tr(cliLanguage, "unknown command '%s' (see localauthctl --help)",
                                    printable(args.dropFirst().joined(separator: " "))))
                return Exit.usage
            }
            fputs(command.helpText, la_stdout())
            return Exit.ok
        }
        guard let command = all.first(where: { $0.name == first }) else {
            warn(tr(cliLanguage, "unknown command '%s' (see localauthctl --help)", printable(first)))
            return Exit.usage
        }
        let invocation: Invocation
        switch Invocation.parse(Array(args.dropFirst()), flags: command.flags) {
        case .success(let i): invocation = i
        case .failure(let e): return fail(command, e)
        }
        if invocation.help {
            fputs(command.helpText, la_stdout())
            return Exit.ok
        }
        if command.rootOnly && !callerIsRoot {
            return fail(command, .permission(tr(cliLanguage, "root only")))
        }
        if let flag = invocation.privilegedFlag, !callerIsRoot {
            return fail(command, .permission(tr(cliLanguage, "%s is for root only", flag.name)))
        }
        return command.run(invocation)
    }

    static var usageText: String {
        var text = "usage: localauthctl COMMAND [ARGS]   (localauthctl help COMMAND for each)\n"
            + "       localauthctl --version\n\ncommands:\n"
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
        warn("\(command.name): " + tr(cliLanguage, "%s (see localauthctl %s --help)", m, command.name))
    } else {
        warn("\(command.name): \(error.message)")
    }
    return error.status
}

func usageError(_ command: CommandSpec, _ message: String) -> Int32 {
    fail(command, .usage(message))
}

/// Help text that fits 80 columns: an option or command at the left, its text wrapped in a
/// column of its own.
enum Help {
    static let width = 80
    static let column = 26

    /// Paragraphs (a blank line or a line starting with `--` begins one) filled to 80 columns.
    static func reflow(_ text: String) -> String {
        var paragraphs: [[Substring]] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty || line.hasPrefix("--") || paragraphs.isEmpty { paragraphs.append([]) }
            paragraphs[paragraphs.count - 1] += line.split(separator: " ")
        }
        var out = ""
        for words in paragraphs where !words.isEmpty {
            var line = ""
            for word in words {
                if !line.isEmpty && line.count + 1 + word.count > width { out += line + "\n"; line = "" }
                line += (line.isEmpty ? "" : " ") + word
            }
            out += line + "\n"
        }
        return out
    }

    static func entry(_ head: String, _ text: String) -> String {
        let start = "  " + head
        let first = start.count < column ? start + String(repeating: " ", count: column - start.count) : nil
        var out = first == nil ? start + "\n" : ""
        var line = first ?? String(repeating: " ", count: column)
        var lineHasWords = false
        for word in text.split(separator: " ") {
            if lineHasWords && line.count + 1 + word.count > width {
                out += line + "\n"
                line = String(repeating: " ", count: column)
                lineHasWords = false
            }
            line += (lineHasWords ? " " : "") + word
            lineHasWords = true
        }
        return out + line + "\n"
    }
}
