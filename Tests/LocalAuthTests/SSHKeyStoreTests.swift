#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// Root's store of the users' SSH keys (SSHKeyStore): records per uid, their files, the
/// per-user limit, damaged records, approvals kept for reuse and the ring of last uses.
@Suite struct SSHKeyStoreTests {
    func record(_ store: SSHKeyStore, _ name: String = "work", requirement: SSHKeyRequirement = .biometry,
                reuse: Int = 0) throws -> SSHKeyRecord {
        let pair = try P256.generate()
        return SSHKeyRecord(name: name, uid: store.uid, requirement: requirement, reuseSeconds: reuse,
                            forwardingAllowed: false, comment: "alice@laptop",
                            domainState: requirement == .biometryCurrentSet ? String(repeating: "ab", count: 32) : nil,
                            created: 1_765_000_000, privateKey: pair.privateKey, publicKey: pair.publicKey)
    }

    @Test func aKeyIsKeptPerUserFoundByItsBlobAndRemoved() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        let key = try record(store)
        try store.create(key)
        #expect(try store.load(name: "work") == key)
        #expect(try store.list() == [key])
        #expect(try store.find(publicBlob: SSHKeyText.blob(point: key.publicKey)) == key)
        #expect(try store.find(publicBlob: Array(SSHKeyText.blob(point: key.publicKey).dropLast())) == nil)
        // Another uid sees none of it.
        let other = SSHKeyStore(stateDirectory: dir.path, uid: 1001)
        #expect(try other.load(name: "work") == nil && other.list().isEmpty)
        #expect(try other.find(publicBlob: SSHKeyText.blob(point: key.publicKey)) == nil)
        var st = stat()
        #expect(stat(dir.path + "/ssh/1000", &st) == 0 && st.st_mode & 0o777 == 0o700)
        #expect(stat(store.file("work"), &st) == 0 && st.st_mode & 0o777 == 0o600)
        // The name is taken: create refuses, and the first key stays.
        #expect(throws: SSHKeyStore.Failure.exists(name: "work")) { try store.create(try record(store)) }
        #expect(try store.load(name: "work") == key)
        #expect(try store.remove(name: "work"))
        #expect(try !store.remove(name: "work"))
        #expect(try store.list().isEmpty)
    }

    @Test func thePublicListingHoldsNoPrivateBytesAndNeverDecodesThem() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        let key = try record(store)
        try store.create(key)
        #expect(try store.publicListing() == [SSHKeyListing(key)])
        #expect(try SSHKeyStore(stateDirectory: dir.path, uid: 1001).publicListing().isEmpty)
        let publicOnly = try SSHKeyRecord.decode(key.encoded(), privateKey: false)
        #expect(publicOnly.privateKey.isEmpty && publicOnly.publicKey == key.publicKey && publicOnly.name == key.name)
        let privateHex = Crypto.hex(key.privateKey)
        #expect(try !store.publicListing().contains { $0.line.contains(privateHex) })
        // The private key's line is not read at all: one that is not hex still lists the key
        // (signing, which reads the whole record, refuses it as damaged).
        let text = String(decoding: key.encoded(), as: UTF8.self).split(separator: "\n")
            .map { $0.hasPrefix("private_key=") ? "private_key=not hex" : String($0) }.joined(separator: "\n") + "\n"
        let fd = open(store.file("work"), O_WRONLY | O_TRUNC)
        _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
        #expect(try store.publicListing().map(\.name) == ["work"])
        #expect(try store.list().isEmpty)
    }

    @Test(arguments: ["", "../x", "a/b", ".hidden", "-rf", "a b", "é", String(repeating: "k", count: 65), "a\nb"])
    func aNameThatIsNoFileNameIsRefused(_ name: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        #expect(SSHKeyRecord.nameProblem(name) != nil)
        #expect(throws: SSHKeyStore.Failure.self) { try store.load(name: name) }
        #expect(throws: SSHKeyStore.Failure.self) { try store.remove(name: name) }
        var key = try record(store)
        key.name = name
        #expect(throws: SSHKeyStore.Failure.self) { try store.create(key) }
    }

    @Test func namesOfSixtyFourBytesAndItsCharactersAreTaken() {
        #expect(SSHKeyRecord.nameProblem(String(repeating: "k", count: 64)) == nil)
        #expect(SSHKeyRecord.nameProblem("Work_laptop-2.old") == nil)
    }

    @Test func aUserIsHeldToTheLimitOfKeys() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        for i in 0..<SSHKeyStore.maxKeys { try store.create(try record(store, "k\(i)")) }
        guard case .full? = #expect(throws: SSHKeyStore.Failure.self, performing: {
            try store.create(try record(store, "one-more"))
        }) else { return }
        #expect(try store.load(name: "one-more") == nil)
        // Another user's limit is their own.
        try SSHKeyStore(stateDirectory: dir.path, uid: 1001).create(try record(SSHKeyStore(stateDirectory: dir.path, uid: 1001)))
    }

    @Test func aDamagedRecordIsNamedNeverReadAndMovedAsideByACreate() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        try store.create(try record(store))
        let path = store.file("work")
        let fd = open(path, O_WRONLY | O_TRUNC)
        _ = write(fd, "version=1\nname=work\n", 20)
        close(fd)
        guard case .damaged? = #expect(throws: SSHKeyStore.Failure.self, performing: { try store.load(name: "work") }) else {
            return
        }
        #expect(try store.list().isEmpty && store.damagedNames() == ["work"])
        let fresh = try record(store)
        try store.create(fresh)
        #expect(try store.load(name: "work") == fresh)
        var st = stat()
        #expect(lstat(path + ".damaged", &st) == 0)
        #expect(try store.damagedNames() == ["work"])  // still kept aside, still counted
        #expect(try store.remove(name: "work"))
        #expect(lstat(path + ".damaged", &st) != 0)
    }

    @Test func aRecordOfAnotherUserOrNameIsDamaged() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        try store.create(try record(store))
        // Bob's record copied into alice's directory under another name.
        let renamed = store.file("other")
        #expect(rename(store.file("work"), renamed) == 0)
        guard case .damaged? = #expect(throws: SSHKeyStore.Failure.self, performing: { try store.load(name: "other") }) else {
            return
        }
    }

    @Test func aSymlinkOrAnOpenDirectoryIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        try store.create(try record(store))
        #expect(symlink(store.file("work"), store.file("link")) == 0)
        guard case .damaged? = #expect(throws: SSHKeyStore.Failure.self, performing: { try store.load(name: "link") }) else {
            return
        }
        chmod(store.directory, 0o755)
        guard case .unsafe? = #expect(throws: SSHKeyStore.Failure.self, performing: { try store.list() }) else { return }
    }

    @Test func aPolicyChangeIsKeptAndForgetsTheApprovals() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        let key = try record(store, reuse: 60)
        try store.create(key)
        let at = BootStamp(bootID: "boot-1", millis: 5_000)
        try store.recordUse(for: key, scope: "host:SHA256:abc", at: at)
        #expect(try store.reuse(for: key, scope: "host:SHA256:abc") == at)
        let changed = try store.setPolicy(name: "work", reuseSeconds: 120, forwardingAllowed: true)
        #expect(changed?.reuseSeconds == 120 && changed?.forwardingAllowed == true && changed?.requirement == .biometry)
        #expect(try store.load(name: "work") == changed)
        #expect(try store.reuse(for: changed!, scope: "host:SHA256:abc") == nil)
        #expect(try store.setPolicy(name: "none", reuseSeconds: 1) == nil)
        #expect(throws: SSHKeyStore.Failure.self) { try store.setPolicy(name: "work", reuseSeconds: 301) }
        #expect(try store.load(name: "work")?.reuseSeconds == 120)
    }

    @Test func approvalsArePerKeyAndScopeAndNotInheritedByANewKeyOfTheName() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        let key = try record(store, reuse: 300)
        let other = try record(store, "other", reuse: 300)
        try store.create(key)
        try store.create(other)
        let first = BootStamp(bootID: "b", millis: 1_000)
        let later = BootStamp(bootID: "b", millis: 2_000)
        try store.recordUse(for: key, scope: "ns:git", at: first)
        try store.recordUse(for: key, scope: "ns:git", at: later)
        try store.recordUse(for: key, scope: "host:SHA256:x", at: first)
        #expect(try store.reuse(for: key, scope: "ns:git") == later)
        #expect(try store.reuse(for: key, scope: "ns:file") == nil)
        #expect(try store.reuse(for: other, scope: "ns:git") == nil)
        // A key with no reuse window keeps nothing.
        let never = try record(store, "never", reuse: 0)
        try store.create(never)
        try store.recordUse(for: never, scope: "ns:git", at: later)
        #expect(try store.reuse(for: never, scope: "ns:git") == nil)
        // Removed and created again under the name: a new key, no approval.
        #expect(try store.remove(name: "work"))
        let again = try record(store, reuse: 300)
        try store.create(again)
        #expect(try store.reuse(for: again, scope: "ns:git") == nil)
        // Even if a stale line survived (a crash between), the key id differs.
        try store.recordUse(for: key, scope: "host:SHA256:y", at: later)
        #expect(try store.reuse(for: again, scope: "host:SHA256:y") == nil)
    }

    @Test func aDamagedReuseFileReusesNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        let key = try record(store, reuse: 300)
        try store.create(key)
        try store.recordUse(for: key, scope: "ns:git", at: BootStamp(bootID: "b", millis: 1))
        let fd = open(store.reusePath, O_WRONLY | O_APPEND)
        _ = write(fd, "garbage\n", 8)
        close(fd)
        #expect(try store.reuse(for: key, scope: "ns:git") == nil)
        // The next approval starts the file again.
        try store.recordUse(for: key, scope: "ns:git", at: BootStamp(bootID: "b", millis: 2))
        #expect(try store.reuse(for: key, scope: "ns:git") == BootStamp(bootID: "b", millis: 2))
    }

    @Test func theLastUsesAreARing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = SSHKeyStore(stateDirectory: dir.path, uid: 1000)
        #expect(try store.lastUses().isEmpty)
        for i in 0..<(SSHKeyStore.maxUses + 7) {
            try store.appendUse(SSHKeyUse(at: Timestamp(i), key: "work", what: "log in to host \(i) \u{2192} x",
                                          outcome: i % 2 == 0 ? "signed" : "refused-forwarded",
                                          chain: "git \u{2190} zsh\n\u{1b}[2J"))
        }
        let uses = try store.lastUses()
        #expect(uses.count == SSHKeyStore.maxUses)
        #expect(uses.first?.at == 7 && uses.last?.at == Timestamp(SSHKeyStore.maxUses + 6))
        #expect(uses.last?.chain == "git \u{2190} zsh\n\u{1b}[2J")  // kept as given; shown through printable()
        #expect(try store.lastUses(limit: 3).map(\.at) == [54, 55, 56])
        // An outcome that is not a word, and a key name that is none, are not written as given.
        try store.appendUse(SSHKeyUse(at: 99, key: "../x", what: "", outcome: "signed now", chain: ""))
        let last = try store.lastUses(limit: 1).first
        #expect(last?.key == "-" && last?.outcome == "other")
        // A long text is cut, not refused.
        try store.appendUse(SSHKeyUse(at: 100, key: "work", what: String(repeating: "w", count: 5000), outcome: "signed",
                                      chain: ""))
        #expect(try store.lastUses(limit: 1).first?.what.utf8.count == SSHKeyUse.maxText)
        // Cut between scalars: no half of a character (U+2190 is three bytes).
        try store.appendUse(SSHKeyUse(at: 101, key: "work", what: "w" + String(repeating: "\u{2190}", count: 100),
                                      outcome: "signed", chain: ""))
        let cut = try #require(try store.lastUses(limit: 1).first?.what)
        #expect(cut.utf8.count == 1 + 3 * 66 && !cut.contains("\u{FFFD}"))
    }
}
