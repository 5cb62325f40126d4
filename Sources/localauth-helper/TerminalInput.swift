#if canImport(Glibc)
import Glibc
#endif

/// Ends a prompt the application is showing on its terminal by putting a newline into the
/// terminal's input (TIOCSTI), as if the user pressed Enter: that is how a finger touched
/// during a prompt ends the prompt. Only the controlling terminal of the calling process
/// is ever written to, and only a newline.
final class TerminalInput {
    private let fd: Int32
    private(set) var injected = 0

    /// nil unless `path` is a terminal and the controlling terminal of `pid` (and, when
    /// `owner` is given, owned by that uid).
    init?(path: String?, callerPID: Int32?, owner: uid_t? = nil) {
        guard let path, let pid = callerPID, pid > 0,
              let controlling = TerminalInput.controllingTerminal(of: pid) else { return nil }
        // Checked before opening: the path may come from a request the user wrote, and
        // opening some devices as root has effects of its own (a watchdog starts counting).
        var before = stat()
        guard stat(path, &before) == 0, (before.st_mode & S_IFMT) == S_IFCHR,
              UInt64(before.st_rdev) == controlling else { return nil }
        let fd = open(path, O_RDWR | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard isatty(fd) == 1, fstat(fd, &st) == 0, UInt64(st.st_rdev) == controlling,
              owner.map({ st.st_uid == $0 }) ?? true else {
            close(fd)
            return nil
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Presses Enter on the user's behalf.
    func pressEnter() -> Bool {
        var newline = CChar(10)
        guard ioctl(fd, UInt(TIOCSTI), &newline) == 0 else { return false }
        injected += 1
        return true
    }

    /// Bytes typed or put in that the application has not read yet.
    func unreadInput() -> Int32 {
        var pending: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &pending) == 0 ? pending : 0
    }

    /// Drops a newline we put in that nobody read (the user pressed Enter at the same
    /// moment), so it does not reach the next prompt or the command being run.
    func dropUnread() {
        if injected > 0 && unreadInput() > 0 { tcflush(fd, TCIFLUSH) }
    }

    /// The terminal the caller's stdin is on, for applications that set no PAM_TTY.
    static func standardInput(of pid: Int32?) -> String? {
        guard let pid, pid > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: 256)
        let n = readlink("/proc/\(pid)/fd/0", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasPrefix("/dev/") ? path : nil
    }

    /// Field 7 of /proc/PID/stat is the controlling terminal's device number (0: none).
    static func controllingTerminal(of pid: Int32) -> UInt64? {
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[0..<n], as: UTF8.self)
        // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 5, let tty = Int64(fields[4]), tty > 0 else { return nil }
        return UInt64(tty)
    }
}
