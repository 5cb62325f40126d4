import LocalAuth

/// `localauthctl config`: the configuration the module and this tool use, option by option,
/// with where each value came from (the file and line, a drop-in, or the default), read with
/// the module's own parser in the module's order.
enum ConfigCommand {
    static let spec = CommandSpec(
        name: "config", synopsis: "config [--json]",
        summary: "print the effective configuration and where each value came from",
        help: """
        Prints every option as the module reads it: the configuration file, then the
        drop-ins of its .d directory (*.conf, in name order, each overriding what came
        before), each line `key = value  # source`, the source being file:line or
        `default` (or `command line` for an option flag). Problems (a bad line, an unsafe file) follow, as doctor reports them,
        and the exit status is 1. A file or drop-in that cannot be trusted is not read, and
        while it is there fingerprint sign-in is off (the password only).
        --json prints one object: options (key: value), sources (key: file:line or
        default), files (read, in order), problems, and untrusted (the files not read).
        """,
        flags: Flag.common.filter { $0 != .user } + [.json], run: run)

    static func run(_ inv: Invocation) -> Int32 {
        guard inv.positional.isEmpty else {
            return usageError(spec, "unexpected argument '\(printable(inv.positional[0]))'")
        }
        let path = inv.value(.config) ?? ConfigFile.installedPath
        var report = Options.resolve(configPath: path, arguments: inv.optionArguments)
        for (key, source) in report.sources where source == "module arguments" { report.sources[key] = "command line" }
        let keys = Options.allKeys.filter { !Options.moduleOnlyKeys.contains($0) }
        if inv.has(.json) {
            say(JSON.object([
                ("options", .object(keys.map { ($0, .string(report.options.text(of: $0) ?? "")) })),
                ("sources", .object(keys.map { ($0, .string(report.sources[$0] ?? "default")) })),
                ("files", .array(report.files.map { .string($0) })),
                ("problems", .array(report.problems.map { .string($0.1) })),
                ("untrusted", .array(report.untrusted.map { .string($0) })),
            ]).encoded())
            return report.problems.isEmpty ? Exit.ok : Exit.failed
        }
        say("# \(path), then \(ConfigFile.dropInDirectory(path))/*.conf")
        for key in keys {
            let line = "\(key) = \(report.options.text(of: key) ?? "")"
            say(line.padding(max(40, line.count + 1)) + "# " + (report.sources[key] ?? "default"))
        }
        for (_, problem) in report.problems { warn("config: \(problem)") }
        return report.problems.isEmpty ? Exit.ok : Exit.failed
    }
}
