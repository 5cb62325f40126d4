#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// The rights store's keys (ECDSA P-256 from libgcrypt) and its files.
@Suite struct RightsStoreTests {
    @Test func aSignatureVerifiesWithThePublicKeyAndNotForAnotherMessage() throws {
        let pair = try P256.generate()
        #expect(pair.publicKey.count == 65 && pair.publicKey[0] == 0x04)
        #expect(pair.privateKey.count == 32 && pair.privateKey != [UInt8](repeating: 0, count: 32))
        let message = Array("open the vault".utf8)
        let signature = try P256.sign(message: message, privateKey: pair.privateKey, publicKey: pair.publicKey)
        #expect(signature[0] == 0x30 && Int(signature[1]) == signature.count - 2)
        #expect(P256.verify(message: message, signature: signature, publicKey: pair.publicKey))
        #expect(!P256.verify(message: Array("open the door".utf8), signature: signature, publicKey: pair.publicKey))
        let other = try P256.generate()
        #expect(!P256.verify(message: message, signature: signature, publicKey: other.publicKey))
        // RFC 6979: the same key and message give the same signature.
        #expect(try P256.sign(message: message, privateKey: pair.privateKey, publicKey: pair.publicKey) == signature)
    }

    @Test func derIntegersAreMinimalAndPositive() {
        let high = [UInt8](repeating: 0xff, count: 32)
        let low = [UInt8](repeating: 0, count: 31) + [5]
        let der = DER.ecdsaSignature(r: high, s: low)
        #expect(der == [0x30, 38, 0x02, 33, 0x00] + high + [0x02, 1, 5])
        let parts = DER.ecdsaComponents(der)
        #expect(parts?.0 == high && parts?.1 == low)
        #expect(DER.ecdsaComponents(Array(der.dropLast())) == nil)
    }

    func record(_ store: RightsStore, program: String = "/usr/bin/notes", id: String = "vault") throws -> RightRecord {
        let pair = try P256.generate()
        return RightRecord(identifier: id, uid: store.uid, program: program, requirement: .biometryCurrentSet,
                           domainState: String(repeating: "ab", count: 32), secret: Array("s3cret\n=x".utf8),
                           privateKey: pair.privateKey, publicKey: pair.publicKey)
    }

    @Test func aRightIsKeptPerUserAndProgramAndRemoved() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = RightsStore(stateDirectory: dir.path, uid: 1000)
        let saved = try record(store)
        try store.save(saved)
        #expect(try store.load(program: "/usr/bin/notes", identifier: "vault") == saved)
        // Another program, the same identifier: nothing (its own namespace).
        #expect(try store.load(program: "/usr/bin/other", identifier: "vault") == nil)
        #expect(try RightsStore(stateDirectory: dir.path, uid: 1001).load(program: "/usr/bin/notes", identifier: "vault") == nil)
        var st = stat()
        #expect(stat(dir.path + "/rights/1000", &st) == 0 && st.st_mode & 0o777 == 0o700)
        #expect(stat(store.file("/usr/bin/notes", "vault", ".right"), &st) == 0 && st.st_mode & 0o777 == 0o600)
        try store.save(try record(store, id: "second"))
        try store.save(try record(store, program: "/usr/bin/other", id: "third"))
        #expect(try store.removeAll(program: "/usr/bin/notes", allowed: { _, _ in true }) == .removed(2))
        #expect(try store.load(program: "/usr/bin/other", identifier: "third") != nil)
        #expect(try store.remove(program: "/usr/bin/other", identifier: "third"))
        #expect(try !store.remove(program: "/usr/bin/other", identifier: "third"))
    }

    /// Removing them all is all or nothing: one right its caller may not remove keeps every one.
    @Test func removeAllRemovesNothingWhenOneIsNotAllowed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = RightsStore(stateDirectory: dir.path, uid: 1000)
        try store.save(try record(store, id: "a"))
        try store.save(try record(store, id: "b"))
        let mine = RightGrant(pid: 4242, startTime: 7, bootID: "boot", grantedAt: 1, capabilityHash: String(repeating: "ab", count: 32))
        try store.grant(mine, program: "/usr/bin/notes", identifier: "a")
        #expect(try store.removeAll(program: "/usr/bin/notes", allowed: { $1 == mine }) == .refused(notAllowed: 1))
        #expect(try store.load(program: "/usr/bin/notes", identifier: "a") != nil)
        #expect(try store.load(program: "/usr/bin/notes", identifier: "b") != nil)
        try store.grant(mine, program: "/usr/bin/notes", identifier: "b")
        #expect(try store.removeAll(program: "/usr/bin/notes", allowed: { $1 == mine }) == .removed(2))
        #expect(try store.reading { () throws(RightsStore.Failure) in
            try store.load(program: "/usr/bin/notes", identifier: "a") } == nil)
    }

    /// One user cannot fill root's file system: a save past the count is refused and loses
    /// nothing; a replacement does not count twice.
    @Test func aUserCannotSaveMoreThanTheLimit() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = RightsStore(stateDirectory: dir.path, uid: 1000)
        for n in 0..<RightsStore.maxRights { try store.save(try record(store, id: "r\(n)")) }
        #expect(throws: RightsStore.Failure.self) { try store.save(try record(store, id: "one-more")) }
        do { try store.save(try record(store, id: "one-more")) } catch {
            #expect("\(error)".contains("would have \(RightsStore.maxRights + 1) rights"), "\(error)")
        }
        #expect(try store.load(program: "/usr/bin/notes", identifier: "one-more") == nil)
        try store.save(try record(store, id: "r0"))                     // replacing one is fine
        #expect(try store.load(program: "/usr/bin/notes", identifier: "r\(RightsStore.maxRights - 1)") != nil)
    }

    @Test func aDamagedRecordIsAClearErrorAndIsKeptWhenReplaced() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = RightsStore(stateDirectory: dir.path, uid: 1000)
        try store.save(try record(store))
        let path = store.file("/usr/bin/notes", "vault", ".right")
        let garbage = Array("version=1\nsecret=zz\n".utf8)
        let fd = open(path, O_WRONLY | O_TRUNC)
        _ = garbage.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        #expect(throws: RightsStore.Failure.self) { try store.load(program: "/usr/bin/notes", identifier: "vault") }
        do {
            _ = try store.load(program: "/usr/bin/notes", identifier: "vault")
        } catch {
            #expect("\(error)".contains("damaged") && "\(error)".contains(path))
        }
        // Saving again keeps the damaged bytes aside.
        try store.save(try record(store))
        #expect(try store.load(program: "/usr/bin/notes", identifier: "vault") != nil)
        let kept = open(path + ".damaged", O_RDONLY)
        #expect(kept >= 0)
        var back = [UInt8](repeating: 0, count: 64)
        let n = back.withUnsafeMutableBytes { read(kept, $0.baseAddress, $0.count) }
        close(kept)
        #expect(Array(back[0..<max(n, 0)]) == garbage)
    }

    @Test func aDirectoryOpenToOthersIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = RightsStore(stateDirectory: dir.path, uid: 1000)
        try store.save(try record(store))
        chmod(dir.path + "/rights/1000", 0o755)
        #expect {
            try store.load(program: "/usr/bin/notes", identifier: "vault")
        } throws: { "\($0)".contains("expected 0700") }
    }

    @Test func aGrantIsKeptUntilRevokedOrTheRightIsSavedAgain() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = RightsStore(stateDirectory: dir.path, uid: 1000)
        try store.save(try record(store))
        let cap = [UInt8](repeating: 7, count: RightGrant.capabilityBytes)
        let g = RightGrant(pid: 4242, startTime: 99, bootID: "b00t", grantedAt: 123_456_789,
                           capabilityHash: Crypto.hex(Crypto.sha256(cap)))
        try store.grant(g, program: "/usr/bin/notes", identifier: "vault")
        #expect(try store.grant(program: "/usr/bin/notes", identifier: "vault") == g)
        try store.revoke(program: "/usr/bin/notes", identifier: "vault")
        #expect(try store.grant(program: "/usr/bin/notes", identifier: "vault") == nil)
        try store.grant(g, program: "/usr/bin/notes", identifier: "vault")
        try store.save(try record(store))
        #expect(try store.grant(program: "/usr/bin/notes", identifier: "vault") == nil)
        // An earlier version's grant (no `at=`, or no `cap=`) is no grant: the program
        // authorizes again.
        #expect(RightGrant.decode(Array("pid=1\nstart=2\nboot=b\n".utf8)) == nil)
        #expect(RightGrant.decode(Array("pid=1\nstart=2\nboot=b\nat=3\n".utf8)) == nil)
        #expect(RightGrant.decode(g.encoded()) == g)
        // Only the capability it was made with opens it.
        #expect(g.admits(capability: Crypto.hex(cap)))
        #expect(!g.admits(capability: Crypto.hex([UInt8](repeating: 8, count: RightGrant.capabilityBytes))))
        #expect(!g.admits(capability: nil) && !g.admits(capability: "") && !g.admits(capability: "zz"))
        #expect(!g.admits(capability: g.capabilityHash))   // the hash itself is not the capability
    }
}

/// What may not hold rights unless the administrator allows it (rights_interpreters).
@Suite struct InterpreterTests {
    @Test func interpretersAndLoadersAreKnownWithOrWithoutTheirVersion() {
        for path in ["/usr/bin/python3.11", "/usr/bin/python3", "/usr/bin/perl5.36.0", "/usr/bin/bash",
                     "/bin/dash", "/usr/bin/node", "/usr/lib64/ld-linux-x86-64.so.2",
                     "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/usr/bin/qemu-x86_64", "/usr/bin/env",
                     "/usr/bin/guile-3.0", "/usr/bin/gjs-console", "/usr/bin/mono-sgen", "/usr/bin/luajit-2.1.0-beta3",
                     "/usr/bin/gdb", "/usr/bin/vim.basic", "/usr/bin/swift-frontend"] {
            #expect(Interpreters.isInterpreter(path), "\(path)")
        }
        for path in ["/usr/bin/secret-vault", "/usr/bin/passwd", "/usr/bin/shred", "/usr/bin/nodes-app",
                     "/opt/app/bin/helper-for-python-gui"] {
            #expect(!Interpreters.isInterpreter(path), "\(path)")
        }
    }
}
