#if canImport(Glibc)
import Glibc
#endif

/// Exit status for a command-line usage error (sysexits.h EX_USAGE).
let exitUsage: Int32 = 64

/// One subcommand: its name, one line of help, and what runs it.
struct Command {
    let name: String
    let usage: String
    let summary: String
    /// Tools for tests and diagnosis; not listed by --help.
    let hidden: Bool
    let run: ([String]) -> Int32
}

enum Commands {
    static let all: [Command] = [
        Command(name: "verify",
                usage: "verify [USER] [--dbus-address ADDR] [--bus-timeout S] [--scan-timeout S]",
                summary: "scan a finger against USER's enrolled prints (up to 3 tries)",
                hidden: false, run: VerifyCommand.run),
        Command(name: "enrolled-set",
                usage: "enrolled-set USER [--dbus-address ADDR] [--bus-timeout S] [--fprint-dir DIR]",
                summary: "show the reader and prints used for USER, and a digest of them",
                hidden: true, run: EnrolledSetCommand.run),
    ]

    static func run(_ args: [String]) -> Int32 {
        guard let first = args.first else {
            printUsage(to: stderr)
            return exitUsage
        }
        if first == "--help" || first == "-h" || first == "help" {
            printUsage(to: stdout)
            return 0
        }
        guard let command = all.first(where: { $0.name == first }) else {
            warn("unknown command '\(first)' (see localauthctl --help)")
            return exitUsage
        }
        return command.run(Array(args.dropFirst()))
    }

    static func printUsage(to stream: UnsafeMutablePointer<FILE>) {
        var text = "usage: localauthctl COMMAND [ARGS]\n\ncommands:\n"
        for command in all where !command.hidden {
            text += "  \(command.usage)\n      \(command.summary)\n"
        }
        fputs(text, stream)
    }
}
