#if canImport(Glibc)
import Glibc
#endif

/// The SSH keys of one user, where only root reads them, with the same conventions as the
/// rights store (RightsStore):
///
///     <state_dir>/ssh/                   0700 root
///     <state_dir>/ssh/<uid>/             0700 root, one directory per user
///         <name>.key                     0600: an SSHKeyRecord (the private key)
///         <name>.key.damaged             a damaged record moved aside, never lost
///         reuse                          0600: approvals that may be reused (SSHKeyReuse)
///         uses                           0600: the last uses, a ring (SSHKeyUse)
///         .lock                          flock(LOCK_EX) around every change
///
/// A key's name is its file's name (SSHKeyRecord.nameProblem: never a path or a hidden
/// file); the record repeats the name and the uid, and one that disagrees with where it lies
/// is damaged. Files are opened with O_NOFOLLOW and must be regular, the store's and closed
/// to others; a write goes to a temporary file, fsynced, renamed over, the directory fsynced.
///
/// Any user can create keys, and the files are root's: a user is held to `maxKeys` records
/// (damaged ones counted) and the file system keeps `freeSpaceFloor` free for others.
public struct SSHKeyStore {
    public let directory: String
    public let uid: UInt32
    let owner: uid_t

    /// Keys per user, counting damaged ones kept aside.
    public static let maxKeys = 32
    /// Bytes that must stay free for unprivileged users on the store's file system.
    public static let freeSpaceFloor: UInt64 = 64 * 1024 * 1024
    /// The longest record read (a record is under 1 KiB).
    static let recordLimit = 4096

    public init(stateDirectory: String, uid: UInt32, owner: uid_t = geteuid()) {
        let base = stateDirectory.hasSuffix("/") ? String(stateDirectory.dropLast()) : stateDirectory
        directory = base + "/ssh/\(uid)"
        self.uid = uid
        self.owner = owner
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// A directory or file that cannot be trusted (owner, mode, type).
        case unsafe(path: String, why: String)
        case io(path: String, operation: String, errno: Int32)
        /// A record that cannot be read; it is left where it is (or moved aside on a create).
        case damaged(path: String, why: String)
        /// A limit a create would pass (the number of keys, free space).
        case full(why: String)
        /// A name that names no key (SSHKeyRecord.nameProblem).
        case badName(String)
        /// `create` under a name that has a key.
        case exists(name: String)

        public var description: String {
            switch self {
            case .unsafe(let path, let why): return "ssh key store \(path): \(why)"
            case .io(let path, let operation, let e): return "\(operation) \(path): \(errnoText(e))"
            case .damaged(let path, let why): return "ssh key store: \(path) is damaged (\(why)); it was left untouched"
            case .full(let why): return "ssh key store: \(why); nothing was saved"
            case .badName(let why): return why
            case .exists(let name): return "a key named \(name) exists already"
            }
        }
    }

    // MARK: - Keys

    /// Every key that reads whole, by name; damaged records are left out (`damagedNames`).
    public func list() throws(Failure) -> [SSHKeyRecord] {
        try prepare()
        var out: [SSHKeyRecord] = []
        for name in try names().sorted() where name.hasSuffix(".key") {
            if let record = try? load(name: String(name.dropLast(4))) { out.append(record) }
        }
        return out
    }

    /// The public facts of every key that reads whole, by name, for a process that must hold
    /// no private key (localauthd answering REQUEST_IDENTITIES): each record's private key
    /// line is skipped unread (SSHKeyRecord.decode(_:privateKey:)) and the bytes read are
    /// wiped. A record damaged in its private key alone is listed; signing refuses it.
    public func publicListing() throws(Failure) -> [SSHKeyListing] {
        try prepare()
        var out: [SSHKeyListing] = []
        for name in try names().sorted() where name.hasSuffix(".key") {
            if let record = try? load(name: String(name.dropLast(4)), privateKey: false) { out.append(SSHKeyListing(record)) }
        }
        return out
    }

    /// Names of keys whose record does not read (kept where they are, or moved aside).
    public func damagedNames() throws(Failure) -> [String] {
        try prepare()
        return try names().sorted().compactMap { name -> String? in
            if name.hasSuffix(".key.damaged") { return String(name.dropLast(".key.damaged".count)) }
            guard name.hasSuffix(".key") else { return nil }
            let key = String(name.dropLast(4))
            return (try? load(name: key)) == nil ? key : nil
        }
    }

    /// The key named `name`, nil when there is none.
    public func load(name: String) throws(Failure) -> SSHKeyRecord? {
        try load(name: name, privateKey: true)
    }

    private func load(name: String, privateKey: Bool) throws(Failure) -> SSHKeyRecord? {
        if let problem = SSHKeyRecord.nameProblem(name) { throw .badName(problem) }
        try prepare()
        let path = file(name)
        guard var bytes = try read(path, limit: Self.recordLimit) else { return nil }
        defer { if !privateKey { Crypto.wipe(&bytes) } }
        let record: SSHKeyRecord
        do { record = try SSHKeyRecord.decode(bytes, privateKey: privateKey) } catch { throw .damaged(path: path, why: error.why) }
        guard record.uid == uid, record.name == name else {
            throw .damaged(path: path, why: "it names another user or key")
        }
        return record
    }

    /// The key whose public key blob is `blob` (an agent's SIGN_REQUEST names its key so).
    public func find(publicBlob blob: [UInt8]) throws(Failure) -> SSHKeyRecord? {
        guard let point = SSHKeyText.point(blob: blob) else { return nil }
        return try find(publicPoint: point)
    }

    /// The key whose public point (0x04 || x || y) is `point`: found among the public facts,
    /// then that one record read whole, so a signature decodes no other key's private scalar.
    public func find(publicPoint point: [UInt8]) throws(Failure) -> SSHKeyRecord? {
        guard let name = try publicListing().first(where: { $0.publicKey == point })?.name else { return nil }
        return try load(name: name)
    }

    /// Saves a new key; refused when one has the name. A damaged record in its place is
    /// moved aside first (never lost, never read as this key).
    public func create(_ record: SSHKeyRecord) throws(Failure) {
        try check(record)
        try prepare()
        try locked { () throws(Failure) in
            let path = file(record.name)
            if exists(path) {
                guard !readable(path) else { throw .exists(name: record.name) }
                rename(path, path + ".damaged")
            }
            let bytes = record.encoded()
            try checkRoom(for: bytes.count, replacing: path)
            try writeAtomically(path, bytes)
            try forgetReuse(name: record.name)
            try syncDirectory()
        }
    }

    /// Replaces the key's record (the same name), as `setPolicy` does.
    public func save(_ record: SSHKeyRecord) throws(Failure) {
        try check(record)
        try prepare()
        try locked { () throws(Failure) in
            let path = file(record.name)
            if exists(path), !readable(path) { rename(path, path + ".damaged") }
            let bytes = record.encoded()
            try checkRoom(for: bytes.count, replacing: path)
            try writeAtomically(path, bytes)
            try forgetReuse(name: record.name)
            try syncDirectory()
        }
    }

    /// Changes what a key's signatures need (nil: unchanged) and returns the new record; nil
    /// when there is no such key. The key's approvals kept for reuse are forgotten: they were
    /// given under the old policy. The caller checks the change first (SSHKeyRule.policyChangeRefusal).
    @discardableResult
    public func setPolicy(name: String, requirement: SSHKeyRequirement? = nil, reuseSeconds: Int? = nil,
                          forwardingAllowed: Bool? = nil) throws(Failure) -> SSHKeyRecord? {
        try prepare()
        return try locked { () throws(Failure) -> SSHKeyRecord? in
            guard var record = try load(name: name) else { return nil }
            if let requirement { record.requirement = requirement }
            if let reuseSeconds { record.reuseSeconds = reuseSeconds }
            if let forwardingAllowed { record.forwardingAllowed = forwardingAllowed }
            try check(record)
            try writeAtomically(file(name), record.encoded())
            try forgetReuse(name: name)
            try syncDirectory()
            return record
        }
    }

    /// True when there was a key. Its approvals kept for reuse go with it; a damaged record
    /// kept aside under the name goes too (the user asked for the name to be gone).
    @discardableResult
    public func remove(name: String) throws(Failure) -> Bool {
        if let problem = SSHKeyRecord.nameProblem(name) { throw .badName(problem) }
        try prepare()
        return try locked { () throws(Failure) -> Bool in
            let path = file(name)
            try forgetReuse(name: name)
            let aside = unlink(path + ".damaged") == 0
            guard unlink(path) == 0 else {
                if errno == ENOENT { if aside { try syncDirectory() }; return aside }
                throw .io(path: path, operation: "unlink", errno: errno)
            }
            try syncDirectory()
            return true
        }
    }

    // MARK: - Checks

    /// A record the store may write: its name, uid, fields in range, a whole key pair.
    private func check(_ record: SSHKeyRecord) throws(Failure) {
        if let problem = SSHKeyRecord.nameProblem(record.name) { throw .badName(problem) }
        guard record.uid == uid else { throw .unsafe(path: directory, why: "a record of uid \(record.uid)") }
        do { _ = try SSHKeyRecord.decode(record.encoded()) } catch {
            throw .damaged(path: file(record.name), why: "the new record would not read back: \(error.why)")
        }
    }

    func file(_ name: String) -> String { directory + "/" + name + ".key" }
}
