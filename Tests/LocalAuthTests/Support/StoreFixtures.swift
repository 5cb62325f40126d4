#if canImport(Glibc)
import Glibc
#endif

enum StoreFixtures {
    struct Failed: Error { let what: String }

    /// Writes `text` to `path` (0600), replacing it.
    static func write(_ path: String, _ text: String, mode: mode_t = 0o600) throws {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        guard fd >= 0 else { throw Failed(what: "open \(path)") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count
        else { throw Failed(what: "write \(path)") }
        fchmod(fd, mode)
    }

    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
