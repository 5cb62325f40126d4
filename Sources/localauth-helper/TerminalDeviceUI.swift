#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// An evaluation's user interface on the requester's own terminal, for a request that comes
/// with no conversation of its own (an ssh-agent signature: `ssh`, `git`, `ssh-keygen` wait
/// for the agent and show nothing). The terminal is the pinned peer's controlling terminal,
/// opened by root with O_NOCTTY (it never becomes the helper's), and only when it is that
/// very device and owned by the user (TerminalRule.mayOpen, TerminalInput.openVerified).
///
/// What it writes starts with the prompt root built (AgentPrompt); then the reader's lines.
/// The password (only for a key whose requirement allows it) is read with echo off, with
/// the terminal's settings put back on every path: each read is bounded to end well before
/// the helper's hard deadline, and ends when the requester goes away (Ctrl-C there ends
/// the requester: the terminal's foreground job is its). A terminal in raw mode is one
/// a program is reading itself (an interactive ssh session whose forwarded agent asks):
/// the password is not asked there, where the keys would reach that program too.
final class TerminalDeviceUI: AuthenticationUI {
    private let fd: Int32
    private let language: Language
    /// Descriptors whose readiness ends a password read (the requester's pidfd, the
    /// agent connection).
    private let watch: [Int32]
    private let log: LogSink

    /// Longest password read (bytes).
    static let maxPassword = 1024
    /// Longest wait for a password.
    static let passwordMillis: Int64 = 120_000

    private init(fd: Int32, language: Language, watch: [Int32], log: LogSink) {
        self.fd = fd
        self.language = language
        self.watch = watch
        self.log = log
    }

    deinit { close(fd) }

    /// The peer's controlling terminal, when it has one that is the user's; nil otherwise
    /// (then the desktop's dialog is the prompt, AgentDialog).
    static func open(peer pid: Int32, uid: uid_t, language: Language, watch: [Int32], log: LogSink) -> TerminalDeviceUI? {
        guard let controlling = ProcStat(pid: pid)?.terminal, controlling != 0,
              let path = devicePath(controlling, pid: pid),
              let fd = TerminalInput.openVerified(path, controlling: controlling, owner: uid) else { return nil }
        return TerminalDeviceUI(fd: fd, language: language, watch: watch, log: log)
    }

    /// The device's name: a pseudo-terminal's (`/dev/pts/N`, majors 136-143) or a virtual
    /// console's (`/dev/ttyN`), else whichever of the peer's standard descriptors is it.
    /// Only a name to open: the opened file is checked to be the device.
    static func devicePath(_ device: UInt64, pid: Int32) -> String? {
        let major = Int((device >> 8) & 0xfff) | Int((device >> 32) & ~0xfff)
        let minor = Int(device & 0xff) | Int((device >> 12) & ~0xff)
        if (136...143).contains(major) { return "/dev/pts/\((major - 136) * 256 + minor)" }
        if major == 4, (1...63).contains(minor) { return "/dev/tty\(minor)" }
        for n in 0...2 {
            var st = stat()
            var buffer = [CChar](repeating: 0, count: 256)
            let len = readlink("/proc/\(pid)/fd/\(n)", &buffer, buffer.count - 1)
            guard len > 0, stat("/proc/\(pid)/fd/\(n)", &st) == 0, UInt64(st.st_rdev) == device else { continue }
            let path = String(decoding: buffer[0..<len].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if path.hasPrefix("/dev/") { return path }
        }
        return nil
    }

    /// Lines as they are: `\r\n`, since a terminal in raw mode does not add the return.
    func write(lines: [String]) {
        let text = lines.map { $0 + "\r\n" }.joined()
        var bytes = Array(text.utf8)[...]
        let deadline = MonotonicClock.millis() + 2000
        while !bytes.isEmpty, MonotonicClock.millis() < deadline {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n > 0 { bytes = bytes.dropFirst(n); continue }
            guard n < 0, errno == EAGAIN || errno == EINTR else { return }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 100)
        }
    }

    func show(_ message: UserMessage, error: Bool) {
        switch message {
        // The prompt says what is approved; Ctrl-C ends the requester, not a scan.
        case .reason, .fallbackHint, .pressEnterToSkip, .passwordOrFinger: return
        default: write(lines: [message.text(language)])
        }
    }

    func askPassword(prompt: String) -> [UInt8]? {
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else { return nil }
        guard saved.c_lflag & tcflag_t(ICANON) != 0 else {
            log.log(.notice, "the requester's terminal is in raw mode (a program reads it): no password asked there")
            write(lines: [tr(language, "The password cannot be asked on this terminal now")])
            return nil
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK | ECHONL)
        quiet.c_lflag |= tcflag_t(ICANON | ISIG)
        quiet.c_iflag |= tcflag_t(ICRNL)
        guard tcsetattr(fd, TCSAFLUSH, &quiet) == 0 else { return nil }
        defer {
            _ = tcsetattr(fd, TCSANOW, &saved)
            write(lines: [""])
        }
        writeRaw(prompt)
        return readLine()
    }

    private func writeRaw(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    /// One line (without its end), or nil when the requester went away, the terminal hung
    /// up, the wait ran out or the line was too long. Ends 5 s before the hard deadline,
    /// so that the settings are always put back.
    private func readLine() -> [UInt8]? {
        let end = MonotonicClock.millis() + min(Self.passwordMillis, max(0, HardDeadline.remainingMillis - 5000))
        var line: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        while true {
            let left = end - MonotonicClock.millis()
            guard left > 0 else { Crypto.wipe(&line); return nil }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
                + watch.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(left, 1000)))
            if ready < 0 && errno != EINTR { Crypto.wipe(&line); return nil }
            if fds.dropFirst().contains(where: { $0.revents != 0 }) { Crypto.wipe(&line); return nil }
            guard fds[0].revents != 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EAGAIN || errno == EINTR { continue }
            guard n > 0 else { Crypto.wipe(&line); return nil }
            if let end = chunk[0..<n].firstIndex(where: { $0 == 10 || $0 == 13 }) {
                line += chunk[0..<end]
                Crypto.wipe(&chunk)
                return line
            }
            line += chunk[0..<n]
            Crypto.wipe(&chunk)
            guard line.count <= Self.maxPassword else { Crypto.wipe(&line); return nil }
        }
    }
}
