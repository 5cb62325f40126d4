#if canImport(Glibc)
import Glibc
#endif

/// The open rights dialogs' tickets (DialogTicket), where only root reads and writes them:
///
///     <state_dir>/dialogs/               0700 root
///         ticket-<32 hex digits>         0600, a random name, created with O_EXCL as
///                                        new-<same digits> and linked when whole
///
/// The dialog creates its ticket before it asks polkitd and removes it when it ends. A
/// dialog ended by the hard deadline or a kill leaves its ticket behind: it names the
/// process that ran the dialog, and a ticket whose process is gone is removed by the next
/// writer or dialog and never written to. Writers append one whole line under an exclusive
/// flock; the reader takes a shared one.
public struct DialogTickets {
    public let directory: String
    private let owner: uid_t

    public init(stateDirectory: String, owner: uid_t = geteuid()) {
        let base = stateDirectory.hasSuffix("/") ? String(stateDirectory.dropLast()) : stateDirectory
        directory = base + "/dialogs"
        self.owner = owner
    }

    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// A new ticket for `ticket`'s dialog; returns its path. Written whole under a name no
    /// reader looks at, then linked to its own (which fails if it exists, as O_EXCL does):
    /// a writer or a sweep never sees a ticket without its header.
    public func create(_ ticket: DialogTicket) throws(Failure) -> String {
        try prepare(create: true)
        guard let random = Crypto.randomBytes(16) else { throw Failure(description: "no random bytes for a ticket's name") }
        let name = Crypto.hex(random)
        let draft = directory + "/new-" + name, path = directory + "/ticket-" + name
        let fd = open(draft, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "create \(draft): \(errnoText(errno))") }
        var failure: String?
        if fchmod(fd, 0o600) != 0 || Posix.writeAll(fd, ticket.encodedHeader()) != nil {
            failure = "write \(draft): \(errnoText(errno))"
        } else if link(draft, path) != 0 {
            failure = "link \(path): \(errnoText(errno))"
        }
        close(fd)
        unlink(draft)
        if let failure { throw Failure(description: failure) }
        return path
    }

    public func read(_ path: String) throws(Failure) -> DialogTicket {
        let fd = try openTicket(path, O_RDONLY)
        defer { close(fd) }
        _ = lock(fd, LOCK_SH)
        guard case .success(let bytes) = Posix.readAll(fd, limit: 64 * 1024), bytes.count <= 64 * 1024 else {
            throw Failure(description: "read \(path): unreadable or too long")
        }
        do { return try DialogTicket.decode(bytes) } catch {
            throw Failure(description: "\(path) is damaged: \(error)")
        }
    }

    public func remove(_ path: String) {
        unlink(path)
    }

    /// Appends `match` to every ticket of `user` whose dialog is still running (`isAlive`),
    /// and removes the tickets of dialogs that ended. Returns how many tickets it went to.
    @discardableResult
    public func record(_ match: DialogTicket.Match, user: String,
                       isAlive: (DialogTicket.Process) -> Bool) -> Int {
        var written = 0
        for path in sweep(isAlive: isAlive) {
            guard let ticket = try? read(path), ticket.user == user,
                  let fd = try? openTicket(path, O_WRONLY | O_APPEND) else { continue }
            if lock(fd, LOCK_EX), Posix.writeAll(fd, DialogTicket.encoded(match)) == nil { written += 1 }
            close(fd)
        }
        return written
    }

    /// Removes the tickets of dialogs that ended (or that cannot be read); returns the
    /// paths of the others. No directory (no dialog ever ran): none.
    @discardableResult
    public func sweep(isAlive: (DialogTicket.Process) -> Bool) -> [String] {
        guard (try? prepare(create: false)) != nil else { return [] }
        var live: [String] = []
        for path in names().map({ directory + "/" + $0 }) {
            guard let ticket = try? read(path), isAlive(ticket.dialog) else {
                unlink(path)
                continue
            }
            live.append(path)
        }
        return live
    }

    // MARK: - Files

    /// `dialogs/`: created 0700 when missing (by a dialog only: a writer finds nothing to
    /// write to then), else it must be the owner's directory (not a symlink) closed to others.
    private func prepare(create: Bool) throws(Failure) {
        var st = stat()
        if lstat(directory, &st) != 0 {
            guard create, errno == ENOENT, mkdir(directory, 0o700) == 0 || errno == EEXIST, lstat(directory, &st) == 0 else {
                throw Failure(description: "\(directory): missing and cannot be created: \(errnoText(errno))")
            }
        }
        guard Posix.isDirectory(st), st.st_uid == owner, st.st_mode & 0o077 == 0 else {
            throw Failure(description: "\(directory): not a directory of uid \(owner) with mode 0700")
        }
    }

    /// The ticket opened, when it is the owner's regular file closed to others.
    private func openTicket(_ path: String, _ flags: Int32) throws(Failure) -> Int32 {
        let fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw Failure(description: "open \(path): \(errnoText(errno))") }
        guard let st = Posix.fileStat(fd), Posix.isRegular(st), st.st_uid == owner, st.st_mode & 0o077 == 0 else {
            close(fd)
            throw Failure(description: "\(path): not a regular file of uid \(owner) with mode 0600")
        }
        return fd
    }

    private func lock(_ fd: Int32, _ how: Int32) -> Bool {
        while flock(fd, how) != 0 {
            guard errno == EINTR else { return false }
        }
        return true
    }

    private func names() -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var out: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix("ticket-") { out.append(name) }
        }
        return out
    }
}
