import CLinux
import LocalAuth
#if canImport(Glibc)
import Glibc
#endif

/// One line on stdout, flushed at once so a reader on a pipe sees it as it happens.
func say(_ line: String) {
    fputs(line + "\n", la_stdout())
    fflush(la_stdout())
}

/// One line on stderr, prefixed with the program name.
func warn(_ line: String) {
    fputs("localauthctl: \(line)\n", la_stderr())
}

/// Log lines on stderr: errors only, or everything with LOCALAUTH_DEBUG set.
final class StderrLog: LogSink {
    private let minimum: LogLevel = getenv("LOCALAUTH_DEBUG") != nil ? .debug : .error
    func log(_ level: LogLevel, _ message: String) {
        if level >= minimum { warn(message) }
    }
}

/// The language for messages, as gettext picks it: LANGUAGE, LC_ALL, LC_MESSAGES, LANG.
func messageLanguage() -> Language {
    func env(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
    return Language(language: env("LANGUAGE"), lcAll: env("LC_ALL"), lcMessages: env("LC_MESSAGES"),
                    lang: env("LANG"))
}

/// The language of this run's messages.
let cliLanguage = messageLanguage()

/// `s` padded to `width` columns as a terminal shows it (CJK characters take two cells),
/// and at least one space after it.
func padCells(_ s: String, _ width: Int) -> String {
    let cells = s.unicodeScalars.reduce(0) { $0 + (isWide($1) ? 2 : 1) }
    return cells >= width ? s + " " : s + String(repeating: " ", count: width - cells)
}

private func isWide(_ c: Unicode.Scalar) -> Bool {
    switch c.value {
    case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
         0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
         0xFFE0...0xFFE6:
        return true
    default:
        return false
    }
}

/// The write end of the interrupt pipe, for the signal handler (which cannot capture).
/// `nonisolated(unsafe)`: written on the main thread before `sigaction` installs the
/// handler (which orders the write before any delivery), and only read after that; a
/// plain Int32 is what a signal handler may read (an atomic or a lock may not be).
nonisolated(unsafe) private var interruptWriteEnd: Int32 = -1

/// A descriptor that becomes readable on SIGINT or SIGTERM, so a scan in progress ends
/// through the normal stop-and-release path. -1 if unavailable.
func interruptDescriptor() -> Int32 {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return -1 }
    for fd in fds {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    }
    interruptWriteEnd = fds[1]
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { _ in
        var byte: UInt8 = 1
        _ = write(interruptWriteEnd, &byte, 1)  // async-signal-safe; a full pipe is fine
    }
    sigemptyset(&action.sa_mask)
    sigaction(SIGINT, &action, nil)
    sigaction(SIGTERM, &action, nil)
    return fds[0]
}
