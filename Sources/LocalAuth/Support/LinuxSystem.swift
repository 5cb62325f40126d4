#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The real machine: boot id from procfs, password state from the local shadow file.
public final class LinuxSystem: SystemFacts {
    private let bootIDPath: String
    private let shadowPath: String
    /// localauthd's (FileMemo): the shadow file read again only when it changed.
    private let memo: FileMemo?

    public init(bootIDPath: String = "/proc/sys/kernel/random/boot_id", shadowPath: String = "/etc/shadow",
                memo: FileMemo? = nil) {
        self.bootIDPath = bootIDPath
        self.shadowPath = shadowPath
        self.memo = memo
    }

    /// Read once: a boot's id does not change while a process of it runs (localauthd asks
    /// for every request it answers).
    public func bootID() -> String? {
        if let cached = bootIDCache { return cached }
        let fd = open(bootIDPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard case .success(let bytes) = Posix.readAll(fd, limit: 64), !bytes.isEmpty else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        let id = text.hasSuffix("\n") ? String(text.dropLast()) : text
        guard isPlainText(id) else { return nil }
        bootIDCache = id
        return id
    }

    private var bootIDCache: String?

    /// A local shadow entry that is empty or starts with `!` or `*` is no usable password.
    /// No local entry (a directory-service or test account) or no access: unknown. The file
    /// is read directly rather than through NSS: loading NSS modules took longer than the
    /// whole way from the helper's start to the reader. Read whole and split here: glibc's
    /// fgetspent seeks once per entry.
    public func hasUsablePassword(_ user: UserName) -> Bool? {
        if let known = memo?.bytes(at: shadowPath) { return Self.usablePassword(in: known, for: user.value) }
        let fd = open(shadowPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard case .success(let bytes) = Posix.readAll(fd, limit: 16 << 20) else { return nil }
        if let memo, let st = Posix.fileStat(fd), Posix.isRegular(st) { memo.keep(bytes, readFrom: st, at: shadowPath) }
        return Self.usablePassword(in: bytes, for: user.value)
    }

    /// The rule above over the file's bytes: the first line whose name field is `user`.
    /// A walk over the bytes, with nothing copied: localauthd applies it for every
    /// preflight it answers.
    static func usablePassword(in shadow: [UInt8], for user: String) -> Bool? {
        let name = Array(user.utf8)
        let colon = UInt8(ascii: ":"), newline = UInt8(ascii: "\n")
        var start = 0
        while start < shadow.count {
            var end = start
            while end < shadow.count && shadow[end] != newline { end += 1 }
            let afterName = start + name.count
            if afterName < end, shadow[afterName] == colon, shadow[start..<afterName].elementsEqual(name) {
                guard afterName + 1 < end, shadow[afterName + 1] != colon else { return false }
                let first = shadow[afterName + 1]
                return !(first == UInt8(ascii: "!") || first == UInt8(ascii: "*"))
            }
            start = end + 1
        }
        return nil
    }
}
