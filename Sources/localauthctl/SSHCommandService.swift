#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth
import LocalAuthProtocol

/// `localauthctl ssh`'s conversation with localauthd (`mode=ssh`): the helper answers for
/// the peer's uid only. An evaluation (delete, policy) talks on the way: the reader's lines
/// (`I`, `E`) are shown on stderr, a password prompt (`P`) is read from the terminal with
/// echo off, and Ctrl-C sends the helper a cancel (`C`); the result (`R`) ends it.
enum SSHService {
    /// The request for the caller's own keys.
    static func request(_ op: Request.SSH, account: Account) -> Request {
        func env(_ name: String) -> String { getenv(name).map { String(cString: $0) } ?? "" }
        let locale = [env("LC_ALL"), env("LC_MESSAGES"), env("LANG")].first { !$0.isEmpty } ?? ""
        let caller = Request.Caller(user: account.name.value, service: "localauthctl", stdinTTY: isatty(0) == 1,
                                    locale: locale, language: env("LANGUAGE"), callerUID: UInt32(getuid()),
                                    pid: getpid())
        return .ssh(caller, op)
    }

    /// Longest wait for the result: the helper's own deadline ends an evaluation first.
    static let deadlineMillis: Int64 = 600_000

    static func converse(_ request: Request) -> Result<Answer, CLIError> {
        let fd: Int32, channel: FrameChannel
        switch ServiceConnection.send(request) {
        case .success(let sent): (fd, channel) = sent
        case .failure(let why): return .failure(why)
        }
        defer { close(fd) }
        let interrupt = interruptDescriptor()
        defer { if interrupt >= 0 { close(interrupt) } }
        let deadline = MonotonicClock.millis() + deadlineMillis
        while MonotonicClock.millis() < deadline {
            switch channel.hasBufferedFrame ? .readable : wait(fd, interrupt) {
            case .interrupted:
                drain(interrupt)
                _ = channel.send(Frame(.cancel, text: "cancel"))
                continue
            case .idle:
                continue
            case .readable:
                break
            }
            let frame: Frame
            do { frame = try channel.receive() } catch { return .failure(.unavailable("localauthd: \(error)")) }
            switch frame.kind {
            case .started:
                continue
            case .info, .error:
                warn(shownLine(frame.text ?? ""))
            case .promptEchoOff, .promptEchoOn:
                answerPrompt(frame, channel)
            case .result:
                switch Answer.decode(frame.payload) {
                case .success(let answer): return .success(answer)
                case .failure(let problem): return .failure(.unavailable("localauthd: \(problem)"))
                }
            default:
                return .failure(.unavailable("unexpected frame from localauthd"))
            }
        }
        return .failure(.unavailable("localauthd did not answer"))
    }

    private enum Wake { case readable, interrupted, idle }

    /// The socket or Ctrl-C, a second at most. A frame the channel already holds (two came
    /// in one read) is asked first: poll would not see it.
    private static func wait(_ fd: Int32, _ interrupt: Int32) -> Wake {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: interrupt, events: Int16(POLLIN), revents: 0)]
        let n = poll(&fds, interrupt >= 0 ? 2 : 1, 1000)
        if n <= 0 { return .idle }
        if interrupt >= 0, fds[1].revents != 0 { return .interrupted }
        return fds[0].revents != 0 ? .readable : .idle
    }

    private static func drain(_ fd: Int32) {
        var byte: UInt8 = 0
        while read(fd, &byte, 1) > 0 {}
    }

    /// The password, from the terminal (never from stdin's pipe): none there, or Ctrl-C,
    /// is a cancel.
    private static func answerPrompt(_ frame: Frame, _ channel: FrameChannel) {
        let prompt = shownLine(frame.text ?? "Password:", limit: 200)
        guard var secret = readSecret(prompt: prompt.hasSuffix(" ") ? prompt : prompt + " ") else {
            _ = channel.send(Frame(.cancel, text: "cancel"))
            return
        }
        defer { Crypto.wipe(&secret) }
        _ = channel.send(Frame(.answer, secret))
    }

    /// The exit status for a refusal: a rule's (lockout, password first, set changed) is
    /// `refused`, a missing reader `unavailable`, anything else (no match, cancelled, no
    /// such key, a bad name) `failed`.
    static func status(_ answer: Answer) -> Int32 {
        switch answer.resultCode {
        case .biometryLockout?, .passcodeNotSet?: return Exit.refused
        case .biometryNotEnrolled?: return Exit.unavailable
        case .biometryNotAvailable?:
            switch answer.reason {
            case "enrollment-changed", "disabled": return Exit.refused
            default: return Exit.unavailable
            }
        case .invalidContext? where answer.reason == "key-invalidated": return Exit.refused
        default: return Exit.failed
        }
    }
}

/// Text from root's side or from a record, for the terminal: one line, whole (printable()
/// cuts at 80), with controls and format characters (bidi overrides) shown as `?`, so that
/// nothing in it moves the cursor or reorders what follows.
func shownLine(_ text: String, limit: Int = 2000) -> String {
    var out = String.UnicodeScalarView()
    for scalar in text.unicodeScalars.prefix(limit) {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: out.append("?")
        default: out.append(scalar)
        }
    }
    return String(out)
}
