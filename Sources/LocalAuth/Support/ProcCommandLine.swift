#if canImport(Glibc)
import Glibc
#endif

/// A process's command line as the kernel keeps it (/proc/PID/cmdline), bounded: for what a
/// touch approves (TouchPurpose), read by root about a pinned caller.
public enum ProcCommandLine {
    /// Bytes read at most; a longer command line is read in part and said so.
    public static let limit = 256 * 1024

    /// The words, `argv[0]` first, and whether the command line was longer than `limit`.
    public static func read(pid: Int32) -> (words: [String], cut: Bool) {
        let fd = open("/proc/\(pid)/cmdline", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return ([], false) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count <= limit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        let cut = bytes.count > limit
        bytes = Array(bytes.prefix(limit))
        if !cut, bytes.last == 0 { bytes.removeLast() }
        let words = bytes.split(separator: 0, omittingEmptySubsequences: false)
        return (words.map { String(decoding: $0, as: UTF8.self) }, cut)
    }
}

extension TouchPurpose {
    /// The facts of a request read from the caller's process: its installed program's file
    /// name and its command line, for a root peer only, read about `pid` and kept only when
    /// `stillRuns` says afterwards that the pinned caller still runs (not a process that
    /// took its pid). The service (localauthd's own answers) and the helper both read so.
    public static func read(service: String, user: String, rootPeer: Bool, pid: Int32?, stillRuns: () -> Bool,
                            polkitAgentHelper: Bool = false, polkit: PolkitPurpose? = nil) -> CallerFacts {
        var facts = CallerFacts(service: service, user: user, rootPeer: rootPeer, installedProgram: nil,
                                arguments: [], argumentsCut: false, polkitAgentHelper: polkitAgentHelper, polkit: polkit)
        guard rootPeer, let pid, pid > 0 else { return facts }
        let program = RootOwned.installedProgram(of: pid)
        let (words, cut) = ProcCommandLine.read(pid: pid)
        guard stillRuns() else { return facts }
        facts.installedProgram = program.map { String($0.split(separator: "/").last ?? "") }
        facts.arguments = words
        facts.argumentsCut = cut
        return facts
    }
}
