#if canImport(Glibc)
import Glibc
#endif

/// The fix `doctor` proposes for a configuration file (or the drop-in directory) that
/// cannot be trusted, from what the path is now. Nothing it proposes follows a symlink:
/// `chown` and `chmod` on a link change its target (a 0600 file of another owner became
/// root's and world-readable that way, and the link was still there). A link is replaced by
/// a regular file (or directory) of its own; for a regular file only the write bits that
/// are wrong are taken away (`chmod go-w`), never a read bit added.
struct ConfigRepair {
    let path: String
    let directory: Bool

    func fix() -> String? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        let kind = st.st_mode & S_IFMT
        if kind == S_IFLNK { return replaceLink() }
        if kind != (directory ? S_IFDIR : S_IFREG) {
            return directory
                ? "move \(path) away and make it a directory: install -d -m 0755 -o root -g root \(path)"
                : "move \(path) away and put the settings in a regular file there"
        }
        var steps: [String] = []
        if st.st_uid != 0 || st.st_gid != 0 { steps.append("chown root:root \(path)") }
        if st.st_mode & 0o022 != 0 { steps.append("chmod go-w \(path)") }
        return steps.isEmpty ? nil : steps.joined(separator: "; ")
    }

    /// The link goes, and what it pointed at becomes a file of root's in its place: review
    /// the target first, it was read by nobody while the link stood.
    private func replaceLink() -> String {
        let target = linkTarget() ?? "its target"
        if directory {
            return "replace the symlink with a directory of its own: rm \(path); install -d -m 0755 -o root -g root "
                + "\(path) (then copy in the *.conf files of \(target) that belong there)"
        }
        return "replace the symlink with a regular file: rm \(path); install -m 0644 -o root -g root \(target) "
            + "\(path) (review \(target) first; chown or chmod on the link would change \(target) itself)"
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
