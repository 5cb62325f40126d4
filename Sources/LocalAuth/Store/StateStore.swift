/// Persistent per-user state. The product's store is `FileStateStore`; tests may inject
/// others. Every change goes through `update`, which is atomic with respect to other
/// processes, so concurrent authentications never lose a count.
public protocol StateStore: AnyObject {
    /// Reads the user's state without changing it.
    func load(_ user: UserName) throws(StoreError) -> StoredState

    /// Read-modify-write under an exclusive lock. `change` receives the current state and
    /// returns the state to write, or nil to leave the file as it is. Returns what was
    /// written (or the unchanged state's `userState` when nil was returned).
    @discardableResult
    func update(_ user: UserName, durability: WriteDurability,
                _ change: (StoredState) -> UserState?) throws(StoreError) -> UserState

    /// The per-installation secret that keys the domain state, created on first use.
    func installationSecret() throws(StoreError) -> [UInt8]
}

/// Whether a write must reach the disk before `update` returns.
public enum WriteDurability: Sendable {
    /// Synced (file and directory): a counted try, a wrong password, a lockout. Lost to a
    /// power cut, it would give an attacker tries back.
    case synced
    /// Only loosens the state (a match, a try given back, a password): lost to a power cut,
    /// the stricter state written before it remains, or a damaged file, which unlocks
    /// nothing. Not synced, because the sync sits between the match and the caller going on.
    case loosening
}

extension StateStore {
    /// A synced update: the default for any write that is not known to only loosen.
    @discardableResult
    public func update(_ user: UserName,
                       _ change: (StoredState) -> UserState?) throws(StoreError) -> UserState {
        try update(user, durability: .synced, change)
    }
}

/// Why the store could not do what was asked. Never a reason to let anyone in.
public enum StoreError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The state directory is missing and could not be created, or is not safe
    /// (not a directory, wrong owner, writable by others).
    case unsafeDirectory(path: String, why: String)
    /// A system call failed on `path`.
    case io(path: String, operation: String, errno: Int32)
    /// The lock file `path` was still held by another process after `millis` ms.
    case lockHeld(path: String, millis: Int64)

    public var description: String {
        switch self {
        case .unsafeDirectory(let path, let why):
            return "state directory \(path): \(why)"
        case .io(let path, let operation, let code):
            return "\(operation) \(path): \(errnoText(code))"
        case .lockHeld(let path, let millis):
            return "\(path) is still held by another process after \(millis) ms: not waited for longer"
        }
    }
}
