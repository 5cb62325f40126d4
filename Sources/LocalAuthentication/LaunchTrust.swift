import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Which program this library, running as root, may start as the root side (the helper,
/// where no service answers): whoever could replace it, or any directory above it, would
/// choose what runs as root and what the application believes.
/// `LOCALAUTH_PREFIX` only names a place; the place must be root's. So the program must be
/// a regular file owned by root that neither group nor others can write, and every
/// directory from `/` down to it, on the path as named and as
/// resolved (symbolic links followed), owned by root and writable by neither group nor
/// others: a sticky world-writable directory such as /tmp is refused too, since anyone
/// may create the directories below it.
enum LaunchTrust {
    /// The resolved path to start; otherwise `biometryNotAvailable` saying why.
    static func checked(_ program: String) throws(LAError) -> String {
        guard program.hasPrefix("/"), let real = realpath(program, nil) else {
            throw refusal(program, "it cannot be resolved (\(String(cString: strerror(errno))))")
        }
        let resolved = String(cString: real)
        free(real)
        for (dir, follow) in directories(of: program).map({ ($0, true) })
            + directories(of: resolved).map({ ($0, false) }) {
            if let why = problem(dir, follow: follow, directory: true) { throw refusal(program, why) }
        }
        if let why = problem(resolved, follow: false, directory: false) { throw refusal(program, why) }
        return resolved
    }

    /// `/`, `/usr`, `/usr/libexec`, ... down to the program's own directory.
    static func directories(of path: String) -> [String] {
        var out = ["/"]
        var current = ""
        for part in path.split(separator: "/").dropLast() {
            current += "/" + part
            out.append(current)
        }
        return out
    }

    private static func problem(_ path: String, follow: Bool, directory: Bool) -> String? {
        var st = stat()
        guard (follow ? stat(path, &st) : lstat(path, &st)) == 0 else {
            return "\(path): \(String(cString: strerror(errno)))"
        }
        let kind = st.st_mode & S_IFMT
        if directory && kind != S_IFDIR { return "\(path) is not a directory" }
        if !directory && kind != S_IFREG { return "\(path) is not a regular file" }
        if st.st_uid != 0 { return "\(path) is owned by uid \(st.st_uid), not root" }
        if st.st_mode & 0o022 != 0 {
            return "\(path) is writable by group or others (mode \(String(st.st_mode & 0o7777, radix: 8)))"
        }
        return nil
    }

    private static func refusal(_ program: String, _ why: String) -> LAError {
        .make(.biometryNotAvailable, debug: "refused to start \(program): \(why)")
    }
}
