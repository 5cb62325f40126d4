#if canImport(Glibc)
import Glibc
#endif

/// One environment variable, read with getenv. `ProcessInfo.environment` copies the whole
/// environment into a dictionary at each access, and a preflight read five variables.
enum Environment {
    static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
