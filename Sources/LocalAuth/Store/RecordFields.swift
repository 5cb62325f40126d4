import LocalAuthProtocol

/// Why a record root keeps (a right, an SSH key) does not decode, for the log.
public struct RecordDamage: Error, CustomStringConvertible {
    public let why: String
    public init(why: String) { self.why = why }
    public var description: String { why }
}

/// The `key=value` lines of such a record, read once for every record kind: each key at
/// most once, `version=1` among them. Lines are split as bytes at each "\n" (not as
/// Characters, where "\r\n" is one and would join two lines), as StateFileFormat does.
struct RecordFields {
    private var fields: [String: String] = [:]

    /// `skipping`: lines starting with these bytes are passed over unread, never made a
    /// String (SSHKeyRecord's private key, for a process that must hold none).
    init(_ data: [UInt8], skipping skipped: [UInt8]? = nil) throws(RecordDamage) {
        for bytes in data.split(separator: UInt8(ascii: "\n")) {
            if let skipped, bytes.starts(with: skipped) { continue }
            let line = String(decoding: bytes, as: UTF8.self)
            guard let eq = line.firstIndex(of: "=") else { throw RecordDamage(why: "a line without `=`") }
            let key = String(line[..<eq])
            guard fields[key] == nil else { throw RecordDamage(why: "`\(key)` twice") }
            fields[key] = String(line[line.index(after: eq)...])
        }
        guard fields["version"] == "1" else { throw RecordDamage(why: "not version 1") }
    }

    func field(_ key: String) throws(RecordDamage) -> String {
        guard let v = fields[key] else { throw RecordDamage(why: "no `\(key)`") }
        return v
    }

    /// A hex field's bytes, `count` of them when given.
    func bytes(_ key: String, count: Int? = nil) throws(RecordDamage) -> [UInt8] {
        guard let b = Hex.decode(try field(key)), count == nil || b.count == count else {
            throw RecordDamage(why: "`\(key)` is not \(count.map { "\($0) bytes of " } ?? "")hex")
        }
        return b
    }
}
