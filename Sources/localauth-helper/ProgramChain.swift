#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// Who asks for a signature, as root reads it from /proc: the executable names of the
/// pinned peer (the process that holds the agent connection: `ssh`, `ssh-keygen`) and of its
/// ancestors, `ssh ← git ← zsh ← gnome-terminal-server`. Names of executables, never a
/// process's own `comm` or arguments (which it may set to anything), cleaned for a prompt.
///
/// The walk stops at the first ancestor that is not the user's (sshd, the service
/// manager, root's login), at pid 1, or after `maxNames`: the rest says nothing about the
/// request. The peer itself is read while its pidfd says it still runs, so the first name
/// is the peer's and not a successor's with its pid.
struct ProgramChain: Equatable {
    let names: [String]

    static let maxNames = 5
    static let maxNameBytes = 40

    /// `git ← zsh ← gnome-terminal` (U+2190, as the prompt shows it).
    var text: String { names.isEmpty ? "?" : names.joined(separator: " \u{2190} ") }

    static func of(peer pid: Int32, uid: uid_t, stillRuns: () -> Bool) -> ProgramChain {
        guard let first = name(of: pid), stillRuns() else { return ProgramChain(names: []) }
        var names = [first]
        var current = pid
        while names.count < maxNames, let stat = ProcStat(pid: current), stat.parent > 1 {
            current = stat.parent
            guard owner(of: current) == uid, let next = name(of: current) else { break }
            names.append(next)
        }
        return ProgramChain(names: names)
    }

    /// The executable's file name (`/proc/PID/exe`'s last part), cleaned; " (deleted)" of an
    /// upgraded program dropped.
    static func name(of pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        var path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        let base = path.split(separator: "/").last.map(String.init) ?? path
        return clean(base)
    }

    /// Printable characters only (a file name may hold any byte but `/` and NUL), bounded.
    static func clean(_ name: String) -> String {
        var out = ""
        for scalar in name.unicodeScalars {
            let v = scalar.value
            out.unicodeScalars.append(v < 0x20 || (0x7f...0x9f).contains(v) || (0x202a...0x202e).contains(v)
                                      || (0x2066...0x2069).contains(v) ? "?" : scalar)
            // ASCII dots: the Linux console's font has no ellipsis.
            if out.utf8.count >= maxNameBytes { return out + "..." }
        }
        return out.isEmpty ? "?" : out
    }

    /// The process's real uid (`Uid:`'s first field).
    private static func owner(of pid: Int32) -> uid_t? {
        ProcField.value("Uid", in: "/proc/\(pid)/status")?
            .split(whereSeparator: { $0 == "\t" || $0 == " " }).first.flatMap { uid_t($0) }
    }
}
