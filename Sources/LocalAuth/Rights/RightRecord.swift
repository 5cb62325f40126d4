import LocalAuthProtocol

/// What a right needs before it is authorized: Apple's `LAAuthenticationRequirement`s.
public enum RightRequirement: String, Sendable, CaseIterable {
    /// `.default`: the user, by a finger or the account password (`deviceOwnerAuthentication`).
    case `default`
    /// `.biometry`: a finger (`deviceOwnerAuthenticationWithBiometrics`).
    case biometry
    /// `.biometryCurrentSet`: a finger of the set enrolled when the right was saved; a
    /// changed set invalidates the right for good.
    case biometryCurrentSet = "biometry-current-set"
    /// `.biometry(fallback: .devicePasscode)`: a finger, or the account password.
    case biometryOrPassword = "biometry-or-password"

    /// The password may stand in for the finger.
    public var allowsPassword: Bool { self == .default || self == .biometryOrPassword }
}

/// One saved right, as the root side keeps it (RightsStore): whose it is, which program
/// saved it, what authorizes it, and what it protects. Text, one `key=value` a line:
///
///     version=1
///     identifier=<hex of the identifier's UTF-8>
///     uid=1000
///     program=/usr/bin/notes
///     requirement=biometry-current-set
///     domain_state=<64 hex digits, or empty>
///     secret=<hex, may be empty>
///     private_key=<64 hex digits>
///     public_key=<130 hex digits>
public struct RightRecord: Equatable, Sendable {
    public var identifier: String
    public var uid: UInt32
    /// The saving program's executable, as the kernel named it (/proc/PID/exe).
    public var program: String
    public var requirement: RightRequirement
    /// The enrolled set's domain state when saved (`biometryCurrentSet` only).
    public var domainState: String?
    public var secret: [UInt8]
    public var privateKey: [UInt8]
    public var publicKey: [UInt8]

    public init(identifier: String, uid: UInt32, program: String, requirement: RightRequirement,
                domainState: String?, secret: [UInt8], privateKey: [UInt8], publicKey: [UInt8]) {
        self.identifier = identifier
        self.uid = uid
        self.program = program
        self.requirement = requirement
        self.domainState = domainState
        self.secret = secret
        self.privateKey = privateKey
        self.publicKey = publicKey
    }

    /// Longest identifier and secret accepted (both travel in one frame, hex-encoded).
    public static let maxIdentifierBytes = 256
    public static let maxSecretBytes = 1024

    public func encoded() -> [UInt8] {
        let lines = [
            "version=1",
            "identifier=" + Crypto.hex(Array(identifier.utf8)),
            "uid=\(uid)",
            "program=" + Crypto.hex(Array(program.utf8)),
            "requirement=" + requirement.rawValue,
            "domain_state=" + (domainState ?? ""),
            "secret=" + Crypto.hex(secret),
            "private_key=" + Crypto.hex(privateKey),
            "public_key=" + Crypto.hex(publicKey),
        ]
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    public typealias Damage = RecordDamage

    public static func decode(_ data: [UInt8]) throws(Damage) -> RightRecord {
        let record = try RecordFields(data)
        guard let uid = UInt32(try record.field("uid")) else { throw Damage(why: "`uid` is not a number") }
        guard let requirement = RightRequirement(rawValue: try record.field("requirement")) else {
            throw Damage(why: "unknown `requirement`")
        }
        let domain = try record.field("domain_state")
        guard domain.isEmpty || (domain.utf8.count == 64 && Hex.decode(domain) != nil) else {
            throw Damage(why: "`domain_state` is not 64 hex digits")
        }
        return RightRecord(
            identifier: String(decoding: try record.bytes("identifier"), as: UTF8.self), uid: uid,
            program: String(decoding: try record.bytes("program"), as: UTF8.self), requirement: requirement,
            domainState: domain.isEmpty ? nil : domain, secret: try record.bytes("secret"),
            privateKey: try record.bytes("private_key", count: 32), publicKey: try record.bytes("public_key", count: 65))
    }
}

/// An authorization the root side granted one process for one right: that process (its
/// pid and start time, on this boot) may load the secret and sign until it deauthorizes or
/// ends, over connections made after the grant (`grantedAt`: a connection opened before it
/// may have been handed to another process before the program was exec'd in place), and
/// only for the request that presents the capability the authorization returned (kept here
/// as its SHA-256: the right object that was authorized, as on Apple's platforms). Text as
/// the record: `pid=`, `start=`, `boot=`, `at=`, `cap=`. A grant without `at=` or `cap=`
/// (an earlier version's) decodes to nothing: the program authorizes again.
public struct RightGrant: Equatable, Sendable {
    public var pid: Int32
    public var startTime: UInt64
    public var bootID: String
    /// CLOCK_BOOTTIME in nanoseconds when it was granted.
    public var grantedAt: UInt64
    /// SHA-256 of the capability, 64 hex digits.
    public var capabilityHash: String

    public init(pid: Int32, startTime: UInt64, bootID: String, grantedAt: UInt64, capabilityHash: String) {
        self.pid = pid
        self.startTime = startTime
        self.bootID = bootID
        self.grantedAt = grantedAt
        self.capabilityHash = capabilityHash
    }

    /// Whether `capability` (as the request sent it, hex) is the one this grant was made
    /// with. Compared in constant time.
    public func admits(capability hex: String?) -> Bool {
        guard let hex, let bytes = Hex.decode(hex), bytes.count == RightGrant.capabilityBytes else { return false }
        let presented = Array(Crypto.hex(Crypto.sha256(bytes)).utf8)
        let kept = Array(capabilityHash.utf8)
        guard presented.count == kept.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<kept.count { difference |= presented[i] ^ kept[i] }
        return difference == 0
    }

    /// The capability's length: 256 random bits.
    public static let capabilityBytes = 32

    public func encoded() -> [UInt8] {
        Array("pid=\(pid)\nstart=\(startTime)\nboot=\(bootID)\nat=\(grantedAt)\ncap=\(capabilityHash)\n".utf8)
    }

    public static func decode(_ bytes: [UInt8]) -> RightGrant? {
        var fields: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { return nil }
            fields[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        guard let pid = fields["pid"].flatMap({ Int32($0) }), let start = fields["start"].flatMap({ UInt64($0) }),
              let boot = fields["boot"], !boot.isEmpty, let at = fields["at"].flatMap({ UInt64($0) }),
              let cap = fields["cap"], cap.utf8.count == 64, Hex.decode(cap) != nil else { return nil }
        return RightGrant(pid: pid, startTime: start, bootID: boot, grantedAt: at, capabilityHash: cap)
    }
}
