#if canImport(Glibc)
import Glibc
#endif
import SystemBus

/// A directory held open by descriptor, so every step below it is resolved with openat
/// relative to what was checked, and no step follows a symbolic link.
final class Directory {
    private let fd: Int32

    /// Opens an absolute directory path (the configured root; its own parents are trusted).
    convenience init?(path: String) {
        self.init(fd: open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
    }

    private init?(fd: Int32) {
        guard fd >= 0 else { return nil }
        self.fd = fd
    }

    deinit { close(fd) }

    /// A subdirectory, never through a symbolic link.
    func child(_ name: String) -> Directory? {
        Directory(fd: openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
    }

    func subdirectories() -> [String] { entries { $0 == S_IFDIR } }

    func regularFiles() -> Set<String> { Set(entries { $0 == S_IFREG }) }

    /// The whole content of a regular file, nil if it is missing, not a regular file, a
    /// symbolic link, unreadable, or larger than `limit` bytes.
    func readFile(_ name: String, limit: Int) -> [UInt8]? {
        let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var st = stat()
        guard fstat(file, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size <= limit else {
            return nil
        }
        return readAll(file, limit: limit)
    }

    /// Names in this directory whose file type (from lstat, links not followed) passes `keep`.
    private func entries(_ keep: (mode_t) -> Bool) -> [String] {
        let copy = dup(fd)  // closedir closes the descriptor it was given
        guard copy >= 0, let dir = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(dir) }
        rewinddir(dir)
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            guard name != ".", name != ".." else { continue }
            var st = stat()
            if fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0, keep(st.st_mode & S_IFMT) {
                names.append(name)
            }
        }
        return names.sorted()
    }
}

/// Reads until end of file; nil on a read error or when more than `limit` bytes arrive
/// (the file grew after fstat).
private func readAll(_ fd: Int32, limit: Int) -> [UInt8]? {
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 << 10)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n >= 0 else { return nil }
        if n == 0 { return out }
        out += chunk[0..<n]
        if out.count > limit { return nil }
    }
}
