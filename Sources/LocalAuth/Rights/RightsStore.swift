#if canImport(Glibc)
import Glibc
#endif

/// The rights of one user (docs/API.md, "Rights"), where only root reads them:
///
///     <state_dir>/rights/                0700 root
///     <state_dir>/rights/<uid>/          0700 root, one directory per user
///         <key>.right                    0600: a RightRecord (the secret and the private key)
///         <key>.grant                    0600: the process it is authorized for (RightGrant)
///         <key>.right.damaged            a damaged record moved aside, never lost
///         .lock                          flock(LOCK_EX) around every change
///
/// `<key>` is the hex SHA-256 of the program's path, a NUL and the identifier: each program
/// has its own namespace (as each app has on Apple's platforms), so another program asking
/// for the same identifier finds nothing. The record repeats the uid, program and
/// identifier, and a record that disagrees with where it lies is damaged.
///
/// Files are opened with O_NOFOLLOW and must be regular, the store's and closed to others.
/// A write goes to a temporary file, fsynced, renamed over the old one, and the directory
/// fsynced: a crash leaves the old record or the new one, never half of one. Reads that
/// pair a record with its grant take the lock shared (`reading`).
///
/// Any user can save rights, and the files are root's on root's file system: a save that
/// would take a user past `maxRights` records or `maxBytes`, or leave less than
/// `freeSpaceFloor` free for others, is refused (`full`).
public struct RightsStore {
    public let directory: String
    public let uid: UInt32
    let owner: uid_t

    /// Records per user, counting damaged ones kept aside.
    public static let maxRights = 64
    /// Bytes of records per user (a record holds at most a 1 KiB secret and a key pair).
    public static let maxBytes = 512 * 1024
    /// Bytes that must stay free for unprivileged users on the store's file system.
    public static let freeSpaceFloor: UInt64 = 64 * 1024 * 1024

    public init(stateDirectory: String, uid: UInt32, owner: uid_t = geteuid()) {
        let base = stateDirectory.hasSuffix("/") ? String(stateDirectory.dropLast()) : stateDirectory
        directory = base + "/rights/\(uid)"
        self.uid = uid
        self.owner = owner
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// A directory or file that cannot be trusted (owner, mode, type).
        case unsafe(path: String, why: String)
        case io(path: String, operation: String, errno: Int32)
        /// A record that cannot be read; it is left where it is (or moved aside on a save).
        case damaged(path: String, why: String)
        /// A limit that a save would pass (the number of rights, their bytes, free space).
        case full(why: String)

        public var description: String {
            switch self {
            case .unsafe(let path, let why): return "rights store \(path): \(why)"
            case .io(let path, let operation, let e): return "\(operation) \(path): \(errnoText(e))"
            case .damaged(let path, let why): return "rights store: \(path) is damaged (\(why)); it was left untouched"
            case .full(let why): return "rights store: \(why); nothing was saved"
            }
        }
    }

    // MARK: - Records

    public func load(program: String, identifier: String) throws(Failure) -> RightRecord? {
        try prepare()
        let path = file(program, identifier, ".right")
        guard let bytes = try read(path, limit: 16 * 1024) else { return nil }
        let record: RightRecord
        do { record = try RightRecord.decode(bytes) } catch {
            throw .damaged(path: path, why: error.why)
        }
        guard record.uid == uid, record.program == program, record.identifier == identifier else {
            throw .damaged(path: path, why: "it names another user, program or identifier")
        }
        return record
    }

    /// Saves (or replaces) a record; a damaged one in its place is moved aside first.
    public func save(_ record: RightRecord) throws(Failure) {
        try prepare()
        try locked { () throws(Failure) in
            let path = file(record.program, record.identifier, ".right")
            let bytes = record.encoded()
            try checkRoom(for: bytes.count, replacing: path)
            if exists(path), !readable(path) { rename(path, path + ".damaged") }
            try writeAtomically(path, bytes)
            unlink(file(record.program, record.identifier, ".grant"))  // a new right starts unauthorized
            try syncDirectory()
        }
    }

    /// True when there was a record.
    @discardableResult
    public func remove(program: String, identifier: String) throws(Failure) -> Bool {
        try prepare()
        return try locked { () throws(Failure) -> Bool in
            unlink(file(program, identifier, ".grant"))
            let path = file(program, identifier, ".right")
            guard unlink(path) == 0 else {
                if errno == ENOENT { return false }
                throw .io(path: path, operation: "unlink", errno: errno)
            }
            try syncDirectory()
            return true
        }
    }

    public enum RemoveAll: Equatable {
        case removed(Int)
        /// Nothing was removed: this many of the program's rights were not `allowed`.
        case refused(notAllowed: Int)
    }

    /// Removes every right `program` saved for this user, all or nothing: when `allowed`
    /// says no for any of them (given the record and its grant, if any), none is removed.
    public func removeAll(program: String, allowed: (RightRecord, RightGrant?) -> Bool) throws(Failure) -> RemoveAll {
        try prepare()
        return try locked { () throws(Failure) -> RemoveAll in
            var paths: [String] = []
            var refused = 0
            for name in try names() where name.hasSuffix(".right") {
                let path = directory + "/" + name
                guard let bytes = try? read(path, limit: 16 * 1024),
                      let record = try? RightRecord.decode(bytes), record.program == program else { continue }
                let grant = (try? read(String(path.dropLast(".right".count)) + ".grant", limit: 1024))
                    .flatMap { $0 }.flatMap(RightGrant.decode)
                if allowed(record, grant) { paths.append(path) } else { refused += 1 }
            }
            guard refused == 0 else { return .refused(notAllowed: refused) }
            var removed = 0
            for path in paths {
                unlink(String(path.dropLast(".right".count)) + ".grant")
                if unlink(path) == 0 { removed += 1 }
            }
            try syncDirectory()
            return .removed(removed)
        }
    }

    /// `body` under the lock, shared: no change happens while it reads.
    public func reading<T>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        try prepare()
        return try locked(LOCK_SH, body)
    }

    // MARK: - Grants

    public func grant(_ grant: RightGrant, program: String, identifier: String) throws(Failure) {
        try prepare()
        try locked { () throws(Failure) in
            try writeAtomically(file(program, identifier, ".grant"), grant.encoded())
            try syncDirectory()
        }
    }

    public func grant(program: String, identifier: String) throws(Failure) -> RightGrant? {
        try prepare()
        let path = file(program, identifier, ".grant")
        guard let bytes = try read(path, limit: 1024) else { return nil }
        return RightGrant.decode(bytes)
    }

    public func revoke(program: String, identifier: String) throws(Failure) {
        try prepare()
        try locked { () throws(Failure) in
            if unlink(file(program, identifier, ".grant")) == 0 { try syncDirectory() }
        }
    }

    // MARK: - Files

    func file(_ program: String, _ identifier: String, _ suffix: String) -> String {
        directory + "/" + Crypto.hex(Crypto.sha256(Array(program.utf8) + [0] + Array(identifier.utf8))) + suffix
    }

    /// A record that decodes (a damaged one is kept aside before it is replaced).
    private func readable(_ path: String) -> Bool {
        guard let bytes = try? read(path, limit: 16 * 1024) else { return false }
        return (try? RightRecord.decode(bytes)) != nil
    }

    /// The user's records and their bytes, with the new one in place of `replacing`, must
    /// stay within the limits, and the file system keep its floor free.
    private func checkRoom(for size: Int, replacing path: String) throws(Failure) {
        var count = 1
        var bytes = size
        for name in try names() where name.hasSuffix(".right") || name.hasSuffix(".damaged") {
            let other = directory + "/" + name
            guard other != path else { continue }
            var st = stat()
            guard lstat(other, &st) == 0 else { continue }
            count += 1
            bytes += Int(st.st_size)
        }
        if count > Self.maxRights {
            throw .full(why: "uid \(uid) would have \(count) rights, more than \(Self.maxRights)")
        }
        if bytes > Self.maxBytes {
            throw .full(why: "uid \(uid)'s rights would take \(bytes) bytes, more than \(Self.maxBytes)")
        }
        try checkFreeSpace(size)
    }
}

/// The store's files are kept as the SSH key store's are (OwnedFileStore).
extension RightsStore: OwnedFileStore {}

extension RightsStore.Failure: OwnedFileFailure {}
