#if canImport(Glibc)
import Glibc
#endif

/// strerror(3) as a Swift string.
func errnoText(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// An errno value as an error.
struct Errno: Error, Equatable {
    let code: Int32
}

/// Small wrappers over the file system calls the store needs. Each returns errno on failure
/// instead of throwing, so the caller decides what a failure means.
enum Posix {
    /// Reads at most `limit` bytes; a file longer than that returns `limit + 1` bytes so the
    /// caller can tell it was too long.
    static func readAll(_ fd: Int32, limit: Int) -> Result<[UInt8], Errno> {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while out.count <= limit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(Errno(code: errno))
            }
            if n == 0 { break }
            out += chunk[0..<n]
        }
        return .success(Array(out.prefix(limit + 1)))
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += n
        }
        return nil
    }

    /// The step of a file system change that failed, for the caller's own error type.
    struct Failure {
        let path: String
        let operation: String
        let errno: Int32
    }

    /// New contents for `path`: a 0600 temp file beside it → `sync` (when given) → rename,
    /// so a reader finds the old bytes or the new, never a part. The caller holds the lock
    /// that guards `path` (a leftover temp file is then a crash's, not in use) and syncs the
    /// directory if the rename must survive a power cut.
    static func replaceFile(_ path: String, with bytes: [UInt8], sync: ((Int32) -> Int32)?) -> Failure? {
        let tmp = path + ".tmp"
        unlink(tmp)
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return Failure(path: tmp, operation: "create", errno: errno) }
        var failure: Failure?
        if fchmod(fd, 0o600) != 0 {
            failure = Failure(path: tmp, operation: "chmod", errno: errno)
        } else if let e = writeAll(fd, bytes) {
            failure = Failure(path: tmp, operation: "write", errno: e)
        } else if let sync, sync(fd) != 0 {
            failure = Failure(path: tmp, operation: "fsync", errno: errno)
        }
        close(fd)
        if failure == nil, rename(tmp, path) != 0 {
            failure = Failure(path: path, operation: "rename", errno: errno)
        }
        if failure != nil { unlink(tmp) }
        return failure
    }

    static func fileStat(_ fd: Int32) -> stat? {
        var st = stat()
        return fstat(fd, &st) == 0 ? st : nil
    }

    static func isRegular(_ st: stat) -> Bool { (st.st_mode & S_IFMT) == S_IFREG }
    static func isDirectory(_ st: stat) -> Bool { (st.st_mode & S_IFMT) == S_IFDIR }
    static func isSymlink(_ st: stat) -> Bool { (st.st_mode & S_IFMT) == S_IFLNK }

    /// The permission bits as octal text, for messages: "0644".
    static func modeText(_ st: stat) -> String {
        let bits = Int(st.st_mode & 0o7777)
        let digits = String(bits, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// Closes `fd` on scope exit.
    struct Descriptor: ~Copyable {
        let fd: Int32
        init(_ fd: Int32) { self.fd = fd }
        deinit { if fd >= 0 { close(fd) } }
    }
}
