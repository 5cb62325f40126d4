#if canImport(Glibc)
import Glibc
#endif

/// The bytes of small files as last read, given again while an lstat of the path shows the
/// same file unchanged: localauthd answers each application's preflight from the same few
/// files (the user's state, the enrolled-set record, the installation secret, the shadow
/// file), and reading each (open, fstat, read, close) cost more than the answer. Used by
/// localauthd only; a helper reads every file afresh.
///
/// "Unchanged" is the same device, inode, size, owner, mode, and modification and change
/// times to the nanosecond. Every file read here is replaced by a rename (a new inode), so
/// a change is a new stamp, with one exception the rule below closes: the kernel stamps
/// times at its clock tick (milliseconds), so a file written twice within one tick, at the
/// same size, on a reused inode could look the same. As git does for its index, a reading
/// is kept only once the file is older than `settledNanos`, so any later write has a
/// later time.
///
/// Not thread-safe: one service loop uses it.
public final class FileMemo {
    struct Stamp: Equatable {
        let dev: UInt64, ino: UInt64, size: Int64, uid: UInt32, mode: UInt32
        let mtime: timespec, ctime: timespec

        init(_ st: stat) {
            dev = UInt64(st.st_dev)
            ino = UInt64(st.st_ino)
            size = Int64(st.st_size)
            uid = st.st_uid
            mode = st.st_mode
            mtime = st.st_mtim
            ctime = st.st_ctim
        }

        static func == (a: Stamp, b: Stamp) -> Bool {
            a.dev == b.dev && a.ino == b.ino && a.size == b.size && a.uid == b.uid && a.mode == b.mode
                && a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec
                && a.ctime.tv_sec == b.ctime.tv_sec && a.ctime.tv_nsec == b.ctime.tv_nsec
        }
    }

    private struct Entry {
        let stamp: Stamp
        let bytes: [UInt8]
    }

    static let settledNanos: Int64 = 100_000_000
    static let maxEntries = 64
    private var entries: [String: Entry] = [:]

    public init() {}

    /// The bytes kept for `path` when it is still the file they were read from.
    func bytes(at path: String) -> [UInt8]? {
        guard let entry = entries[path] else { return nil }
        var st = stat()
        guard lstat(path, &st) == 0, Stamp(st) == entry.stamp else {
            entries[path] = nil
            return nil
        }
        return entry.bytes
    }

    /// Keeps `bytes`, read from the file `st` describes (fstat of the descriptor read), once
    /// that file has settled. `now`: CLOCK_REALTIME in ns (the tests give it).
    func keep(_ bytes: [UInt8], readFrom st: stat, at path: String, now: Int64 = FileMemo.realtimeNanos()) {
        let newest = max(Self.nanos(st.st_mtim), Self.nanos(st.st_ctim))
        guard now - newest >= Self.settledNanos else { return }
        if entries.count >= Self.maxEntries, entries[path] == nil { entries.removeAll() }
        entries[path] = Entry(stamp: Stamp(st), bytes: bytes)
    }

    static func realtimeNanos() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return nanos(now)
    }

    static func nanos(_ t: timespec) -> Int64 {
        Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }
}
