import LocalAuthProtocol

/// What a signature with an SSH key needs: Apple's requirements, as the agent's keys know
/// them. The default is the finger only.
public enum SSHKeyRequirement: String, Sendable, CaseIterable {
    /// A finger (`deviceOwnerAuthenticationWithBiometrics`).
    case biometry
    /// A finger, or the account password.
    case biometryOrPassword = "biometry-or-password"
    /// A finger of the set enrolled when the key was created (`biometryCurrentSet`): a
    /// changed set makes the key void for good.
    case biometryCurrentSet = "biometry-current-set"

    /// The password may stand in for the finger.
    public var allowsPassword: Bool { self == .biometryOrPassword }
}

/// One SSH key of one user, as root keeps it (SSHKeyStore). The private scalar never leaves
/// root's side. Text, one `key=value` a line:
///
///     version=1
///     name=work-laptop
///     uid=1000
///     requirement=biometry
///     reuse=0                        seconds, 0…300; 0 = every signature asks
///     forwarding=0                   1: a forwarded request may be asked for
///     comment=<hex of the UTF-8>     shown after the public key; may be empty
///     domain_state=<64 hex or empty> the enrolled set (biometry-current-set only)
///     created=1765000000             wall-clock seconds
///     private_key=<64 hex digits>
///     public_key=<130 hex digits>    0x04 || x || y (P-256)
public struct SSHKeyRecord: Equatable, Sendable {
    public var name: String
    public var uid: UInt32
    public var requirement: SSHKeyRequirement
    /// Seconds a signature's approval holds for the same scope (SSHKeyRule.reuseApplies).
    public var reuseSeconds: Int
    /// Whether a forwarded request may be asked for at all (SSHKeyRule.forwardingRefused).
    public var forwardingAllowed: Bool
    public var comment: String
    /// The enrolled set's domain state when created (`biometryCurrentSet` only).
    public var domainState: String?
    /// Wall-clock seconds.
    public var created: Timestamp
    public var privateKey: [UInt8]
    public var publicKey: [UInt8]

    public init(name: String, uid: UInt32, requirement: SSHKeyRequirement = .biometry, reuseSeconds: Int = 0,
                forwardingAllowed: Bool = false, comment: String = "", domainState: String? = nil,
                created: Timestamp, privateKey: [UInt8], publicKey: [UInt8]) {
        self.name = name
        self.uid = uid
        self.requirement = requirement
        self.reuseSeconds = reuseSeconds
        self.forwardingAllowed = forwardingAllowed
        self.comment = comment
        self.domainState = domainState
        self.created = created
        self.privateKey = privateKey
        self.publicKey = publicKey
    }

    public static let maxNameBytes = 64
    public static let maxReuseSeconds = 300
    public static let maxCommentBytes = 128

    /// Why `name` cannot name a key (1 to 64 bytes of `A-Z a-z 0-9 . _ -`, not starting with
    /// a dot: a file name of its own, never a path, a hidden file or an option); nil when it can.
    public static func nameProblem(_ name: String) -> String? {
        let bytes = Array(name.utf8)
        guard (1...maxNameBytes).contains(bytes.count) else { return "a key name is 1 to \(maxNameBytes) bytes" }
        guard bytes.allSatisfy(isNameByte) else { return "a key name holds only A-Z a-z 0-9 . _ -" }
        guard bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "-") else {
            return "a key name does not start with `.` or `-`"
        }
        return nil
    }

    private static func isNameByte(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b)
            || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
    }

    /// Why `comment` cannot follow a public key (at most 128 bytes of printable ASCII: it
    /// ends an `authorized_keys` line, where a control character could start another); nil
    /// when it can.
    public static func commentProblem(_ comment: String) -> String? {
        let bytes = Array(comment.utf8)
        guard bytes.count <= maxCommentBytes else { return "a comment is at most \(maxCommentBytes) bytes" }
        guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return "a comment is printable ASCII" }
        return nil
    }

    /// Why `seconds` is no reuse window (0…300); nil when it is one.
    public static func reuseProblem(_ seconds: Int) -> String? {
        (0...maxReuseSeconds).contains(seconds) ? nil : "a reuse window is 0 to \(maxReuseSeconds) seconds"
    }

    public func encoded() -> [UInt8] {
        let lines = [
            "version=1",
            "name=" + name,
            "uid=\(uid)",
            "requirement=" + requirement.rawValue,
            "reuse=\(reuseSeconds)",
            "forwarding=" + (forwardingAllowed ? "1" : "0"),
            "comment=" + Crypto.hex(Array(comment.utf8)),
            "domain_state=" + (domainState ?? ""),
            "created=\(created)",
            "private_key=" + Crypto.hex(privateKey),
            "public_key=" + Crypto.hex(publicKey),
        ]
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    public typealias Damage = RecordDamage

    /// Anything but the shape above is damaged, a field out of its range included: a record
    /// that decodes is one `create` could have written.
    public static func decode(_ data: [UInt8]) throws(Damage) -> SSHKeyRecord {
        try decode(data, privateKey: true)
    }

    /// The record's public facts only (`privateKey` false: its line is skipped as bytes,
    /// never made a String nor decoded, and the record's `privateKey` is empty), for a
    /// process that must hold no private key (SSHKeyStore.publicListing).
    static func decode(_ data: [UInt8], privateKey: Bool) throws(Damage) -> SSHKeyRecord {
        let record = try RecordFields(data, skipping: privateKey ? nil : Array("private_key=".utf8))
        let name = try record.field("name")
        if let problem = nameProblem(name) { throw Damage(why: "`name`: \(problem)") }
        guard let uid = UInt32(try record.field("uid")) else { throw Damage(why: "`uid` is not a number") }
        guard let requirement = SSHKeyRequirement(rawValue: try record.field("requirement")) else {
            throw Damage(why: "unknown `requirement`")
        }
        guard let reuse = Int(try record.field("reuse")), reuseProblem(reuse) == nil else {
            throw Damage(why: "`reuse` is not 0 to \(maxReuseSeconds)")
        }
        let forwarding = try record.field("forwarding")
        guard forwarding == "0" || forwarding == "1" else { throw Damage(why: "`forwarding` is not 0 or 1") }
        let comment = String(decoding: try record.bytes("comment"), as: UTF8.self)
        if let problem = commentProblem(comment) { throw Damage(why: "`comment`: \(problem)") }
        let domain = try record.field("domain_state")
        guard domain.isEmpty || (domain.utf8.count == 64 && Hex.decode(domain) != nil) else {
            throw Damage(why: "`domain_state` is not 64 hex digits")
        }
        guard (requirement == .biometryCurrentSet) == !domain.isEmpty else {
            throw Damage(why: "`domain_state` does not go with `requirement`")
        }
        guard let created = Timestamp(try record.field("created")) else { throw Damage(why: "`created` is not a number") }
        let publicKey = try record.bytes("public_key", count: 65)
        guard publicKey[0] == 0x04 else { throw Damage(why: "`public_key` is not an uncompressed point") }
        return SSHKeyRecord(name: name, uid: uid, requirement: requirement, reuseSeconds: reuse,
                            forwardingAllowed: forwarding == "1", comment: comment,
                            domainState: domain.isEmpty ? nil : domain, created: created,
                            privateKey: privateKey ? try record.bytes("private_key", count: 32) : [], publicKey: publicKey)
    }
}
