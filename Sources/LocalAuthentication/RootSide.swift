import Foundation
import LocalAuthProtocol
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The system's root side: the lockout state, the enrolled-set check and the password
/// check live in root-only files and in `localauth-helper`, which an ordinary process
/// reaches only through localauthd's socket (docs/SERVICE.md); root starts the helper
/// itself where no service is installed (docs/PROTOCOL.md, "Applications").
/// The application never reads or writes that state itself, so it cannot reset a lockout.
enum RootSide {
    /// Where the product is installed: `/usr`, or `LOCALAUTH_PREFIX` for a self-contained
    /// install (`scripts/install --prefix`) and for tests. The variable only chooses which
    /// root side this process talks to; it gives the process no power over that side.
    /// A setuid or setgid program ignores it: its environment is its caller's, who must
    /// not choose the program it starts (as root, for a setuid-root one) nor the verdict.
    static var prefix: String {
        if getuid() == geteuid(), getgid() == getegid(),
           let p = Environment.value("LOCALAUTH_PREFIX"), p.hasPrefix("/") { return p }
        return "/usr"
    }

    /// The helper root starts where no service answers. An ordinary process has no program
    /// to start: no setuid file is installed, and none is needed under NoNewPrivileges or
    /// in a Flatpak sandbox either.
    static var program: String {
        let dir = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
        return "\(dir)/libexec/localauth/localauth-helper"
    }

    /// `program` resolved, once it is root's (LaunchTrust): in directories only root can change.
    static func trustedProgram(_ named: String = program) throws(LAError) -> String {
        try LaunchTrust.checked(named)
    }

    /// Where the root side is, for the preflight cache's key: the service's socket, and
    /// for root the helper it would start.
    static var place: String {
        geteuid() == 0 ? "\(ServiceSocket.path) \(program)" : ServiceSocket.path
    }
}

/// One run of the root side: a connection to localauthd (ServiceSocket), or where no
/// service is installed a child process whose fds 0 and 1 are one end of a socket
/// pair (a socket rather than pipes so that a write to a helper that went away returns
/// EPIPE instead of raising SIGPIPE in the application), fd 2 on /dev/null, the
/// environment `PATH` only, as the module starts it.
///
/// `@unchecked Sendable`: `send` may come from any thread (the user's buttons) and takes
/// `writeLock`; `receive` and `finish` come only from the evaluation's own thread, which
/// alone touches `decoder`; `hangUp` is one shutdown(2); `fd` and `pid` are constant.
final class RootConnection: @unchecked Sendable {
    private let fd: Int32
    private let pid: pid_t
    private let writeLock = NSLock()
    private var decoder = FrameDecoder()

    init(program: String) throws(LAError) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw LAError.make(.biometryNotAvailable, debug: "socketpair: \(String(cString: strerror(errno)))")
        }
        // The child's end above 2, so that dup2 onto 0 and 1 always clears its close-on-exec.
        let child = fcntl(pair[1], F_DUPFD_CLOEXEC, 3)
        close(pair[1])
        guard child >= 0 else {
            close(pair[0])
            throw LAError.make(.biometryNotAvailable, debug: "fcntl: \(String(cString: strerror(errno)))")
        }
        defer { close(child) }
        var spawned: pid_t = 0
        let status = Self.spawn(program, fd: child, pid: &spawned)
        guard status == 0 else {
            close(pair[0])
            throw LAError.make(.biometryNotAvailable,
                               debug: "could not start \(program): \(String(cString: strerror(status)))")
        }
        fd = pair[0]
        pid = spawned
    }

    /// A connection to localauthd: no child of ours (its helper is the service's).
    init(service fd: Int32) {
        self.fd = fd
        pid = 0
    }

    private static func spawn(_ program: String, fd: Int32, pid: inout pid_t) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_adddup2(&actions, fd, 0)
        posix_spawn_file_actions_adddup2(&actions, fd, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Signals at default and unblocked: the application's own settings are not the
        // root side's.
        var none = sigset_t()
        var all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), nil]
        let envp: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nil]
        defer { for p in argv + envp { free(p) } }
        return posix_spawn(&pid, program, &actions, &attributes, argv, envp)
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

    /// Closes the socket and reaps the child. It exits as soon as it sees the end of file;
    /// one that does not within 2 s is reaped in the background (it runs as root, so the
    /// application could not kill it anyway).
    func finish() {
        Glibc.close(fd)
        let child = pid
        guard child > 0 else { return }
        for _ in 0..<200 {
            var status: Int32 = 0
            let r = waitpid(child, &status, WNOHANG)
            if r == child || (r < 0 && errno != EINTR) { return }
            usleep(10_000)
        }
        DispatchQueue.global().async {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
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
