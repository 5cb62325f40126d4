#if canImport(Glibc)
import Glibc
#endif

/// The failures a store of root's files names (RightsStore.Failure, SSHKeyStore.Failure):
/// their cases are these functions.
protocol OwnedFileFailure: Error {
    static func unsafe(path: String, why: String) -> Self
    static func io(path: String, operation: String, errno: Int32) -> Self
    static func damaged(path: String, why: String) -> Self
    static func full(why: String) -> Self
}

/// One user's files under root's state directory, as the rights store and the SSH key
/// store keep them: `<kind>/` and `<kind>/<uid>/` directories 0700 of the store's owner,
/// files opened with O_NOFOLLOW and refused unless regular, the owner's and closed to
/// others; a write goes to a temporary file, fsynced, renamed over, and the directory
/// fsynced; changes under the directory's `.lock`. One place for these rules, so that the
/// two stores cannot drift apart in what they trust.
protocol OwnedFileStore {
    associatedtype Failure: OwnedFileFailure
    /// `<state_dir>/<kind>/<uid>`.
    var directory: String { get }
    /// The uid the directories and files must belong to (root's, but for tests).
    var owner: uid_t { get }
    /// Bytes that must stay free for unprivileged users on the store's file system.
    static var freeSpaceFloor: UInt64 { get }
}

extension OwnedFileStore {
    /// The store's directory and its parent: created 0700 when missing, else they must be
    /// the store's, directories (not symlinks) and closed to others.
    func prepare() throws(Failure) {
        let parent = String(directory[..<directory.lastIndex(of: "/")!])
        try checkDirectory(parent)
        try checkDirectory(directory)
    }

    private func checkDirectory(_ path: String) throws(Failure) {
        var st = stat()
        if lstat(path, &st) != 0 {
            guard errno == ENOENT else { throw .io(path: path, operation: "stat", errno: errno) }
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
                throw .unsafe(path: path, why: "missing and cannot be created: \(errnoText(errno))")
            }
            guard lstat(path, &st) == 0 else { throw .io(path: path, operation: "stat", errno: errno) }
        }
        guard Posix.isDirectory(st) else { throw .unsafe(path: path, why: "not a directory (or a symlink)") }
        guard st.st_uid == owner else { throw .unsafe(path: path, why: "owned by uid \(st.st_uid), expected \(owner)") }
        guard st.st_mode & 0o077 == 0 else { throw .unsafe(path: path, why: "mode \(Posix.modeText(st)), expected 0700") }
    }

    func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// The file's bytes; nil when there is none. Anything but the store's own regular file
    /// closed to others is refused; so is a file longer than `limit`.
    func read(_ path: String, limit: Int) throws(Failure) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw .damaged(path: path, why: "a symlink") }
            throw .io(path: path, operation: "open", errno: errno)
        }
        defer { close(fd) }
        guard let st = Posix.fileStat(fd) else { throw .io(path: path, operation: "fstat", errno: errno) }
        guard Posix.isRegular(st), st.st_uid == owner, st.st_mode & 0o077 == 0 else {
            throw .damaged(path: path, why: "not a regular file of uid \(owner) with mode 0600")
        }
        guard st.st_size <= limit else { throw .damaged(path: path, why: "longer than \(limit) bytes") }
        switch Posix.readAll(fd, limit: limit) {
        case .success(let bytes): return bytes
        case .failure(let e): throw .io(path: path, operation: "read", errno: e.code)
        }
    }

    /// The directory's entries but the hidden ones (`.lock`, temporary files).
    func names() throws(Failure) -> [String] {
        guard let dir = opendir(directory) else { throw .io(path: directory, operation: "opendir", errno: errno) }
        defer { closedir(dir) }
        var out: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !name.hasPrefix(".") { out.append(name) }
        }
        return out
    }

    /// Refused when writing `size` bytes would leave less than the floor free for others.
    func checkFreeSpace(_ size: Int) throws(Failure) {
        var fs = statvfs()
        guard statvfs(directory, &fs) == 0 else { return }
        let free = UInt64(fs.f_bavail) * UInt64(fs.f_frsize)
        if free < Self.freeSpaceFloor + UInt64(size) {
            throw .full(why: "\(free / 1024 / 1024) MiB free on the state directory's file system, below the \(Self.freeSpaceFloor / 1024 / 1024) MiB kept for others")
        }
    }

    func locked<T>(_ mode: Int32 = LOCK_EX, _ body: () throws(Failure) -> T) throws(Failure) -> T {
        let path = directory + "/.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
        defer { close(fd) }
        while flock(fd, mode) != 0 {
            guard errno == EINTR else { throw .io(path: path, operation: "lock", errno: errno) }
        }
        return try body()
    }

    /// temp file → fsync → rename (Posix.replaceFile; the caller fsyncs the directory).
    func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(Failure) {
        if let f = Posix.replaceFile(path, with: bytes, sync: { fsync($0) }) {
            throw .io(path: f.path, operation: f.operation, errno: f.errno)
        }
    }

    func syncDirectory() throws(Failure) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: directory, operation: "open", errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw .io(path: directory, operation: "fsync", errno: errno) }
    }
}
