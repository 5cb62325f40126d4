#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The real machine: boot id from procfs, password state from the local shadow file.
public final class LinuxSystem: SystemFacts {
    private let bootIDPath: String
    private let shadowPath: String

    public init(bootIDPath: String = "/proc/sys/kernel/random/boot_id", shadowPath: String = "/etc/shadow") {
        self.bootIDPath = bootIDPath
        self.shadowPath = shadowPath
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

    /// A local shadow entry that is empty or starts with `!` or `*` is no usable password.
    /// No local entry (a directory-service or test account) or no access: unknown. The file
    /// is read directly rather than through NSS: loading NSS modules took longer than the
    /// whole way from the helper's start to the reader.
    public func hasUsablePassword(_ user: UserName) -> Bool? {
        guard let file = fopen(shadowPath, "re") else { return nil }
        defer { fclose(file) }
        while let entry = fgetspent(file) {
            guard let name = entry.pointee.sp_namp, String(cString: name) == user.value else { continue }
            guard let field = entry.pointee.sp_pwdp else { return false }
            let first = field.pointee
            return !(first == 0 || first == CChar(UInt8(ascii: "!")) || first == CChar(UInt8(ascii: "*")))
        }
        return nil
    }
}
