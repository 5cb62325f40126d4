#if canImport(Glibc)
import Glibc
#endif

/// Whether PAM_RHOST names another machine. Empty, `localhost`, the loopback addresses and
/// this machine's own host name (matched whole, ignoring case: sudo's `pam_rhost` flag sets
/// it) are this machine; anything else is remote, and nobody there can touch the reader.
/// The one place this is decided: the helper's Presence and localauthd's own answer ask it.
public enum RemoteHost {
    public static func namesAnotherMachine(_ rhost: String) -> Bool {
        if ["", "localhost", "127.0.0.1", "::1"].contains(rhost) { return false }
        guard let host = hostName() else { return true }
        return rhost.lowercased() != host.lowercased()
    }

    private static func hostName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }
}
