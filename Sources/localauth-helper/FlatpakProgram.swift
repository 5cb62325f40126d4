#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The program of a process in a Flatpak sandbox, for ProgramBinding. Such a process has a
/// root of its own: `/proc/PID/exe` names a path inside it (`/app/bin/…`), which says
/// nothing in root's view, and the sandbox's own files (`/.flatpak-info`, its mounts) are
/// what the user who runs it could have built too (any user can make a mount namespace).
/// So nothing is taken from the sandbox's word alone:
///
/// * the app id is `/.flatpak-info`'s `[Application] name=`;
/// * the file the process runs must be, in root's view, a file of that app's deployment in
///   the system installation (`/var/lib/flatpak/app/APPID/ARCH/BRANCH/COMMIT/files/…`), found
///   from the sandbox's mount of `/app` and checked to be the very file (device and inode)
///   that runs, owned by root in directories that are root's;
/// * the right is bound to `flatpak:APPID:/app/…`, which an update (a new COMMIT directory)
///   keeps, and which no program outside that sandbox shape can present.
///
/// A per-user installation (`~/.local/share/flatpak`) is the user's to change, so its apps
/// hold no rights, as a program in the user's home does not.
enum FlatpakProgram {
    static let systemInstallation = "/var/lib/flatpak/app/"

    /// nil when `pid` shares root's view of the file system (an ordinary program).
    static func of(pid: Int32, exe: String) throws(ProgramBinding.Refusal) -> (identity: String, file: String)? {
        var own = stat(), theirs = stat()
        guard stat("/", &own) == 0, stat("/proc/\(pid)/root", &theirs) == 0 else {
            throw .untrusted("its root directory cannot be examined")
        }
        if own.st_dev == theirs.st_dev && own.st_ino == theirs.st_ino { return nil }
        guard let info = readSmall("/proc/\(pid)/root/.flatpak-info"), let app = appID(info) else {
            throw .untrusted("it runs in a file system view of its own that is not a Flatpak app's (no /.flatpak-info naming the app)")
        }
        guard exe.hasPrefix("/app/") else {
            throw .untrusted("a Flatpak app's program must be one of its own files (/app), not \(ProgramBinding.quoted(exe))")
        }
        guard let file = hostPath(of: exe, pid: pid) else {
            throw .untrusted("the file behind \(ProgramBinding.quoted(exe)) cannot be found in root's view")
        }
        let deployment = systemInstallation + app + "/"
        let parts = file.hasPrefix(deployment) ? file.dropFirst(deployment.count).split(separator: "/", maxSplits: 4) : []
        guard parts.count == 5, parts[3] == "files", "/app/" + parts[4] == exe else {
            throw .untrusted("\(ProgramBinding.quoted(exe)) is not a file of \(app)'s deployment in the system installation (\(ProgramBinding.quoted(file)))")
        }
        return ("flatpak:\(app):\(exe)", file)
    }

    /// `[Application]`'s `name=`: a reverse-DNS id, as Flatpak allows them.
    static func appID(_ text: String) -> String? {
        var section = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = raw.trimmingSpaces
            if line.hasPrefix("[") { section = line; continue }
            guard section == "[Application]", line.hasPrefix("name=") else { continue }
            let id = String(line.dropFirst("name=".count))
            let ok = (3...255).contains(id.utf8.count) && id.contains(".") && !id.hasPrefix(".")
                && !id.contains("..") && id.utf8.allSatisfy { c in
                    (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
                        || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
                }
            return ok ? id : nil
        }
        return nil
    }

    /// Where `path` (inside the process's view) is in root's: the process's mount that
    /// holds it (/proc/PID/mountinfo: the longest mount point above it), then a mount of the
    /// same file system in root's own view whose root lies above that mount's root.
    static func hostPath(of path: String, pid: Int32) -> String? {
        guard let theirs = readSmall("/proc/\(pid)/mountinfo", limit: 1 << 20).map(Mount.parse),
              let ours = readSmall("/proc/self/mountinfo", limit: 1 << 20).map(Mount.parse),
              let holder = theirs.filter({ $0.holds(path) }).max(by: { $0.point.count < $1.point.count }) else {
            return nil
        }
        let inside = holder.point == "/" ? path : String(path.dropFirst(holder.point.count))
        let sourcePath = holder.root == "/" ? inside : holder.root + inside
        guard let host = ours.filter({ $0.device == holder.device && Mount.isAbove($0.root, sourcePath) })
                .min(by: { $0.point.count < $1.point.count }) else { return nil }
        let rest = host.root == "/" ? sourcePath : String(sourcePath.dropFirst(host.root.count))
        return host.point == "/" ? rest : host.point + rest
    }

    struct Mount {
        let device: String
        let root: String
        let point: String

        /// mountinfo's lines: id, parent, major:minor, root, mount point, … (octal escapes
        /// for space, tab, newline and backslash).
        static func parse(_ text: String) -> [Mount] {
            text.split(separator: "\n").compactMap { line in
                let f = line.split(separator: " ", omittingEmptySubsequences: false)
                guard f.count > 5 else { return nil }
                return Mount(device: String(f[2]), root: unescape(f[3]), point: unescape(f[4]))
            }
        }

        func holds(_ path: String) -> Bool { Mount.isAbove(point, path) }

        static func isAbove(_ dir: String, _ path: String) -> Bool {
            dir == "/" || path == dir || path.hasPrefix(dir + "/")
        }

        static func unescape(_ s: Substring) -> String {
            var out: [UInt8] = []
            var bytes = Array(s.utf8)[...]
            while let b = bytes.popFirst() {
                if b == UInt8(ascii: "\\"), bytes.count >= 3,
                   let n = UInt8(String(decoding: bytes.prefix(3), as: UTF8.self), radix: 8) {
                    out.append(n)
                    bytes = bytes.dropFirst(3)
                } else {
                    out.append(b)
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// A small file's text (nil if missing, unreadable or larger than `limit`).
    static func readSmall(_ path: String, limit: Int = 64 * 1024) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { break }
            out += chunk[0..<n]
            if out.count > limit { return nil }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

private extension Substring {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" }).reversed()
            .drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" }).reversed())
    }
}
