/// Programs that run other people's code as their own: interpreters and loaders. A right
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
    ]
    /// Name prefixes (loaders and emulators whose names carry an architecture).
    static let prefixes = ["ld-linux", "ld-musl", "ld.so", "qemu-"]

    public static func isInterpreter(_ path: String) -> Bool {
        let base = path.split(separator: "/").last.map(String.init) ?? path
        if prefixes.contains(where: { base.hasPrefix($0) }) { return true }
        var name = Substring(base)
        while let last = name.last, last.isNumber || last == "." { name = name.dropLast() }
        return names.contains(String(name))
    }
}
