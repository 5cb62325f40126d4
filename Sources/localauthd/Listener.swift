#if canImport(Glibc)
import Glibc
#endif
import CLinux
import CSystemd

/// The listening socket: the one systemd passed (localauth.socket), or one bound here for
/// `--listen PATH`. Connections are taken with accept4(SOCK_CLOEXEC | SOCK_NONBLOCK), so no
/// descriptor of one request reaches another request's helper.
struct Listener: CustomStringConvertible {
    let fd: Int32
    let description: String
    /// The path bound here (removed at exit); nil for systemd's socket, which is systemd's.
    private let boundPath: String?

    struct Problem: Error { let text: String }

    static func open(_ path: String?) -> Result<Listener, Problem> {
        if let path { return bind(path) }
        // sd_listen_fds checks LISTEN_PID and unsets the variables: a helper never sees them.
        let count = sd_listen_fds(1)
        guard count == 1 else {
            return .failure(Problem(text: count <= 0
                ? "no socket from systemd (start localauth.socket, or give --listen PATH)"
                : "systemd passed \(count) sockets; localauth.socket has one"))
        }
        let fd = SD_LISTEN_FDS_START
        guard sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 else {
            return .failure(Problem(text: "the socket systemd passed is not a listening AF_UNIX stream socket"))
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return .success(Listener(fd: fd, description: "the socket from systemd", boundPath: nil))
    }

    /// Binds PATH (mode 0666: every user may connect; what a peer may ask is decided from
    /// its credentials). An existing socket there is replaced only when nothing answers it.
    private static func bind(_ path: String) -> Result<Listener, Problem> {
        guard var address = unixAddress(path) else {
            return .failure(Problem(text: "\(path): longer than a socket path may be"))
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .failure(Problem(text: "socket: \(String(cString: strerror(errno)))")) }
        if let problem = removeStale(path) {
            Glibc.close(fd)
            return .failure(problem)
        }
        let old = umask(0o111)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(old)
        guard bound == 0, listen(fd, 128) == 0 else {
            let text = String(cString: strerror(errno))
            Glibc.close(fd)
            return .failure(Problem(text: "\(path): \(text)"))
        }
        return .success(Listener(fd: fd, description: path, boundPath: path))
    }

    /// A socket file left by a service that ended goes; anything else at the path is refused.
    private static func removeStale(_ path: String) -> Problem? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { return Problem(text: "\(path) exists and is not a socket") }
        if answers(path) { return Problem(text: "another service answers at \(path)") }
        guard unlink(path) == 0 else { return Problem(text: "\(path): \(String(cString: strerror(errno)))") }
        return nil
    }

    private static func answers(_ path: String) -> Bool {
        guard var address = unixAddress(path) else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    /// The next waiting connection, or nil when none waits.
    func accept() -> Int32? {
        let fd = la_accept_cloexec(self.fd)
        return fd >= 0 ? fd : nil
    }

    func close() {
        Glibc.close(fd)
        if let boundPath { unlink(boundPath) }
    }
}

/// A path socket's address; nil when the path does not fit (sun_path holds 107 bytes and
/// the NUL).
private func unixAddress(_ path: String) -> sockaddr_un? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
    }
    return address
}
