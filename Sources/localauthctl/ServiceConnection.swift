#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth
import LocalAuthProtocol

/// A connection to localauthd's socket: doctor's probe, and a user's own status.
enum ServiceConnection {
    /// localauth.socket's, or `LOCALAUTH_SERVICE` (as the library reads it: it only picks
    /// which root side answers, and the answer must still come from root).
    static var path: String {
        if getuid() == geteuid(), getgid() == getegid(),
           let raw = getenv("LOCALAUTH_SERVICE"), raw.pointee == 0x2F {
            return String(cString: raw)
        }
        return DoctorService.defaultSocket
    }

    /// A connected socket (close-on-exec), or why not. A full backlog would block connect:
    /// the same 3 s bound the module's start-up has.
    static func open(_ path: String) -> Result<Int32, ConnectError> {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            return .failure(ConnectError("path too long"))
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(ConnectError(String(cString: strerror(errno)))) }
        var limit = timeval(tv_sec: 3, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            return .failure(ConnectError(why))
        }
        return .success(fd)
    }

    /// Connects to localauthd, checks its end is root's, and writes the request: the socket
    /// (the caller closes it) and its channel, or why not (the socket then closed).
    static func send(_ request: Request) -> Result<(fd: Int32, channel: FrameChannel), CLIError> {
        let path = Self.path
        let fd: Int32
        switch Self.open(path) {
        case .success(let opened): fd = opened
        case .failure(let why): return .failure(.unavailable("localauthd at \(path): \(why)"))
        }
        var cred = la_peer_cred()
        guard la_socket_peer_cred(fd, &cred) == 0, cred.uid == 0 else {
            close(fd)
            return .failure(.unavailable("localauthd at \(path): its end is not root's"))
        }
        let channel = FrameChannel(input: fd, output: fd)
        guard channel.send(request.frame) else {
            close(fd)
            return .failure(.unavailable("localauthd went away"))
        }
        return .success((fd, channel))
    }

    /// Connects to localauthd (the peer must be root), writes the request, and reads one
    /// answer (at most 10 s).
    static func ask(_ request: Request) -> Result<Answer, CLIError> {
        let fd: Int32, channel: FrameChannel
        switch send(request) {
        case .success(let sent): (fd, channel) = sent
        case .failure(let why): return .failure(why)
        }
        defer { close(fd) }
        let deadline = MonotonicClock.millis() + 10_000
        // The helper says it started (`S`) before its result.
        for _ in 0..<4 {
            let left = deadline - MonotonicClock.millis()
            guard left > 0, channel.waitReadable(milliseconds: Int32(left)) else {
                return .failure(.unavailable("localauthd did not answer"))
            }
            let frame: Frame
            do { frame = try channel.receive() } catch { return .failure(.unavailable("localauthd: \(error)")) }
            if frame.kind == .started { continue }
            guard frame.kind == .result else { return .failure(.unavailable("unexpected frame from localauthd")) }
            switch Answer.decode(frame.payload) {
            case .success(let answer): return .success(answer)
            case .failure(let problem): return .failure(.unavailable("localauthd: \(problem)"))
            }
        }
        return .failure(.unavailable("localauthd sent no result"))
    }

    struct ConnectError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
