import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The default `LAUserInterface`: the process's controlling terminal (`/dev/tty`), as
/// `sudo` asks. While the reader waits, Enter is the fallback button and Ctrl-D the cancel
/// button; the password is read with echo off. Without a terminal, lines go to standard
/// error and nothing can be answered. Nothing is read from a terminal whose foreground the
/// process is not (that would stop it with SIGTTIN).
///
/// `@unchecked Sendable`: `lock` guards `watcher` and `dismissed`. `tty`, `stop` and
/// `watcherDone` change only on the evaluation's queue, when it begins (before the watcher
/// thread starts) and when it ends (after the watcher was waited for): the thread start
/// and the semaphore order those writes before the watcher's reads. From other threads
/// only `dismiss()` comes, which takes the lock.
public final class LATerminalInterface: LAUserInterface, @unchecked Sendable {
    private let lock = NSLock()
    private var tty: Int32 = -1
    /// Written to end a wait on the terminal (dismiss, the end of the evaluation, or the
    /// watcher giving way to the password prompt).
    private var stop: (read: Int32, write: Int32) = (-1, -1)
    private var watcher: Thread?
    private var watcherDone = DispatchSemaphore(value: 0)
    /// Set by `dismiss`: nothing more is read for this evaluation.
    private var dismissed = false

    public init() {}

    public var canInteract: Bool {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    public func evaluationWillBegin(_ prompt: LAPrompt, choose: @escaping @Sendable (LAUserChoice) -> Void) {
        lock.lock()
        tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        stop = Self.makePipe()
        lock.unlock()
        write(prompt.reason)
        guard tty >= 0 else { return }
        let buttons = prompt.fallbackTitle.map { "Enter: \($0), Ctrl-D: \(prompt.cancelTitle)" }
            ?? "Ctrl-D: \(prompt.cancelTitle)"
        write("(\(buttons))")
        let offered = prompt.fallbackTitle != nil
        let done = DispatchSemaphore(value: 0)
        watcherDone = done
        let thread = Thread { [self] in
            watchButtons(fallbackOffered: offered, choose: choose)
            done.signal()
        }
        watcher = thread
        thread.start()
    }

    public func show(_ message: String, isError: Bool) {
        write(message)
    }

    public func askPassword(_ prompt: String) -> [UInt8]? {
        endWatcher()
        guard tty >= 0, isForeground, !isDismissed else { return nil }
        var saved = termios()
        guard tcgetattr(tty, &saved) == 0 else { return nil }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        writeRaw(prompt)
        guard tcsetattr(tty, TCSAFLUSH, &quiet) == 0 else { return nil }
        let line = readLine()
        tcsetattr(tty, TCSAFLUSH, &saved)
        writeRaw("\n")
        guard var typed = line, !typed.isEmpty else { return nil }
        defer { typed.withUnsafeMutableBytes { if let p = $0.baseAddress { explicit_bzero(p, $0.count) } } }
        return typed
    }

    public func dismiss() {
        lock.lock()
        defer { lock.unlock() }
        dismissed = true
        wakeLocked()
    }

    private var isDismissed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return dismissed
    }

    /// Ends the current wait on the terminal (the caller holds `lock`).
    private func wakeLocked() {
        if stop.write >= 0 {
            var byte: UInt8 = 1
            _ = Glibc.write(stop.write, &byte, 1)
        }
    }

    public func evaluationDidEnd() {
        endWatcher()
        lock.lock()
        defer { lock.unlock() }
        for fd in [tty, stop.read, stop.write] where fd >= 0 { close(fd) }
        tty = -1
        stop = (-1, -1)
    }

    // MARK: - The buttons while the reader waits

    private func watchButtons(fallbackOffered: Bool, choose: @Sendable (LAUserChoice) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 256)
        while waitForInput() {
            guard isForeground else {
                usleep(200_000)  // in the background: typing here is not for us
                continue
            }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(tty, $0.baseAddress, $0.count) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n <= 0 {
                choose(.cancel)  // Ctrl-D at the start of a line
                return
            }
            if buffer[0..<n].contains(UInt8(ascii: "\n")) {
                choose(fallbackOffered ? .fallback : .cancel)
                return
            }
        }
    }

    private func endWatcher() {
        lock.lock()
        let thread = watcher
        watcher = nil
        lock.unlock()
        guard thread != nil else { return }
        lock.lock()
        wakeLocked()
        lock.unlock()
        watcherDone.wait()
        drainStop()
        // A dismiss that came meanwhile must still end the next wait.
        lock.lock()
        if dismissed { wakeLocked() }
        lock.unlock()
    }

    // MARK: - Terminal plumbing

    /// Blocks until the terminal has input (true) or `stop` was written (false).
    private func waitForInput() -> Bool {
        var fds = [pollfd(fd: tty, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: stop.read, events: Int16(POLLIN), revents: 0)]
        while true {
            let r = poll(&fds, 2, -1)
            if r < 0 && errno == EINTR { continue }
            if r <= 0 || fds[1].revents != 0 { return false }
            if fds[0].revents & Int16(POLLIN) != 0 { return true }
            if fds[0].revents != 0 { return false }  // hung up
        }
    }

    /// One line from the terminal (without its newline); nil on end of file before any
    /// byte, or when dismissed.
    private func readLine() -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while waitForInput() {
            let n = Glibc.read(tty, &byte, 1)
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n <= 0 { return line.isEmpty ? nil : line }
            if byte == UInt8(ascii: "\n") { return line }
            line.append(byte)
        }
        line.withUnsafeMutableBytes { if let p = $0.baseAddress { explicit_bzero(p, $0.count) } }
        return nil
    }

    private var isForeground: Bool { tty >= 0 && tcgetpgrp(tty) == getpgrp() }

    private func drainStop() {
        var byte: UInt8 = 0
        while Glibc.read(stop.read, &byte, 1) > 0 {}
    }

    private func write(_ line: String) {
        guard !line.isEmpty else { return }
        writeRaw(line + "\n")
    }

    private func writeRaw(_ text: String) {
        let fd = tty >= 0 ? tty : 2
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }

    private static func makePipe() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return (-1, -1) }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        return (fds[0], fds[1])
    }
}
