// Test support: records N failed matches for one user through the real store, as the
// helper does, so a test can run many of these processes at once against one file.
// Usage: store-hammer STATE_DIR USER COUNT
#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

let args = CommandLine.arguments
guard args.count == 4, let count = Int(args[3]), let user = try? UserName(args[2]) else {
    fputs("usage: store-hammer STATE_DIR USER COUNT\n", la_stderr())
    exit(64)
}
let store = FileStateStore(directory: args[1])
let rules = Rules(Options())
for _ in 0..<count {
    do {
        try store.update(user) { rules.afterFailedMatch($0.userState) }
    } catch {
        fputs("store-hammer: \(error)\n", la_stderr())
        exit(1)
    }
}
