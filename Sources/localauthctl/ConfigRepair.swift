#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The fix `doctor` proposes for a configuration file (or the drop-in directory) that
/// cannot be trusted, from what the path is now. Nothing it proposes follows a symlink:
/// `chown` and `chmod` on a link change its target (a 0600 file of another owner became
/// root's and world-readable that way, and the link was still there). A link is replaced by
/// a regular file (or directory) of its own; for a regular file only the write bits that
/// are wrong are taken away (`chmod go-w`), never a read bit added.
struct ConfigRepair {
    let path: String
    let directory: Bool

    func fix() -> DoctorCommand.Text? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        let kind = st.st_mode & S_IFMT
        let path = self.path
        if kind == S_IFLNK { return replaceLink() }
        if kind != (directory ? S_IFDIR : S_IFREG) {
            let make = "install -d -m 0755 -o root -g root \(path)"
            return directory
                ? { l in tr(l, "move %s away and make it a directory: %s", path, make) }
                : { l in tr(l, "move %s away and put the settings in a regular file there", path) }
        }
        var steps: [String] = []
        if st.st_uid != 0 || st.st_gid != 0 { steps.append("chown root:root \(path)") }
        if st.st_mode & 0o022 != 0 { steps.append("chmod go-w \(path)") }
        return steps.isEmpty ? nil : DoctorCommand.verbatim(steps.joined(separator: "; "))
    }

    /// The link goes, and what it pointed at becomes a file of root's in its place: review
    /// the target first, it was read by nobody while the link stood.
    private func replaceLink() -> DoctorCommand.Text {
        let path = self.path, found = linkTarget()
        if directory {
            return { l in
                let target = found ?? tr(l, "its target")
                return tr(l, "replace the symlink with a directory of its own: %s (then copy in the *.conf files of %s that belong there)",
                          "rm \(path); install -d -m 0755 -o root -g root \(path)", target)
            }
        }
        return { l in
            let target = found ?? tr(l, "its target")
            return tr(l, "replace the symlink with a regular file: %1$s (review %2$s first; chown or chmod on the link would change %2$s itself)",
                      "rm \(path); install -m 0644 -o root -g root \(target) \(path)", target)
        }
    }

    private func linkTarget() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.hasPrefix("/") ? text
            : String(path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
                .joined(separator: "/")) + "/" + text
    }
}
