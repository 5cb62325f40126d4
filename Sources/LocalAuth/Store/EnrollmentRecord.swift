#if canImport(Glibc)
import Glibc
#endif
import LocalAuthProtocol

/// What a helper last read of a user's enrolled set from fprintd, kept in root's state
/// directory (`<user>.enrolled`, 0600) so that localauthd can answer an application's
/// preflight without a helper and without fprintd (docs/SERVICE.md, "Preflight").
///
/// A record is used only while it is as new as what it describes:
/// * fprintd's print storage for the user looks as it did when the set was read
///   (`StorageStamp`: every enrolment, deletion or re-enrolment changes a directory there);
/// * it was written in this boot, at most `maxAgeNanos` ago: a reader unplugged, or
///   fprintd stopped, is not seen in the storage, and is seen by the next helper instead.
/// Anything else (missing, damaged, older) sends the preflight to a helper, which reads
/// fprintd and writes the record again.
public struct EnrollmentRecord: Equatable, Sendable {
    /// The set read; nil when the user has no finger enrolled (`biometryNotEnrolled`).
    public var set: EnrolledSet?
    /// `StorageStamp.of` when the set was read.
    public var storage: String
    /// CLOCK_BOOTTIME (ns) of the read, and the boot it was in.
    public var readAt: UInt64
    public var bootID: String

    public static let maxAgeNanos: UInt64 = 10_000_000_000
    static let maxSize = 64 * 1024

    public init(set: EnrolledSet?, storage: String, readAt: UInt64, bootID: String) {
        self.set = set
        self.storage = storage
        self.readAt = readAt
        self.bootID = bootID
    }

    /// Whether the record still says what fprintd would: same boot, young enough, and the
    /// storage unchanged since.
    public func isCurrent(storage now: String, at nanos: UInt64, bootID boot: String) -> Bool {
        boot == bootID && nanos >= readAt && nanos - readAt <= Self.maxAgeNanos && now == storage
    }

    public func encoded() -> [UInt8] {
        var lines = ["version=1", "storage=\(Crypto.hex(Array(storage.utf8)))", "read_at=\(readAt)",
                     "boot_id=\(Crypto.hex(Array(bootID.utf8)))"]
        if let set {
            lines += ["device=\(Crypto.hex(Array(set.deviceIdentity.utf8)))",
                      "name=\(Crypto.hex(Array(set.deviceName.utf8)))",
                      "fingers=\(set.fingers.joined(separator: ","))",
                      "prints=\(Crypto.hex(set.printMaterial))", "scan_type=\(set.scanType.rawValue)"]
        } else {
            lines.append("enrolled=none")
        }
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// nil for anything that is not a whole record of this version.
    public static func decode(_ bytes: [UInt8]) -> EnrollmentRecord? {
        guard bytes.count <= maxSize, let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "="), fields[String(line[..<eq])] == nil else { return nil }
            fields[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        func decoded(_ key: String) -> String? {
            fields[key].flatMap(Hex.decode).flatMap { String(validating: $0, as: UTF8.self) }
        }
        guard fields["version"] == "1", let storage = decoded("storage"), let boot = decoded("boot_id"),
              let readAt = fields["read_at"].flatMap({ UInt64($0) }) else { return nil }
        if fields["enrolled"] == "none" {
            return EnrollmentRecord(set: nil, storage: storage, readAt: readAt, bootID: boot)
        }
        guard let device = decoded("device"), let name = decoded("name"), let fingerList = fields["fingers"],
              let prints = fields["prints"].flatMap(Hex.decode),
              let scanType = fields["scan_type"].flatMap(ScanType.init(rawValue:)) else { return nil }
        let fingers = fingerList.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard !fingers.contains(where: \.isEmpty) else { return nil }
        let set = EnrolledSet(deviceIdentity: device, deviceName: name, fingers: fingers,
                              printMaterial: prints, scanType: scanType)
        return EnrollmentRecord(set: set, storage: storage, readAt: readAt, bootID: boot)
    }
}

/// How fprintd's print storage for one user looks (`<fprint_dir>/<user>/<driver>/<device>/`):
/// each directory's inode, modification and change times, to the nanosecond. fprintd
/// writes a print by renaming a new file into place and deletes by unlinking, and either
/// changes the directory that holds it. A storage that cannot be read gives a stamp of
/// its own ("unreadable"), which still changes when it becomes readable.
public enum StorageStamp {
    public static func of(fprintDir: String, user: String) -> String {
        guard !user.isEmpty, !user.contains("/"), user != ".", user != ".." else { return "invalid-user" }
        var out: [String] = []
        walk(fprintDir + "/" + user, depth: 0, into: &out)
        return out.joined(separator: ";")
    }

    /// The user's directory, its driver directories and their device directories.
    private static func walk(_ path: String, depth: Int, into out: inout [String]) {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            out.append("\(depth):missing:\(errno)")
            return
        }
        out.append("\(depth):\(st.st_ino):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec):\(st.st_ctim.tv_sec).\(st.st_ctim.tv_nsec)")
        guard depth < 2, (st.st_mode & S_IFMT) == S_IFDIR, let dir = opendir(path) else { return }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        for name in names.sorted() {
            out.append("\(depth + 1)=\(name)")
            walk(path + "/" + name, depth: depth + 1, into: &out)
        }
    }
}
