#if canImport(Glibc)
import Glibc
#endif

/// What only root can have put in place: a file owned by root and writable by nobody else,
/// in directories that are root's and writable by nobody else (sticky ones such as /tmp
/// allowed: nobody can rename another's entry there). A user can neither change such a file
/// nor swap what its path names, so it says what the system installed, not what a user says.
public enum RootOwned {
    /// `st` (an lstat) is a regular file of root's that nobody else can write.
    public static func isRootsFile(_ st: stat) -> Bool {
        (st.st_mode & S_IFMT) == S_IFREG && st.st_uid == 0 && st.st_mode & 0o022 == 0
    }

    /// The first directory above `path` (an absolute path) that is not root's and writable by
    /// nobody else, and whether it is a directory at all; nil when every one is.
    public static func firstUntrustedDirectory(above path: String) -> (path: String, isDirectory: Bool)? {
        var dir = path
        while let slash = dir.lastIndex(of: "/") {
            dir = slash == dir.startIndex ? "/" : String(dir[..<slash])
            var st = stat()
            guard lstat(dir, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { return (dir, false) }
            let sticky = st.st_mode & S_ISVTX != 0
            guard st.st_uid == 0, st.st_mode & 0o022 == 0 || sticky else { return (dir, true) }
            if dir == "/" { break }
        }
        return nil
    }

    /// The path of `pid`'s executable when it is a program the system installed: a root's
    /// file in root's directories, the very file the process runs (device and inode, so a
    /// path whose file was swapped says nothing), and not an interpreter or a loader, whose
    /// script could be anyone's. nil otherwise, or when the process cannot be read.
    public static func installedProgram(of pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // A deleted file is named "PATH (deleted)": whatever the path names now is not it.
        guard path.hasPrefix("/"), !path.hasSuffix(" (deleted)") else { return nil }
        var running = stat()
        var named = stat()
        guard stat("/proc/\(pid)/exe", &running) == 0, lstat(path, &named) == 0,
              named.st_dev == running.st_dev, named.st_ino == running.st_ino,
              isRootsFile(named), firstUntrustedDirectory(above: path) == nil,
              !Interpreters.isInterpreter(path) else { return nil }
        return path
    }
}
