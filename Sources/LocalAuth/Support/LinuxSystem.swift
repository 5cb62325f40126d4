#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The real machine: boot id from procfs, password state from the shadow database.
public final class LinuxSystem: SystemFacts {
    private let bootIDPath: String

    public init(bootIDPath: String = "/proc/sys/kernel/random/boot_id") {
        self.bootIDPath = bootIDPath
    }

    public func bootID() -> String? {
        let fd = open(bootIDPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard case .success(let bytes) = Posix.readAll(fd, limit: 64), !bytes.isEmpty else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        let id = text.hasSuffix("\n") ? String(text.dropLast()) : text
        return isPlainText(id) ? id : nil
    }

    /// A shadow entry that is empty or starts with `!` or `*` is no usable password.
    /// No entry (a directory-service or test account) or no access: unknown.
    public func hasUsablePassword(_ user: UserName) -> Bool? {
        guard let entry = getspnam(user.value), let field = entry.pointee.sp_pwdp else { return nil }
        let first = field.pointee
        return !(first == 0 || first == CChar(UInt8(ascii: "!")) || first == CChar(UInt8(ascii: "*")))
    }
}
