#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import CLinux
import CPathOpen

/// Ends a prompt the application is showing on its terminal by putting a newline into the
/// terminal's input (TIOCSTI), as if the user pressed Enter: that is how a finger touched
/// during a prompt ends the prompt. Only the controlling terminal of the calling process
/// is ever written to, only a newline, and only while the caller itself is waiting to read
/// that terminal (`callerIsReading`): a newline put in while anything else reads it (the
/// shell, when sudo was suspended or started in the background) would run whatever the
/// user had half-typed there.
final class TerminalInput {
    private let fd: Int32
    private let callerPID: Int32
    /// The terminal's device number.
    private let device: UInt64
    private(set) var injected = 0

    /// nil unless `path` is a terminal and the controlling terminal of `pid` (and, when
    /// `owner` is given, owned by that uid).
    init?(path: String?, callerPID: Int32?, owner: uid_t? = nil) {
        guard let path, let pid = callerPID, pid > 0,
              let controlling = ProcStat(pid: pid)?.terminal, controlling != 0,
              let fd = TerminalInput.openVerified(path, controlling: controlling, owner: owner)
        else { return nil }
        self.fd = fd
        self.callerPID = pid
        self.device = controlling
    }

    /// Opens `path` only once it is known to be the terminal: the path may come from a
    /// request the user wrote (a peer that is not root), and opening some devices as root has
    /// effects of its own (a watchdog starts counting). An O_PATH descriptor names the inode
    /// without opening the device; it is checked, and that same inode is then opened through
    /// /proc/self/fd, so no symlink swapped in between can redirect the open.
    static func openVerified(_ path: String, controlling: UInt64, owner: uid_t?) -> Int32? {
        let handle = la_open_path_nofollow(path)
        guard handle >= 0 else { return nil }
        defer { close(handle) }
        var st = stat()
        guard fstat(handle, &st) == 0,
              TerminalRule.mayOpen(mode: UInt32(st.st_mode), device: UInt64(st.st_rdev), fileOwner: UInt32(st.st_uid),
                                   controlling: controlling, owner: owner)
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

    /// The caller is the terminal's foreground job, not stopped, and one of its threads is
    /// blocked waiting for the terminal's input: the prompt is really being read (its
    /// input already flushed, as sudo and Linux-PAM do before reading), so one newline ends
    /// it.
    func callerIsReading() -> Bool {
        guard let stat = ProcStat(pid: callerPID), stat.runsInForeground,
              stat.terminal == device else { return false }
        return TerminalInput.threads(of: callerPID).contains { waitsForInput(pid: callerPID, thread: $0) }
    }

    /// `callerIsReading`, giving a caller that runs in the foreground up to `millis` to get
    /// to its read. A message may come while the caller is between writing its prompt and
    /// reading it, or waits for a core on a busy machine: that is not a caller suspended or
    /// in the background, which is told at once (stopped, or not the foreground job).
    func callerIsReading(within millis: Int64) -> Bool {
        let deadline = MonotonicClock.millis() + millis
        while !callerIsReading() {
            guard let stat = ProcStat(pid: callerPID), stat.runsInForeground, stat.terminal == device,
                  MonotonicClock.millis() < deadline else { return false }
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&pause, nil)
        }
        return true
    }

    /// Whether the thread is in read(2), readv(2) or pread(2) on a descriptor of this
    /// terminal, or waits in poll(2)/select(2) (and their p- forms) with the terminal as its
    /// standard input, as vlock does (/proc/PID/task/TID/syscall: the call's number, then
    /// its arguments; which descriptors a poll waits on is not shown there).
    private func waitsForInput(pid: Int32, thread: String) -> Bool {
        guard let line = TerminalInput.firstLine("/proc/\(pid)/task/\(thread)/syscall"),
              let wait = TerminalRule.wait(syscallLine: line, readCalls: TerminalInput.readCalls,
                                           pollCalls: TerminalInput.pollCalls) else { return false }
        return isThisTerminal(pid: pid, descriptor: TerminalRule.descriptor(of: wait))
    }

    private func isThisTerminal(pid: Int32, descriptor: Int) -> Bool {
        var st = stat()
        guard stat("/proc/\(pid)/fd/\(descriptor)", &st) == 0, (st.st_mode & S_IFMT) == S_IFCHR else { return false }
        // sudo reads /dev/tty, which is the caller's controlling terminal: `device`.
        return TerminalRule.readsTerminal(descriptorDevice: UInt64(st.st_rdev), terminal: device)
    }

    private static let readCalls: Set<Int> = [Int(la_sys_read), Int(la_sys_readv), Int(la_sys_pread64)]
    private static let pollCalls: Set<Int> = [Int(la_sys_poll), Int(la_sys_select),
                                              Int(la_sys_pselect6), Int(la_sys_ppoll)]

    private static func threads(of pid: Int32) -> [String] {
        guard let dir = opendir("/proc/\(pid)/task") else { return [] }
        defer { closedir(dir) }
        var found: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            if name.first?.isNumber == true { found.append(name) }
        }
        return found
    }

    private static func firstLine(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self).split(separator: "\n").first.map(String.init)
    }

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
