#if canImport(Glibc)
import Glibc
#endif
import CLinux
import CSystemd

/// A listening socket: one systemd passed (localauth.socket, localauth-ssh-agent.socket), or
/// one bound here for `--listen PATH` (and `--agent-listen PATH`). Connections are taken with accept4(SOCK_CLOEXEC | SOCK_NONBLOCK), so no
/// descriptor of one request reaches another request's helper.
struct Listener: CustomStringConvertible {
    let fd: Int32
    let description: String
    /// The path bound here (removed at exit); nil for systemd's socket, which is systemd's.
    private let boundPath: String?

    struct Problem: Error { let text: String }

    /// The service's sockets: its own, and the ssh-agent socket when there is one. With
    /// `--listen PATH` both are bound here (the agent's only with `--agent-listen`); under
    /// systemd both come from its units, told apart by their names (localauth.socket's
    /// `FileDescriptorName=socket`, localauth-ssh-agent.socket's `ssh-agent`). An
    /// administrator who does not want the agent disables its unit: no socket, no agent.
    static func openAll(listen: String?, agentListen: String?) -> Result<(main: Listener, agent: Listener?), Problem> {
        if let listen {
            return bind(listen).flatMap { main in
                guard let agentListen else { return .success((main, nil)) }
                switch bind(agentListen) {
                case .success(let agent): return .success((main, agent))
                case .failure(let problem):
                    main.close()
                    return .failure(problem)
                }
            }
        }
        return fromSystemd()
    }

    /// sd_listen_fds_with_names checks LISTEN_PID and unsets the variables: a helper never
    /// sees them. A unit without `FileDescriptorName=` names its socket after itself
    /// (`localauth.socket`; `unknown` where systemd passed no names): the service's own
    /// socket is taken by either, as when there was only one.
    private static func fromSystemd() -> Result<(main: Listener, agent: Listener?), Problem> {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        var named: [String] = []
        if count > 0, let names {
            for i in 0..<Int(count) {
                named.append(names[i].map { String(cString: $0) } ?? "unknown")
                free(names[i])
            }
        }
        free(names)
        guard count > 0 else {
            return .failure(Problem(text: "no socket from systemd (start localauth.socket, or give --listen PATH)"))
        }
        var main: Listener?
        var agent: Listener?
        for (i, name) in named.enumerated() {
            let fd = SD_LISTEN_FDS_START + Int32(i)
            switch name {
            case "ssh-agent" where agent == nil, "localauth-ssh-agent.socket" where agent == nil:
                agent = prepared(fd, description: "the ssh-agent socket from systemd")
            case "socket" where main == nil, "unknown" where main == nil, "localauth.socket" where main == nil:
                main = prepared(fd, description: "the socket from systemd")
            default:
                Glibc.close(fd)
                return .failure(Problem(text: "systemd passed a socket named `\(name)`, or one twice: "
                                        + "localauth.socket is `socket`, localauth-ssh-agent.socket `ssh-agent`"))
            }
        }
        guard let main else {
            return .failure(Problem(text: "systemd passed no socket named `socket` (start localauth.socket, or give --listen PATH)"))
        }
        for listener in [main, agent].compactMap({ $0 }) where listener.fd < 0 {
            return .failure(Problem(text: "\(listener.description) is not a listening AF_UNIX stream socket"))
        }
        return .success((main, agent))
    }

    /// A descriptor systemd passed, checked to be a listening stream socket, made
    /// close-on-exec and non-blocking; fd -1 when it is not one.
    private static func prepared(_ fd: Int32, description: String) -> Listener {
        guard sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 else {
            return Listener(fd: -1, description: description, boundPath: nil)
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return Listener(fd: fd, description: description, boundPath: nil)
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
