#if canImport(Glibc)
import Glibc
#endif

/// The fields of /proc/PID/stat the helper and the service need: the controlling terminal and the start
/// time, which together with the session id tell one login session from a later one, the
/// job-control state that says whether the process is the terminal's foreground job, and
/// the parent, which for polkit's agent helper is the agent.
public struct ProcStat {
    /// Field 3: R, S, D, T (stopped), t (traced), Z, ...
    public let state: Character
    /// Field 4: the parent process.
    public let parent: Int32
    /// Field 5: the process group.
    public let processGroup: Int32
    /// Field 7: the controlling terminal's device number (0: none).
    public let terminal: UInt64
    /// Field 8: the terminal's foreground process group (-1: none).
    public let foregroundGroup: Int32
    /// Field 22: when the process started, in clock ticks since boot.
    public let startTime: UInt64

    /// In the terminal's foreground job and not stopped (Ctrl-Z, `&` and a read from the
    /// terminal, a debugger).
    public var runsInForeground: Bool {
        terminal != 0 && processGroup > 0 && processGroup == foregroundGroup
            && state != "T" && state != "t"
    }

    public init?(pid: Int32) {
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        // The command name (field 2) may hold spaces and parentheses: count after the last
        // ')'; the first field after it is field 3. Split as bytes: as Characters (grapheme
        // by grapheme) this took a tenth of the helper's start-up.
        guard let close = buffer[0..<n].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = buffer[(close + 1)..<n].split(separator: UInt8(ascii: " "))
            .map { Substring(decoding: $0, as: UTF8.self) }
        guard fields.count > 19, let state = fields[0].first, let ppid = Int32(fields[1]),
              let group = Int32(fields[2]), let tty = Int64(fields[4]),
              let foreground = Int32(fields[5]), let start = UInt64(fields[19]) else { return nil }
        self.state = state
        parent = ppid
        processGroup = group
        terminal = UInt64(truncatingIfNeeded: tty)
        foregroundGroup = foreground
        startTime = start
    }
}

/// One `Name:` line's value of a /proc file of lines such as /proc/PID/status or
/// /proc/self/fdinfo/N (tabs and spaces after the colon dropped); nil when absent.
public enum ProcField {
    public static func value(_ name: String, in path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let key = Array((name + ":").utf8)
        for line in buffer[0..<n].split(separator: UInt8(ascii: "\n")) where line.starts(with: key) {
            let value = line.dropFirst(key.count).drop(while: { $0 == 9 || $0 == 32 })
            return String(decoding: value, as: UTF8.self)
        }
        return nil
    }
}
