#if canImport(Glibc)
import Glibc
#endif

/// Whether a process holds a descriptor of a given socket: a `socket:[INODE]` link among
/// /proc/PID/fd. Reading another uid's descriptor table takes CAP_SYS_PTRACE, which the
/// service keeps (systemd/localauth.service).
enum ProcessSockets {
    static func holds(pid: Int32, inode: UInt) -> Bool {
        guard let dir = opendir("/proc/\(pid)/fd") else { return false }
        defer { closedir(dir) }
        let wanted = Array("socket:[\(inode)]".utf8)
        var link = [UInt8](repeating: 0, count: 64)
        while let entry = readdir(dir) {
            let named = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix(while: { $0 != 0 }))
            }
            guard named.first.map({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) == true else { continue }
            let n = link.withUnsafeMutableBytes { out in
                readlinkat(dirfd(dir), String(decoding: named, as: UTF8.self), out.baseAddress!.assumingMemoryBound(to: CChar.self), out.count)
            }
            if n == wanted.count, link[0..<n].elementsEqual(wanted) { return true }
        }
        return false
    }
}
