#if canImport(Glibc)
import Glibc
#endif

// localauthctl: the hand tool for users and administrators. Each subcommand lives in its
// own file and is listed in Commands.swift.

/// The command line. With the static Swift stdlib, `CommandLine.arguments` is found by
/// walking back from `environ` to the initial stack; a preloaded library that changed the
/// environment before us (pam_wrapper does) moves `environ` and leaves it empty. The
/// kernel's copy in /proc/self/cmdline has the same words.
func commandLine() -> [String] {
    if !CommandLine.arguments.isEmpty { return CommandLine.arguments }
    let fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while bytes.count < 1 << 20 {
        let n = read(fd, &chunk, chunk.count)
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { break }
        bytes += chunk[0..<n]
    }
    if bytes.last == 0 { bytes.removeLast() }
    return bytes.split(separator: 0, omittingEmptySubsequences: false).map {
        String(decoding: $0, as: UTF8.self)
    }
}

exit(Commands.run(Array(commandLine().dropFirst())))
