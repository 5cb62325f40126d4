#if canImport(Glibc)
import Glibc
#endif

/// The store's files are kept as the rights store's are (OwnedFileStore); what is the SSH
/// key store's own: which record reads, and its limit of keys.
extension SSHKeyStore: OwnedFileStore {
    /// A record that decodes (a damaged one is kept aside before it is replaced).
    func readable(_ path: String) -> Bool {
        guard let bytes = try? read(path, limit: Self.recordLimit) else { return false }
        return (try? SSHKeyRecord.decode(bytes)) != nil
    }

    /// The user's keys, with the new one in place of `replacing`, stay within `maxKeys`,
    /// and the file system keeps its floor free.
    func checkRoom(for size: Int, replacing path: String) throws(Failure) {
        var count = 1
        for name in try names() where name.hasSuffix(".key") || name.hasSuffix(".damaged") {
            if directory + "/" + name != path { count += 1 }
        }
        if count > Self.maxKeys {
            throw .full(why: "uid \(uid) would have \(count) ssh keys, more than \(Self.maxKeys)")
        }
        try checkFreeSpace(size)
    }
}

extension SSHKeyStore.Failure: OwnedFileFailure {}
