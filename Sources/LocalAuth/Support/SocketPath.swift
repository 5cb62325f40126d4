#if canImport(Glibc)
import Glibc
#endif

/// The path a Unix socket is bound to (getsockname): an accepted connection has its
/// listener's. nil for an abstract or unnamed socket, or one that cannot be read. Used to
/// tell a connection accepted on polkit's agent helper socket from any other socket a user
/// could leave on a setuid program's stdin (the helper's PolkitAgent, localauthd's
/// PolkitAgentHelper).
public enum SocketPath {
    public static func local(of fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let offset = MemoryLayout.offset(of: \sockaddr_un.sun_path)!
        guard rc == 0, Int(length) > offset else { return nil }
        let bytes = withUnsafeBytes(of: &address.sun_path) { Array($0.prefix(Int(length) - offset)) }
        guard bytes.first != 0 else { return nil }     // an abstract or unnamed socket
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
}
