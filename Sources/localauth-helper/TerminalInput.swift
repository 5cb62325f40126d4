#if canImport(Glibc)
import Glibc
#endif
import CPathOpen

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
              let controlling = ProcStat(pid: pid)?.terminal, controlling != 0,
              let fd = TerminalInput.openVerified(path, controlling: controlling, owner: owner)
        else { return nil }
        self.fd = fd
    }

    /// Opens `path` only once it is known to be the terminal: the path may come from a
    /// request the user wrote (the launcher path), and opening some devices as root has
    /// effects of its own (a watchdog starts counting). An O_PATH descriptor names the inode
    /// without opening the device; it is checked, and that same inode is then opened through
    /// /proc/self/fd, so no symlink swapped in between can redirect the open.
    private static func openVerified(_ path: String, controlling: UInt64, owner: uid_t?) -> Int32? {
        let handle = la_open_path_nofollow(path)
        guard handle >= 0 else { return nil }
        defer { close(handle) }
        var st = stat()
        guard fstat(handle, &st) == 0, (st.st_mode & S_IFMT) == S_IFCHR,
              UInt64(st.st_rdev) == controlling, owner.map({ st.st_uid == $0 }) ?? true
        else { return nil }
        let fd = open("/proc/self/fd/\(handle)", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var opened = stat()
        guard isatty(fd) == 1, fstat(fd, &opened) == 0, opened.st_ino == st.st_ino,
              opened.st_dev == st.st_dev else {
            close(fd)
            return nil
        }
        return fd
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
}
