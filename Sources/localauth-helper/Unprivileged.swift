#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth
import LocalAuthProtocol

/// A peer that is not root, as Launch found it from localauthd's handoff.
struct UnprivilegedCaller {
    let uid: uid_t
    let name: UserName
    let configPath: String
    /// The program that called PAM or the library: the connection's peer, as the kernel
    /// names it; never the pid the request claims.
    let callerPID: Int32
    /// When localauthd accepted the connection (CLOCK_BOOTTIME ns): a right's grant counts
    /// only when it was written before (RightsMode.isThisProcess).
    let acceptedAt: UInt64

    /// What a screen locker's service file may still choose on this path.
    /// Not `scan_timeout`: a user could hold the reader (and every other user's sudo) for
    /// ten minutes with it.
    static let argumentKeys: Set<String> = ["reason", "fallback_title", "prompt",
                                            "debug", "helper_timeout"]

    /// Seconds the helper waits for the request and the password frame. The user can
    /// connect with a program of their own and never write: a root process must not wait for ever.
    static let requestTimeout: UInt32 = 30

    /// The request must be for the peer's user; the caller's pid is the peer's.
    func check(_ request: inout HelperRequest) -> String? {
        guard request.user == name else {
            return "request for user \(LogWords.word(request.user.value)) refused: the caller is uid \(uid) (\(name))"
        }
        request.callerPID = callerPID
        request.callerUID = uid
        request.terminalOwner = uid
        // Whether someone can be at the reader: from the caller process itself, not from
        // what the request claims.
        request.stdinTTY = CallerProcess.standardInputIsTerminal(callerPID)
        request.display = CallerProcess.hasDisplay(callerPID)
        return nil
    }
}

/// Facts about the calling process read from /proc and logind (root reads them), for every
/// peer: the request's own `stdin_tty` and `display` are only what the caller says.
enum CallerProcess {
    /// Its fd 0 is its controlling terminal (directly, or as /dev/tty).
    static func standardInputIsTerminal(_ pid: Int32) -> Bool {
        guard let controlling = ProcStat(pid: pid)?.terminal, controlling != 0 else { return false }
        var st = stat()
        guard stat("/proc/\(pid)/fd/0", &st) == 0, (st.st_mode & S_IFMT) == S_IFCHR else { return false }
        return UInt64(st.st_rdev) == controlling || UInt64(st.st_rdev) == UInt64(5) << 8
    }

    /// A graphical session: logind's session type where logind runs, else a display named
    /// in the process's environment.
    static func hasDisplay(_ pid: Int32) -> Bool {
        if let type = LoginSession.type(of: pid) { return ["x11", "wayland", "mir"].contains(type) }
        return environment(of: pid).contains { entry in
            (entry.hasPrefix("DISPLAY=") || entry.hasPrefix("WAYLAND_DISPLAY=")) && !entry.hasSuffix("=")
        }
    }

    private static func environment(of pid: Int32) -> [String] {
        let fd = open("/proc/\(pid)/environ", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }
}

