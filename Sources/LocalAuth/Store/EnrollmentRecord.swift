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

    /// Whether the record is of this boot and young enough; the storage is compared by
    /// `StorageStamp.stillMatches`.
    public func isCurrent(at nanos: UInt64, bootID boot: String) -> Bool {
        boot == bootID && nanos >= readAt && nanos - readAt <= Self.maxAgeNanos
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

    /// nil for anything that is not a whole record of this version. Read as bytes
    /// (KeyValues), not as Characters: localauthd decodes a record for each preflight it
    /// answers, and splitting the text by Character took a quarter of its time.
    public static func decode(_ bytes: [UInt8]) -> EnrollmentRecord? {
        guard bytes.count <= maxSize else { return nil }
        let body = bytes.last == UInt8(ascii: "\n") ? Array(bytes.dropLast()) : bytes
        guard let kv = try? KeyValues.parse(body) else { return nil }
        var fields: [String: String] = [:]
        for (key, value) in kv.pairs {
            guard fields.updateValue(value, forKey: key) == nil else { return nil }
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
/// each directory's relative path, inode, modification and change times to the
/// nanosecond, one a line. fprintd writes a print by renaming a new file into place and
/// deletes by unlinking, and either changes the directory that holds it; a directory added
/// or removed changes its parent. So a stamp still matches when every directory it names
/// looks the same (`stillMatches`: a few lstat calls, no listing). A directory that cannot
/// be read is recorded as missing, and must still be missing to match.
public enum StorageStamp {
    static let maxEntries = 256

    public static func of(fprintDir: String, user: String) -> String {
        guard isPlainName(user) else { return "invalid-user" }
        var out: [String] = []
        walk(fprintDir + "/" + user, relative: ".", depth: 0, into: &out)
        return out.joined(separator: "\n")
    }

    /// Whether `recorded` (a stamp `of` made) describes the storage as it is now.
    /// Split by bytes, not Characters: localauthd asks this for every preflight it answers.
    public static func stillMatches(_ recorded: String, fprintDir: String, user: String) -> Bool {
        guard isPlainName(user) else { return false }
        let lines = recorded.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard let first = lines.first, first.starts(with: ".\t".utf8), lines.count <= maxEntries else { return false }
        let base = fprintDir + "/" + user
        for line in lines {
            guard let tab = line.firstIndex(of: UInt8(ascii: "\t")) else { return false }
            let relative = String(Substring(line[..<tab]))
            guard relative == "." || relative.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
                .allSatisfy({ isPlainName(String(Substring($0))) }) else {
                return false
            }
            guard entry(relative, path: relative == "." ? base : base + "/" + relative).utf8.elementsEqual(line) else {
                return false
            }
        }
        return true
    }

    private static func walk(_ path: String, relative: String, depth: Int, into out: inout [String]) {
        guard out.count < maxEntries else { return }
        out.append(entry(relative, path: path))
        guard depth < 2, let dir = opendir(path) else { return }
        defer { closedir(dir) }
        var names: [String] = []
        while let d = readdir(dir) {
            let name = withUnsafeBytes(of: d.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." && isPlainName(name) { names.append(name) }
        }
        for name in names.sorted() {
            var st = stat()
            guard lstat(path + "/" + name, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { continue }
            walk(path + "/" + name, relative: relative == "." ? name : relative + "/" + name, depth: depth + 1, into: &out)
        }
    }

    private static func entry(_ relative: String, path: String) -> String {
        var st = stat()
        guard lstat(path, &st) == 0 else { return "\(relative)\tmissing" }
        return "\(relative)\t\(st.st_ino)\t\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)\t\(st.st_ctim.tv_sec).\(st.st_ctim.tv_nsec)"
    }

    /// One path element with nothing a line, a tab or a path could be made of.
    private static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && name.utf8.count <= 255
            && name.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "/") }
    }
}
