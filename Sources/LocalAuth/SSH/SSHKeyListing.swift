import LocalAuthProtocol

/// A key's public facts as `mode=ssh` answers carry them (one `key=` line each): never the
/// private scalar. The helper writes the line from the record; localauthctl reads it back.
///
///     <name> <requirement> <reuse> <forwarding 0|1> <created> <public point hex> <comment hex or ->
public struct SSHKeyListing: Equatable, Sendable {
    public var name: String
    public var requirement: SSHKeyRequirement
    public var reuseSeconds: Int
    public var forwardingAllowed: Bool
    public var created: Timestamp
    /// 0x04 || x || y.
    public var publicKey: [UInt8]
    public var comment: String

    public init(_ record: SSHKeyRecord) {
        name = record.name
        requirement = record.requirement
        reuseSeconds = record.reuseSeconds
        forwardingAllowed = record.forwardingAllowed
        created = record.created
        publicKey = record.publicKey
        comment = record.comment
    }

    public var line: String {
        let comment = self.comment.isEmpty ? "-" : Crypto.hex(Array(self.comment.utf8))
        return "\(name) \(requirement.rawValue) \(reuseSeconds) \(forwardingAllowed ? 1 : 0) \(created) "
            + "\(Crypto.hex(publicKey)) \(comment)"
    }

    /// nil for anything `line` would not write.
    public init?(line: String) {
        let w = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard w.count == 7, SSHKeyRecord.nameProblem(w[0]) == nil,
              let requirement = SSHKeyRequirement(rawValue: w[1]),
              let reuse = Int(w[2]), SSHKeyRecord.reuseProblem(reuse) == nil, w[3] == "0" || w[3] == "1",
              let created = Timestamp(w[4]), let point = Hex.decode(w[5]), point.count == 65, point[0] == 0x04,
              let comment = w[6] == "-" ? [] : Hex.decode(w[6]) else { return nil }
        let text = String(decoding: comment, as: UTF8.self)
        guard SSHKeyRecord.commentProblem(text) == nil else { return nil }
        name = w[0]
        self.requirement = requirement
        reuseSeconds = reuse
        forwardingAllowed = w[3] == "1"
        self.created = created
        publicKey = point
        self.comment = text
    }

    /// `ecdsa-sha2-nistp256 AAAA… comment`.
    public var openSSHLine: String { SSHKeyText.openSSHLine(point: publicKey, comment: comment) }
    public var fingerprint: String { SSHKeyText.fingerprint(point: publicKey) }
}
