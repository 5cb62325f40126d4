import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// localauthd's socket, the library's one way to the root side, for root as for anyone: no
/// process is started (no setuid program: this works under NoNewPrivileges and inside
/// Flatpak, given `--filesystem=/run/localauth:ro`). Where no service answers, every call
/// fails with `biometryNotAvailable` saying so.
enum ServiceSocket {
    enum Outcome {
        case connected(Int32)
        case absent
        case failed(String)
    }

    /// `LOCALAUTH_SERVICE`, else the installed one. The variable only picks which root side
    /// answers (what answers must still be root's: `connect`); a setuid or setgid program
    /// ignores it, since its environment is its caller's, who must not choose the verdict.
    static var path: String {
        if getuid() == geteuid(), getgid() == getegid(),
           let p = Environment.value("LOCALAUTH_SERVICE"), p.hasPrefix("/") { return p }
        return "/run/localauth/socket"
    }

    /// Root, as this process can see it: inside a user namespace (a Flatpak sandbox) root's
    /// files and processes show as the overflow uid.
    private static func isRoot(_ uid: uid_t) -> Bool {
        uid == 0 || (uid == overflowUID && access("/.flatpak-info", F_OK) == 0)
    }

    private static let overflowUID: uid_t = 65534

    static func connect(_ path: String = path) -> Outcome {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            return errno == ENOENT || errno == ENOTDIR ? .absent : .failed("\(path): \(String(cString: strerror(errno)))")
        }
        guard (st.st_mode & S_IFMT) == S_IFSOCK, isRoot(st.st_uid) else {
            return .failed("\(path) is not a socket of root's")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else { return .failed("\(path): too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let raw = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let fd = raw < 0 ? -1 : fcntl(raw, F_DUPFD_CLOEXEC, 3)
        if raw >= 0 && raw != fd { close(raw) }
        guard fd >= 0 else { return .failed("socket: \(String(cString: strerror(errno)))") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            return .failed("the service at \(path) did not take the connection: \(why)")
        }
        guard let peer = peerUID(fd), isRoot(peer) else {
            close(fd)
            return .failed("the service at \(path) refused: its end is not root's")
        }
        return .connected(fd)
    }

    /// SO_PEERCRED's uid (struct ucred: pid, uid, gid).
    private static func peerUID(_ fd: Int32) -> uid_t? {
        var cred = [UInt32](repeating: 0, count: 3)
        var len = socklen_t(12)
        let r = cred.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, $0.baseAddress, &len) }
        return r == 0 && len == 12 ? cred[1] : nil
    }
}
