#if canImport(Glibc)
import Glibc
#endif
import CLinux
import CSystemd
import LocalAuth

/// The helper runs as root but starts in its caller's cgroup. Where that cgroup is
/// delegated to the user (systemd gives each user's manager `user@UID.service`: the shells
/// of GNOME Terminal, Console and Konsole live in its `app.slice`), the user can freeze
/// (`cgroup.freeze`), throttle (`cpu.max`, `io.max`) or starve (`memory.high`) every process
/// in it, a root helper too, at the moment that suits them: while it holds the reader or the
/// installation's lock, between a failed match and its record. So the first thing the
/// helper does is move itself to the root of the unified (v2) hierarchy, which only root
/// controls. Where that cannot be done (no cgroup v2, a container) it goes on as before.
enum CgroupEscape {
    enum Outcome: Equatable {
        case moved(from: String)
        case alreadyAtRoot
        /// Started by localauthd: the service's cgroup is root's.
        case underTheService
        case failed(String)
    }

    /// `cgroup2` in statfs(2)'s f_type (linux/magic.h).
    private static let cgroup2Magic = 0x6367_7270

    static func leaveCallersCgroup() -> Outcome {
        guard let from = unifiedPath() else { return .failed("/proc/self/cgroup names no cgroup v2 hierarchy") }
        if from == "/" { return .alreadyAtRoot }
        guard let mount = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"].first(where: isCgroup2) else {
            return .failed("no cgroup2 file system at /sys/fs/cgroup or /sys/fs/cgroup/unified")
        }
        if let why = write("\(getpid())\n", to: mount + "/cgroup.procs") { return .failed(why) }
        let now = unifiedPath() ?? "?"
        return now == "/" ? .moved(from: from) : .failed("still in \(now) after writing \(mount)/cgroup.procs")
    }

    /// Logged once the options say how much to log: a move, and a failure where systemd
    /// does not run (a container, this cgroup is nobody's to delegate), at debug; a failure
    /// where systemd runs is a notice, since there the cgroup left may be the user's.
    static func report(_ outcome: Outcome, log: LogSink) {
        switch outcome {
        case .moved(let from):
            log.log(.debug, "moved out of the caller's cgroup \(LogWords.clean(from)) to the root cgroup")
        case .alreadyAtRoot:
            log.log(.debug, "already in the root cgroup")
        case .underTheService:
            log.log(.debug, "in localauthd's cgroup")
        case .failed(let why):
            log.log(sd_booted() > 0 ? .notice : .debug,
                    "still in the caller's cgroup, which may be the user's to freeze or throttle: \(why)")
        }
    }

    /// This process's path in the unified hierarchy (the `0::` line), nil when there is none.
    private static func unifiedPath() -> String? {
        guard let text = read("/proc/self/cgroup") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3))
        }
        return nil
    }

    private static func isCgroup2(_ path: String) -> Bool {
        var fs = statfs()
        return statfs(path, &fs) == 0 && Int(fs.f_type) == cgroup2Magic
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }

    /// Nil when written whole, else why not.
    private static func write(_ text: String, to path: String) -> String? {
        let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return "open \(path): \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        return n == bytes.count ? nil : "write \(path): \(String(cString: strerror(errno)))"
    }
}
