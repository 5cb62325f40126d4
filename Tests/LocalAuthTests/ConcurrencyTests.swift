#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// Separate processes recording failures for one user at once: no count is lost and the
/// file stays intact.
@Suite struct ConcurrencyTests {
    /// The store-hammer executable, built next to the test bundle.
    static var hammer: String {
        let me = CommandLine.arguments[0]
        let dir = me.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return dir + "/store-hammer"
    }

    static func spawn(_ args: [String]) -> pid_t {
        var pid: pid_t = 0
        let argv = args.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let rc = posix_spawn(&pid, args[0], nil, nil, argv, environ)
        return rc == 0 ? pid : -1
    }

    @Test func parallelProcessesLoseNoFailure() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.path + "/state"
        let processes = 8, each = 25
        let pids = (0..<processes).map { _ in Self.spawn([Self.hammer, state, "alice", String(each)]) }
        #expect(!pids.contains(-1))
        for pid in pids {
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            #expect(status == 0)
        }
        let stored = try FileStateStore(directory: state).load(try UserName("alice"))
        #expect(stored.userState.consecutiveFailures == processes * each)
        guard case .state = stored else { Issue.record("file damaged: \(stored)"); return }
    }
}
