#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// localauthd's memo of the files a preflight reads (FileMemo): given again only while the
/// file is the one read, and only once it had settled.
@Suite struct FileMemoTests {
    let dir = TempDir()

    /// Written aside and renamed into place, as the product writes.
    private func write(_ name: String, _ text: String) -> String {
        let path = dir.path + "/" + name
        let aside = path + ".new"
        let fd = open(aside, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        rename(aside, path)
        return path
    }

    /// Read and offered to the memo as if `afterChange` ns had passed since the file's last
    /// change (its change time cannot be set back, so the clock is given instead).
    private func keep(_ memo: FileMemo, _ path: String, afterChange: Int64 = FileMemo.settledNanos) {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        guard let st = Posix.fileStat(fd), case .success(let bytes) = Posix.readAll(fd, limit: 1024) else {
            Issue.record("cannot read \(path)")
            return
        }
        let changed = max(FileMemo.nanos(st.st_mtim), FileMemo.nanos(st.st_ctim))
        memo.keep(bytes, readFrom: st, at: path, now: changed + afterChange)
    }

    @Test func aSettledFileIsGivenAgainUntilItIsReplaced() {
        defer { dir.remove() }
        let memo = FileMemo()
        let path = write("state", "one")
        keep(memo, path)
        #expect(memo.bytes(at: path) == Array("one".utf8))
        // Replaced by a rename, as every file it serves is, even with the same size and times.
        _ = write("state", "two")
        #expect(memo.bytes(at: path) == nil)
    }

    @Test func aFileWrittenJustNowIsNotKept() {
        // The kernel's times move by clock ticks: a file this young could be written again
        // within the same tick with the same stamp.
        defer { dir.remove() }
        let memo = FileMemo()
        let path = write("state", "young")
        keep(memo, path, afterChange: FileMemo.settledNanos - 1)
        #expect(memo.bytes(at: path) == nil)
    }

    @Test func aChangeOfModeOrTheFileRemovedIsSeen() {
        defer { dir.remove() }
        let memo = FileMemo()
        let path = write("secret", "abc")
        keep(memo, path)
        chmod(path, 0o644)
        #expect(memo.bytes(at: path) == nil)
        chmod(path, 0o600)
        keep(memo, path)
        #expect(memo.bytes(at: path) == Array("abc".utf8))
        let other = write("other", "xyz")
        keep(memo, other)
        unlink(other)
        #expect(memo.bytes(at: other) == nil)
    }

    @Test func aStoreWithAMemoSeesAStateWrittenThroughAnother() throws {
        // The service's store (with the memo) and a helper's (without) on one directory: a
        // try counted by the helper shows in the service's next read.
        defer { dir.remove() }
        let memo = FileMemo()
        let stateDir = dir.path + "/state"
        let user = try UserName("alice")
        let helper = FileStateStore(directory: stateDir)
        try helper.update(user, durability: .synced) { _ in UserState() }
        let path = stateDir + "/alice.state"
        // The service's store keeps what it reads by the real clock: past the settling time.
        usleep(useconds_t(FileMemo.settledNanos / 1000 + 50_000))
        guard case .state(let first) = try FileStateStore(directory: stateDir, memo: memo).load(user) else {
            Issue.record("no state")
            return
        }
        #expect(first.consecutiveFailures == 0)
        #expect(memo.bytes(at: path) != nil)
        try helper.update(user, durability: .synced) { stored in
            var s = stored.userState
            s.consecutiveFailures += 1
            return s
        }
        guard case .state(let second) = try FileStateStore(directory: stateDir, memo: memo).load(user) else {
            Issue.record("no state")
            return
        }
        #expect(second.consecutiveFailures == 1)
    }
}
