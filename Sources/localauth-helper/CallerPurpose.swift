#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// What the touch approves for this request (TouchPurpose), from facts root reads: the PAM
/// items of a root peer, the pinned caller's executable and command line
/// (/proc/PID/exe, /proc/PID/cmdline, read while the pidfd localauthd handed over says it is
/// still the caller), polkit's words from the handoff. Nothing of the request's own text but
/// the PAM items a root peer sent. Asked once: the helper serves one request.
enum CallerPurpose {
    /// Bytes of a command line read at most; longer ones are read in part and shown cut.
    static let commandLineLimit = 256 * 1024

    nonisolated(unsafe) private static var memo: (caller: Int32?, purpose: TouchPurpose)?

    static func of(_ request: HelperRequest) -> TouchPurpose {
        if let memo, memo.caller == request.callerPID { return memo.purpose }
        let purpose = TouchPurpose.of(facts(request))
        memo = (request.callerPID, purpose)
        return purpose
    }

    /// An application's evaluation: its program as the kernel names it (the pinned peer's
    /// executable), whatever the request says. Its reason is its own, shown by the library.
    static func app(_ request: HelperRequest) -> TouchPurpose {
        guard let pid = request.callerPID, let pin = CallerPin(caller: pid) else { return .app(program: "?") }
        defer { pin.close() }
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0, pin.stillRunning else { return .app(program: "?") }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return .app(program: TouchPurpose.clean(path))
    }

    static func facts(_ request: HelperRequest) -> TouchPurpose.CallerFacts {
        // A root peer: the module inside a PAM host (terminalOwner is set only on the
        // unprivileged path, RootPeer.check copies polkit's words only there).
        let rootPeer = request.terminalOwner == nil
        var facts = TouchPurpose.CallerFacts(service: request.service, user: request.user.value, rootPeer: rootPeer,
                                             installedProgram: nil, arguments: [], argumentsCut: false,
                                             polkitAgentHelper: PolkitAgent.of(request) != nil, polkit: request.polkit)
        guard rootPeer, let pid = request.callerPID, let pin = CallerPin(caller: pid) else { return facts }
        defer { pin.close() }
        let program = RootOwned.installedProgram(of: pid)
        let (arguments, cut) = commandLine(of: pid)
        // Read about the caller, not about a process that took its pid after it ended.
        guard pin.stillRunning else { return facts }
        facts.installedProgram = program.map { String($0.split(separator: "/").last ?? "") }
        facts.arguments = arguments
        facts.argumentsCut = cut
        return facts
    }

    /// The words of /proc/PID/cmdline, and whether it was longer than what was read.
    static func commandLine(of pid: Int32) -> ([String], Bool) {
        let fd = open("/proc/\(pid)/cmdline", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return ([], false) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count <= commandLineLimit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        let cut = bytes.count > commandLineLimit
        if bytes.last == 0 { bytes.removeLast() }
        let words = bytes.prefix(commandLineLimit).split(separator: 0, omittingEmptySubsequences: false)
        return (words.map { String(decoding: $0, as: UTF8.self) }, cut)
    }
}
