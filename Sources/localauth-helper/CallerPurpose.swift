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
        // unprivileged path; RootPeer.check copies polkit's words only for a root peer).
        let rootPeer = request.terminalOwner == nil
        let pin = request.callerPID.flatMap { CallerPin(caller: $0) }
        defer { pin?.close() }
        return TouchPurpose.read(service: request.service, user: request.user.value, rootPeer: rootPeer,
                                 pid: pin == nil ? nil : request.callerPID, stillRuns: { pin?.stillRunning == true },
                                 polkitAgentHelper: PolkitAgent.of(request) != nil, polkit: request.polkit)
    }
}
