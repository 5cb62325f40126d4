import Foundation
import LocalAuthProtocol
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The system's root side: the lockout state, the enrolled-set check and the password
/// check live in root-only files and in `localauth-helper`, which this library reaches only
/// through localauthd's socket (ServiceSocket; docs/SERVICE.md), for root as for anyone: it
/// never starts a process. The application never reads or writes that state itself, so it
/// cannot reset a lockout.
///
/// One run of the root side: a connection to localauthd (ServiceSocket), a socket so that
/// a write to a service that went away returns EPIPE instead of raising SIGPIPE in the
/// application (`MSG_NOSIGNAL`).
///
/// `@unchecked Sendable`: `send` may come from any thread (the user's buttons) and takes
/// `writeLock`; `receive` and `finish` come only from the evaluation's own thread, which
/// alone touches `decoder`; `hangUp` is one shutdown(2); `fd` is constant.
final class RootConnection: @unchecked Sendable {
    private let fd: Int32
    private let writeLock = NSLock()
    private var decoder = FrameDecoder()

    /// A connection to localauthd, `fd` from ServiceSocket.connect.
    init(service fd: Int32) {
        self.fd = fd
    }

    /// Writes one frame; false when the root side is gone.
    @discardableResult
    func send(_ frame: Frame) -> Bool {
        writeLock.lock()
        defer { writeLock.unlock() }
        var bytes = frame.encoded()
        defer { if frame.kind == .answer { bytes.withUnsafeMutableBytes { if let p = $0.baseAddress { explicit_bzero(p, $0.count) } } } }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// Blocks until a whole frame has arrived; end of stream or a malformed frame throws.
    func receive() throws(FrameError) -> Frame {
        while true {
            if let frame = try decoder.next() { return frame }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(errno)
            }
            if n == 0 { throw decoder.pending > 0 ? .truncated : .endOfStream }
            decoder.append(Array(chunk[0..<n]))
        }
    }

    /// Whether every byte received so far belongs to frames already returned.
    var isDrained: Bool { decoder.pending == 0 }

    /// Tells the root side the application is done (its end of file): an evaluation in
    /// flight ends with `appCancel` and its result still comes back.
    func hangUp() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes the socket: the service's helper sees the end of file and ends.
    func finish() {
        Glibc.close(fd)
    }
}

/// The request frame of `mode=app` (docs/PROTOCOL.md, "Applications").
struct AppRequest {
    enum Operation: String { case preflight, evaluate }

    var operation: Operation
    /// `biometrics` or `owner`.
    var policy: String
    var fallbackTitle: String?
    var canInteract: Bool
    /// `mode=right` (RightsClient): its operation instead of `op` and `policy`.
    var right: Request.Right? = nil
    /// `keep=1`: the connection may stay open for the next preflight (PreflightChannel).
    var keepConnection = false

    func frame() -> Frame {
        let caller = Request.Caller(
            user: Self.userName, service: Self.programName, silent: false, stdinTTY: canInteract,
            display: Self.graphicalSession, locale: Self.locale, language: Self.languageList, callerUID: getuid(),
            pid: getpid(), arguments: fallbackTitle.map { ["fallback_title=" + Self.oneLine($0)] } ?? [])
        if let right { return Request.right(caller, right).frame }
        let asked = Request.Policy(rawValue: policy) ?? .biometrics
        let app: Request.App = operation == .preflight ? .preflight(asked, keep: keepConnection) : .evaluate(asked)
        return Request.app(caller, app).frame
    }

    /// localauthd serves the peer's uid only, so the request names the real uid's user.
    /// Looked up once per uid: a name is not an answer, and the user database is a file
    /// read (six system calls) that cost as much as the service's whole preflight.
    static var userName: String {
        let uid = getuid()
        return knownName.withLock { known in
            if let known = known, known.uid == uid { return known.name }
            guard let pw = getpwuid(uid), let raw = pw.pointee.pw_name else { return "" }
            let name = String(cString: raw)
            known = (uid, name)
            return name
        }
    }

    private static let knownName = Mutex<(uid: uid_t, name: String)?>(nil)

    /// For the helper's log: which program asked.
    static var programName: String {
        oneLine(String(ProcessInfo.processInfo.processName.prefix(64)))
    }

    static var graphicalSession: Bool {
        !(Environment.value("DISPLAY") ?? "").isEmpty || !(Environment.value("WAYLAND_DISPLAY") ?? "").isEmpty
    }

    /// The message language, as the module sends it: a plain locale name or nothing.
    static var locale: String {
        for key in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            guard let value = Environment.value(key), !value.isEmpty else { continue }
            let plain = value.utf8.count < 64 && Self.isPlain(value, also: "_.@-")
            return plain ? value : ""
        }
        return ""
    }

    /// gettext's `LANGUAGE` list, as the module sends it: plain or nothing.
    static var languageList: String {
        let value = Environment.value("LANGUAGE") ?? ""
        let plain = value.utf8.count < 128 && Self.isPlain(value, also: "_.@:-")
        return plain ? value : ""
    }

    /// ASCII letters and digits, and the bytes of `also`.
    static func isPlain(_ value: String, also: String) -> Bool {
        value.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || also.utf8.contains(byte)
        }
    }

    static func oneLine(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? " " : $0 }))
    }
}

/// The result frame: `code` (`ResultCode`: 0 or Apple's raw value), `cause`, and in `mode=app`
/// `domain_state` (hex) and `biometry`.
struct AppResult: Equatable, Sendable {
    var error: LAError?
    var domainState: Data?
    var biometry: LABiometryType?
    /// Every key of the result (`mode=right`: `public_key`, `secret`, `signature`).
    var values: [String: String] = [:]

    init(_ frame: Frame) {
        guard let kv = try? KeyValues.parse(frame.payload), let code = kv.value("code").flatMap(Int.init) else {
            error = LAError.make(.biometryNotAvailable, debug: "the root side sent a result that is not readable")
            return
        }
        let cause = kv.value("cause") ?? ""
        if code == ResultCode.successValue {
            error = nil
        } else if let known = LAError.Code(rawValue: code) {
            error = LAError.make(known, debug: cause)
        } else {
            // A code this library does not know is never a success.
            error = LAError.make(.biometryNotAvailable, debug: "unknown result code \(code): \(cause)")
        }
        domainState = kv.value("domain_state").flatMap(Self.bytes(hex:))
        for (key, value) in kv.pairs where values[key] == nil { values[key] = value }
        biometry = kv.value("biometry").map { $0 == "touchID" ? .touchID : .none }
    }

    /// An answer made here, not by the root side (a refusal before it was reached).
    init(error: LAError?, domainState: Data? = nil, biometry: LABiometryType? = nil) {
        self.error = error
        self.domainState = domainState
        self.biometry = biometry
    }

    /// Non-empty hex text as bytes (LocalAuthProtocol's Hex); nil for anything else.
    static func bytes(hex: String) -> Data? {
        guard !hex.isEmpty, let bytes = Hex.decode(hex) else { return nil }
        return Data(bytes)
    }
}
