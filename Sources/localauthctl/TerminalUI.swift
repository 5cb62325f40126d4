#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

/// The user interface of an evaluation on the terminal: each message on its own line on
/// stdout as it comes, "Waiting for your finger..." while the reader is active (a status
/// line that is erased on a terminal, a line of its own on a pipe), and the password read
/// from /dev/tty with echo off.
final class TerminalUI: AuthenticationUI {
    let language: Language
    /// Set once the password was confirmed in this run: a second check does not ask again.
    var passwordConfirmed = false
    private let statusLine: Bool
    private var waiting = false

    init(language: Language) {
        self.language = language
        statusLine = isatty(1) == 1
    }

    func show(_ message: UserMessage, error: Bool) {
        clearWaiting()
        say(message.text(language))
        switch message {
        case .placeFinger, .retry: showWaiting()
        default: break
        }
    }

    func askPassword(prompt: String) -> [UInt8]? {
        clearWaiting()
        if passwordConfirmed { return [] }
        return readSecret(prompt: prompt)
    }

    /// Erases the status line, if one is shown.
    func finish() { clearWaiting() }

    private func showWaiting() {
        let text = UserMessage.waitingForFinger.text(language)
        if statusLine {
            fputs(text, la_stdout())
            fflush(la_stdout())
            waiting = true
        } else {
            say(text)
        }
    }

    private func clearWaiting() {
        guard waiting else { return }
        fputs("\r\u{1B}[K", la_stdout())
        fflush(la_stdout())
        waiting = false
    }
}

/// Reads one line from the controlling terminal with echo off. nil when there is no
/// terminal, on end of file, or when a signal (Ctrl-C) interrupts the read. The caller
/// wipes the bytes.
func readSecret(prompt: String, limit: Int = 4096) -> [UInt8]? {
    let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var saved = termios()
    let isTerminal = tcgetattr(fd, &saved) == 0
    if isTerminal {
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        _ = tcsetattr(fd, TCSAFLUSH, &quiet)
    }
    defer { if isTerminal { _ = tcsetattr(fd, TCSAFLUSH, &saved) } }
    _ = prompt.withCString { write(fd, $0, strlen($0)) }

    var line: [UInt8] = []
    var byte: UInt8 = 0
    while true {
        let n = read(fd, &byte, 1)
        if n == 1 {
            if byte == UInt8(ascii: "\n") { return line }
            if line.count < limit { line.append(byte) }
            continue
        }
        // EOF, or interrupted by Ctrl-C (the handler is installed without SA_RESTART).
        Crypto.wipe(&line)
        if n < 0 || line.isEmpty { _ = write(fd, "\n", 1) }
        return nil
    }
}
