#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// A file as the service last saw it (device, inode, size, times). Root's configuration:
/// the helpers read the file for each request; the service keeps two things of it between
/// requests (the bus it follows and asks about fprintd, and the state directory its
/// records go to), so it reads the file again when it changed: an administrator who edits
/// `dbus_address` or `state_dir` needs no restart, and until the edit is read nothing of
/// the old one is lost. The helper's file: a helper started ahead (SpareHelper) is not used
/// once it changed (an upgrade).
struct FileStamp: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: timespec
    let changed: timespec

    /// nil when the file is missing (the defaults then apply): a file that appears later
    /// is a change.
    init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modified = st.st_mtim
        changed = st.st_ctim
    }

    static func == (a: FileStamp, b: FileStamp) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
            && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
    }
}

/// Wakes the service when something in the configuration file's directory is written,
/// created, moved or deleted (inotify), so an edit is read without waiting for a request.
/// Without it (inotify refused) the file is still compared at every wake-up.
struct ConfigDirectoryWatch {
    let fd: Int32

    init?(configPath: String) {
        let directory = configPath.lastIndex(of: "/").map { String(configPath[..<$0]) } ?? "."
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB)
        guard inotify_add_watch(fd, directory.isEmpty ? "/" : directory, mask) >= 0 else {
            close(fd)
            return nil
        }
        self.fd = fd
    }

    /// Reads the events away; which file they name does not matter (the stamp decides).
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }
}
