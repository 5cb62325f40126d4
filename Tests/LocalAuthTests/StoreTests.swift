#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// The state store: files that never unlock anything they should not, and never lose data.
@Suite struct StoreTests {
    let dir = TempDir()
    var store: FileStateStore { FileStateStore(directory: dir.path + "/state") }
    let alice = try! UserName("alice")

    func path(_ suffix: String = ".state") -> String { dir.path + "/state/alice" + suffix }

    func seeded() throws -> FileStateStore {
        let s = store
        try s.update(alice) { _ in
            var u = UserState()
            u.consecutiveFailures = 2
            u.lastPasswordAt = 1_800_000_000
            u.bootID = "b"
            return u
        }
        return s
    }

    @Test func aMissingFileIsAFreshUserAndTheDirectoryIsCreatedPrivate() throws {
        #expect(try store.load(alice) == .fresh)
        var st = stat()
        #expect(stat(dir.path + "/state", &st) == 0)
        #expect(st.st_mode & 0o777 == 0o700)
    }

    @Test func stateRoundTripsWithPrivateModes() throws {
        let s = try seeded()
        guard case .state(let u) = try s.load(alice) else { Issue.record("not loaded"); return }
        #expect(u.consecutiveFailures == 2)
        #expect(u.lastPasswordAt == 1_800_000_000)
        #expect(u.bootID == "b")
        var st = stat()
        #expect(stat(path(), &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(stat(path(".lock"), &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(StoreFixtures.read(path())?.hasPrefix("localauth-state 1\nfailures=2\n") == true)
    }

    @Test func aCorruptFileIsDamagedWithItsPath() throws {
        let s = try seeded()
        try StoreFixtures.write(path(), "localauth-state 1\nfailures=0\nsha256=00\n")
        #expect(try s.load(alice) == .damaged(cause: "\(path()) is corrupt: checksum mismatch"))
        try StoreFixtures.write(path(), "\u{1}\u{2}binary")
        #expect(try s.load(alice) == .damaged(cause: "\(path()) is corrupt: truncated (no checksum line)"))
    }

    @Test func aTruncatedFileIsDamaged() throws {
        let s = try seeded()
        let full = StoreFixtures.read(path())!
        try StoreFixtures.write(path(), String(full.prefix(full.count - 20)))
        #expect(try s.load(alice) == .damaged(cause: "\(path()) is corrupt: truncated (no checksum line)"))
        try StoreFixtures.write(path(), "")
        #expect(try s.load(alice) == .damaged(cause: "\(path()) is corrupt: truncated (no checksum line)"))
    }

    @Test func anEditedCountIsCaughtByTheChecksum() throws {
        let s = try seeded()
        let edited = StoreFixtures.read(path())!.replacingFirst("failures=2", with: "failures=0")
        try StoreFixtures.write(path(), edited)
        #expect(try s.load(alice) == .damaged(cause: "\(path()) is corrupt: checksum mismatch"))
    }

    @Test func aSymlinkIsRefusedAndItsTargetNeverTouched() throws {
        let s = try seeded()
        let target = dir.path + "/elsewhere"
        try StoreFixtures.write(target, "keep me")
        unlink(path())
        #expect(symlink(target, path()) == 0)
        #expect(try s.load(alice) == .damaged(cause: "\(path()) is a symlink"))
        // A failure is not recorded into it…
        var sawDamage = false
        try s.update(alice) { stored in
            if case .damaged = stored { sawDamage = true }
            return nil
        }
        #expect(sawDamage)
        // …and the password's rewrite replaces the link, not the target.
        try s.update(alice) { _ in UserState() }
        #expect(StoreFixtures.read(target) == "keep me")
        #expect(try s.load(alice) == .state(UserState()))
    }

    @Test func aFileOwnedBySomeoneElseIsRefused() throws {
        let s = try seeded()
        #expect(chown(path(), 65534, 65534) == 0)
        #expect(try s.load(alice) == .damaged(cause: "\(path()) is owned by uid 65534, expected 0"))
    }

    @Test func aFileReadableByOthersIsRefused() throws {
        let s = try seeded()
        #expect(chmod(path(), 0o644) == 0)
        #expect(try s.load(alice) == .damaged(cause: "\(path()) has mode 0644, expected 0600"))
    }

    @Test func aDamagedFileIsKeptAsideWhenRewritten() throws {
        let s = try seeded()
        try StoreFixtures.write(path(), "garbage")
        try s.update(alice) { _ in UserState() }
        #expect(StoreFixtures.read(path(".state.damaged")) == "garbage")
        #expect(try s.load(alice) == .state(UserState()))
    }

    @Test func anUnsafeDirectoryIsRefused() throws {
        let s = try seeded()
        #expect(chmod(dir.path + "/state", 0o755) == 0)
        #expect(throws: StoreError.unsafeDirectory(path: dir.path + "/state", why: "mode 0755, expected 0700")) {
            try s.load(alice)
        }
        #expect(chmod(dir.path + "/state", 0o700) == 0)
        #expect(chown(dir.path + "/state", 65534, 65534) == 0)
        #expect(throws: StoreError.unsafeDirectory(path: dir.path + "/state", why: "owned by uid 65534, expected 0")) {
            try s.load(alice)
        }
    }

    @Test func aStateDirectoryThatIsAFileIsRefused() throws {
        try StoreFixtures.write(dir.path + "/file", "x")
        let s = FileStateStore(directory: dir.path + "/file")
        #expect(throws: StoreError.unsafeDirectory(path: dir.path + "/file", why: "not a directory (or a symlink)")) {
            try s.load(alice)
        }
    }

    @Test func theInstallationSecretIsCreatedOnceAndPrivate() throws {
        let a = try store.installationSecret()
        let b = try store.installationSecret()
        #expect(a.count == 32)
        #expect(a == b)
        var st = stat()
        #expect(stat(dir.path + "/state/.secret", &st) == 0 && st.st_mode & 0o777 == 0o600)
    }

    @Test func aHeldSecretLockIsAFailureNotAWaitForEver() throws {
        _ = try store.load(alice)   // the directory, made as any first use makes it
        // Another open file description of the lock, held as a stuck helper would hold it
        // while it creates the secret.
        let holder = open(dir.path + "/state/.secret.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(holder >= 0 && flock(holder, LOCK_EX | LOCK_NB) == 0)
        #expect(throws: StoreError.lockHeld(path: dir.path + "/state/.secret.lock",
                                            millis: FileStateStore.secretLockBoundMillis)) {
            try store.installationSecret()
        }
        close(holder)
        let secret = try store.installationSecret()
        #expect(secret.count == 32)
        // Once it exists, a holder of the lock delays nobody: it is read without the lock.
        let again = open(dir.path + "/state/.secret.lock", O_RDWR | O_CLOEXEC)
        #expect(again >= 0 && flock(again, LOCK_EX | LOCK_NB) == 0)
        #expect(try store.installationSecret() == secret)   // not .lockHeld
        close(again)
    }

    @Test func badUserNamesAreRejectedWithTheExactError() {
        #expect(throws: UserName.Invalid.empty) { try UserName("") }
        #expect(throws: UserName.Invalid.slash) { try UserName("a/b") }
        #expect(throws: UserName.Invalid.slash) { try UserName("/etc/passwd") }
        #expect(throws: UserName.Invalid.dotDot) { try UserName("..") }
        #expect(throws: UserName.Invalid.dotDot) { try UserName("a..b") }
        #expect(throws: UserName.Invalid.leadingDot) { try UserName(".secret") }
        #expect(throws: UserName.Invalid.controlCharacter) { try UserName("alice\nfailures=0") }
        #expect(throws: UserName.Invalid.controlCharacter) { try UserName("a\u{7f}") }
        #expect(throws: UserName.Invalid.tooLong(300)) { try UserName(String(repeating: "a", count: 300)) }
        #expect((try? UserName(String(repeating: "a", count: 128))) != nil)
        #expect((try? UserName("jean-luc.picard@example")) != nil)
        #expect(UserName.Invalid.tooLong(300).description == "the user name is 300 bytes long (at most 128)")
    }
}

extension String {
    func replacingFirst(_ old: String, with new: String) -> String {
        guard let r = firstRange(of: old) else { return self }
        var s = self
        s.replaceSubrange(r, with: new)
        return s
    }
}
