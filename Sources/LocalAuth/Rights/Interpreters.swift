/// Programs that run other people's code as their own: interpreters, loaders, and tools
/// that run scripts in their own process (a debugger, an editor, a JIT). A right
/// belongs to the caller's executable (ProgramBinding), so a right saved through `python3`
/// would belong to every Python script of the user, and one saved through the dynamic
/// loader (`ld.so ./app`) to every program started that way. Refused unless the
/// administrator allows it (`rights_interpreters`).
public enum Interpreters {
    /// Names as they are installed, without the version (`python3.11` → `python`).
    static let names: Set<String> = [
        "python", "pypy", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit",
        "tclsh", "wish", "gjs", "cjs", "guile", "java", "dotnet", "mono", "pwsh", "Rscript", "R",
        "bash", "sh", "dash", "zsh", "ksh", "mksh", "fish", "tcsh", "csh", "busybox", "env",
        "awk", "gawk", "mawk", "sed", "expect", "osh", "yash",
        "gdb", "lldb", "vim", "vi", "nvim", "emacs", "swift", "swift-frontend",
    ]
    /// Name prefixes (loaders and emulators whose names carry an architecture).
    static let prefixes = ["ld-linux", "ld-musl", "ld.so", "qemu-"]

    public static func isInterpreter(_ path: String) -> Bool {
        let base = path.split(separator: "/").last.map(String.init) ?? path
        if prefixes.contains(where: { base.hasPrefix($0) }) { return true }
        // `python3.11`, `guile-3.0`, `gjs-console`, `luajit-2.1.0-beta3`, `vim.basic`: the
        // whole name without its version, or the part before the first `-` or `.`.
        let head = base.split(whereSeparator: { $0 == "-" || $0 == "." }).first.map(String.init) ?? base
        return [base, head].contains { names.contains(withoutVersion($0)) }
    }

    private static func withoutVersion(_ name: String) -> String {
        var s = Substring(name)
        while let last = s.last, last.isNumber || last == "." { s = s.dropLast() }
        return String(s)
    }
}
