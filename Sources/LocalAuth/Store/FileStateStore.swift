#if canImport(Glibc)
import Glibc
#endif

/// One file per user in a root-only directory (default `/var/lib/localauth`):
///
///     <dir>/                 0700, owned by the store's effective uid
///     <dir>/<user>.state     0600: the state (StateFileFormat)
///     <dir>/<user>.lock      0600: held with flock(LOCK_EX) around every read-modify-write
///     <dir>/<user>.state.damaged   a damaged file moved aside when it is rewritten
///     <dir>/.secret          0600: the per-installation key of the domain state
///
/// Files are opened with O_NOFOLLOW; a symlink, a file owned by someone else or readable
/// by others is *damaged*, never trusted. Writes go to a temporary file that is renamed
/// over the old one, so a crash leaves either the old or the new state; a write that
/// could give tries back if lost is fsynced first (`WriteDurability`).
public final class FileStateStore: StateStore {
    public let directory: String
    private let owner: uid_t
    /// fsync(2); the tests count its calls.
    private let sync: (Int32) -> Int32
    /// localauthd's: files read are given again while unchanged (FileMemo), and the
    /// directory is checked once for the store's life, which is one preflight. nil (every
    /// other user): each read reads.
    private let memo: FileMemo?
    private var directoryChecked = false

    public convenience init(directory: String, memo: FileMemo? = nil) {
        self.init(directory: directory, sync: { fsync($0) }, memo: memo)
    }

    init(directory: String, sync: @escaping (Int32) -> Int32, memo: FileMemo? = nil) {
        self.directory = directory
        self.owner = geteuid()
        self.sync = sync
        self.memo = memo
    }

    public func load(_ user: UserName) throws(StoreError) -> StoredState {
        try checkDirectory()
        return readState(path(user, ".state"))
    }

    @discardableResult
    public func update(_ user: UserName, durability: WriteDurability,
                       _ change: (StoredState) -> UserState?) throws(StoreError) -> UserState {
        try checkDirectory()
        let lock = try openLock(path(user, ".lock"))
        defer { close(lock) }
        let statePath = path(user, ".state")
        let current = readState(statePath)
        guard let next = change(current) else { return current.userState }
        if case .damaged = current { moveAside(statePath) }
        // The first trust of the enrolled set tightens even inside a loosening write: lost,
        // the next match would trust whatever is enrolled by then.
        let pins = current.userState.trustedDomainState == nil && next.trustedDomainState != nil
        try writeAtomically(statePath, StateFileFormat.encode(next), synced: durability == .synced || pins)
        return next
    }

    /// How long `.secret.lock` is waited for. It is one lock for the whole installation,
    /// held only to read or create a 32-byte file: a holder past this is stuck (a helper
    /// frozen or throttled by the user whose cgroup it ran in), and another user's sign-in
    /// must not wait for it (it would wait the whole helper_timeout, then lose the finger).
    public static let secretLockBoundMillis: Int64 = 2000

    public func installationSecret() throws(StoreError) -> [UInt8] {
        try checkDirectory()
        let secretPath = directory + "/.secret"
        // Written once, by a rename: once there it is read without the lock, so a reader
        // (localauthd answering a preflight in its one loop) never waits for a holder.
        if let existing = try readSecret(secretPath) { return existing }
        let lock = try openLock(directory + "/.secret.lock", boundMillis: Self.secretLockBoundMillis)
        defer { close(lock) }
        if let existing = try readSecret(secretPath) { return existing }
        guard let fresh = Crypto.randomBytes(32) else {
            throw .io(path: secretPath, operation: "generate", errno: EIO)
        }
        try writeAtomically(secretPath, fresh)
        return fresh
    }

    /// Runs `body` holding the lock file `<dir>/<name>` (created 0600): for work that must
    /// happen one at a time beside the state itself. `name` starts with `.`, so it can never
    /// be a user's file (user names cannot start with a dot).
    public func withLock<T>(named name: String, _ body: () -> T) throws(StoreError) -> T {
        precondition(name.hasPrefix(".") && !name.contains("/"), "lock names are hidden files")
        try checkDirectory()
        let lock = try openLock(directory + "/" + name)
        defer { close(lock) }
        return body()
    }

    // MARK: - The enrolled set's record (EnrollmentRecord)

    /// `<user>.enrolled`: nil when missing, damaged, or not the store's own file.
    public func enrollmentRecord(_ user: UserName) -> EnrollmentRecord? {
        guard (try? checkDirectory()) != nil else { return nil }
        let path = path(user, ".enrolled")
        if let known = memo?.bytes(at: path) { return EnrollmentRecord.decode(known) }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard ownershipProblem(fd, path) == nil,
              case .success(let bytes) = Posix.readAll(fd, limit: EnrollmentRecord.maxSize) else { return nil }
        remember(bytes, readFrom: fd, at: path)
        return EnrollmentRecord.decode(bytes)
    }

    /// Written only when it says something new (a preflight repeated reads the same set):
    /// renamed into place, not synced, since a lost record only costs a helper.
    public func saveEnrollmentRecord(_ record: EnrollmentRecord, for user: UserName) throws(StoreError) {
        try checkDirectory()
        if let old = enrollmentRecord(user), old.set == record.set, old.storage == record.storage,
           old.bootID == record.bootID, record.readAt >= old.readAt,
           record.readAt - old.readAt < EnrollmentRecord.maxAgeNanos / 2 { return }
        try writeAtomically(path(user, ".enrolled"), record.encoded(), synced: false)
    }

    // MARK: - Paths and the directory

    func path(_ user: UserName, _ suffix: String) -> String {
        directory + "/" + user.value + suffix
    }

    /// The same check for a reader that lists the directory (`status --all`).
    public func checkDirectoryForReading() throws(StoreError) { try checkDirectory() }

    /// The directory must be ours and closed to others; a missing one is created 0700.
    func checkDirectory() throws(StoreError) {
        if directoryChecked { return }
        try checkDirectoryNow()
        directoryChecked = memo != nil
    }

    private func checkDirectoryNow() throws(StoreError) {
        var st = stat()
        if lstat(directory, &st) != 0 {
            guard errno == ENOENT else { throw .io(path: directory, operation: "stat", errno: errno) }
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw .unsafeDirectory(path: directory, why: "missing and cannot be created: \(errnoText(errno))")
            }
            guard lstat(directory, &st) == 0 else { throw .io(path: directory, operation: "stat", errno: errno) }
        }
        guard Posix.isDirectory(st) else {
            throw .unsafeDirectory(path: directory, why: "not a directory (or a symlink)")
        }
        guard st.st_uid == owner else {
            throw .unsafeDirectory(path: directory, why: "owned by uid \(st.st_uid), expected \(owner)")
        }
        guard st.st_mode & 0o077 == 0 else {
            throw .unsafeDirectory(path: directory, why: "mode \(Posix.modeText(st)), expected 0700")
        }
    }

    // MARK: - Reading

    /// Reads a state file. Every problem short of "no file" makes it damaged.
    func readState(_ path: String) -> StoredState {
        if let known = memo?.bytes(at: path) { return decodeState(known, path) }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            switch errno {
            case ENOENT: return .fresh
            case ELOOP: return .damaged(cause: "\(path) is a symlink")
            default: return .damaged(cause: "\(path): \(errnoText(errno))")
            }
        }
        defer { close(fd) }
        if let problem = ownershipProblem(fd, path) { return .damaged(cause: problem) }
        switch Posix.readAll(fd, limit: StateFileFormat.maxSize) {
        case .failure(let e): return .damaged(cause: "\(path): \(errnoText(e.code))")
        case .success(let bytes):
            remember(bytes, readFrom: fd, at: path)
            return decodeState(bytes, path)
        }
    }

    private func decodeState(_ bytes: [UInt8], _ path: String) -> StoredState {
        switch StateFileFormat.decode(bytes) {
        case .success(let state): return .state(state)
        case .failure(let damage): return .damaged(cause: "\(path) is corrupt: \(damage.why)")
        }
    }

    /// Into the memo (when there is one): only files that passed ownershipProblem.
    private func remember(_ bytes: [UInt8], readFrom fd: Int32, at path: String) {
        guard let memo, let st = Posix.fileStat(fd) else { return }
        memo.keep(bytes, readFrom: st, at: path)
    }

    /// Why a file we opened cannot be trusted, or nil.
    private func ownershipProblem(_ fd: Int32, _ path: String) -> String? {
        guard let st = Posix.fileStat(fd) else { return "\(path): fstat failed: \(errnoText(errno))" }
        guard Posix.isRegular(st) else { return "\(path) is not a regular file" }
        guard st.st_uid == owner else { return "\(path) is owned by uid \(st.st_uid), expected \(owner)" }
        guard st.st_mode & 0o077 == 0 else { return "\(path) has mode \(Posix.modeText(st)), expected 0600" }
        return nil
    }

    private func readSecret(_ path: String) throws(StoreError) -> [UInt8]? {
        if let known = memo?.bytes(at: path), known.count == 32 { return known }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .io(path: path, operation: "open", errno: errno)
        }
        defer { close(fd) }
        if let problem = ownershipProblem(fd, path) {
            throw .unsafeDirectory(path: directory, why: problem)
        }
        switch Posix.readAll(fd, limit: 64) {
        case .failure(let e): throw .io(path: path, operation: "read", errno: e.code)
        case .success(let bytes):
            guard bytes.count == 32 else {
                throw .unsafeDirectory(path: directory, why: "\(path) is not a 32-byte secret")
            }
            remember(bytes, readFrom: fd, at: path)
            return bytes
        }
    }

    // MARK: - Locking and writing

    /// Opens (creating) and exclusively locks a lock file; returns its descriptor.
    /// The lock file, held (flock LOCK_EX); with `boundMillis`, `.lockHeld` when another
    /// process still holds it after that long, else it waits as long as it takes.
    private func openLock(_ path: String, boundMillis: Int64? = nil) throws(StoreError) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard fd >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
        if let problem = ownershipProblem(fd, path) {
            close(fd)
            throw .unsafeDirectory(path: directory, why: problem)
        }
        let deadline = boundMillis.map { MonotonicClock.millis() + $0 }
        while flock(fd, deadline == nil ? LOCK_EX : LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            if e == EINTR { continue }
            if e == EWOULDBLOCK, let deadline, let boundMillis {
                if MonotonicClock.millis() < deadline {
                    var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
                    nanosleep(&pause, nil)
                    continue
                }
                close(fd)
                throw .lockHeld(path: path, millis: boundMillis)
            }
            close(fd)
            throw .io(path: path, operation: "lock", errno: e)
        }
        return fd
    }

    /// temp file → fsync → rename → fsync(directory) (Posix.replaceFile); without `synced`,
    /// no fsync.
    private func writeAtomically(_ path: String, _ bytes: [UInt8], synced: Bool = true) throws(StoreError) {
        if let f = Posix.replaceFile(path, with: bytes, sync: synced ? sync : nil) {
            throw .io(path: f.path, operation: f.operation, errno: f.errno)
        }
        if synced { try syncDirectory() }
    }

    /// The rename reaches the disk: a counted try that may not is not counted.
    private func syncDirectory() throws(StoreError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: directory, operation: "open", errno: errno) }
        defer { close(fd) }
        guard sync(fd) == 0 else { throw .io(path: directory, operation: "fsync", errno: errno) }
    }

    /// Keeps a damaged file for inspection instead of losing it; a symlink is only removed
    /// (its target is never touched).
    private func moveAside(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFLNK {
            unlink(path)
        } else {
            rename(path, path + ".damaged")
        }
    }
}
