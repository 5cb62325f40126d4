/// An OpenSSH certificate (PROTOCOL.certkeys): a public key with a nonce before it and,
/// after it, serial, type, key id, principals, validity, critical options, extensions,
/// reserved, the signing CA's key and the CA's signature over everything before it. A
/// server may present one as its host key; ssh then sends it in the session-bind, and its
/// embedded key is the one that signs the exchange hash. As OpenSSH does when it reads one,
/// the CA's signature is checked before anything else is trusted.
public struct SSHCertificate: Equatable {
    /// "ssh-ed25519-cert-v01@openssh.com" and so on.
    public let typeName: String
    /// The certified key as a plain key blob ("ssh-ed25519", …).
    public let publicKey: [UInt8]
    public let serial: UInt64
    /// 1 for a user certificate, 2 for a host certificate.
    public let certificateType: UInt32
    public let keyID: String
    /// Names (patterns, for host certificates) the certificate is valid for.
    public let principals: [String]
    /// Seconds since the epoch: valid from validAfter, until before validBefore.
    public let validAfter: UInt64
    public let validBefore: UInt64
    /// Whether the critical options section is empty (a host certificate must have none).
    public let hasCriticalOptions: Bool
    /// The CA's public key blob (never itself a certificate).
    public let signatureKey: [UInt8]

    public static let hostType: UInt32 = 2
    static let suffix = "-cert-v01@openssh.com"
    /// OpenSSH's bound on principals.
    static let maxPrincipals = 256

    /// Whether `blob` names a certificate type (what follows is not read).
    public static func isCertificate(_ blob: [UInt8]) -> Bool {
        SSHPublicKey.typeName(of: blob)?.hasSuffix(suffix) ?? false
    }

    /// Reads `blob` and checks the CA's signature over it: a certificate whose signature
    /// does not verify is malformed. Throws for a blob that is not a certificate.
    public init(blob: [UInt8]) throws(HostKeySignature.Failure) {
        guard blob.count <= AgentMessage.Limit.keyBlob else { throw .malformedKey("a blob of \(blob.count) bytes") }
        let (fields, signature, signedLength): (SSHCertificate, [UInt8], Int)
        do { (fields, signature, signedLength) = try SSHCertificate.read(blob) } catch {
            throw .malformedKey("certificate: \(error.description)")
        }
        guard !SSHCertificate.isCertificate(fields.signatureKey) else { throw .malformedKey("a certificate signed by a certificate") }
        // The certified key must be one verified here (HostKey reads it fully).
        _ = try HostKey.parse(fields.publicKey)
        do {
            try HostKeySignature.verify(hostKey: fields.signatureKey, signature: signature, data: Array(blob.prefix(signedLength)))
        } catch {
            throw .malformedKey("certificate: the CA's signature: \(error.description)")
        }
        self = fields
    }

    private init(typeName: String, publicKey: [UInt8], serial: UInt64, certificateType: UInt32, keyID: String,
                 principals: [String], validAfter: UInt64, validBefore: UInt64, hasCriticalOptions: Bool,
                 signatureKey: [UInt8]) {
        self.typeName = typeName
        self.publicKey = publicKey
        self.serial = serial
        self.certificateType = certificateType
        self.keyID = keyID
        self.principals = principals
        self.validAfter = validAfter
        self.validBefore = validBefore
        self.hasCriticalOptions = hasCriticalOptions
        self.signatureKey = signatureKey
    }

    /// The fields, the CA's signature blob, and how many leading bytes that signature covers.
    private static func read(_ blob: [UInt8]) throws(SSHWireError) -> (SSHCertificate, [UInt8], Int) {
        var r = SSHReader(blob)
        let type = String(decoding: try r.string(limit: 64), as: UTF8.self)
        guard type.hasSuffix(suffix) else { throw .malformed("not a certificate") }
        let plainType = String(type.dropLast(suffix.count))
        _ = try r.string(limit: 1024)  // nonce
        let keyStart = r.offset
        switch plainType {
        case HostKey.ed25519Name: _ = try r.string(limit: 64)
        case HostKey.rsaName: _ = try r.mpint(limit: 64); _ = try r.mpint(limit: HostKey.rsaBits.upperBound / 8 + 1)
        case let name where HostKey.Curve.all.contains(where: { $0.name == name }):
            _ = try r.string(limit: 64); _ = try r.string(limit: 256)
        default: throw .malformed("a certificate of an unknown key type")
        }
        var plain = SSHWriter()
        plain.string(plainType)
        plain.raw(Array(blob[keyStart..<r.offset]))
        let serial = try r.uint64()
        let certType = try r.uint32()
        guard certType == 1 || certType == hostType else { throw .malformed("certificate type \(certType)") }
        let keyID = SSHText.display(try r.string(limit: 1024))
        var list = SSHReader(try r.string(limit: AgentMessage.Limit.keyBlob))
        var principals: [String] = []
        while !list.isAtEnd {
            guard principals.count < maxPrincipals else { throw .malformed("over \(maxPrincipals) principals") }
            principals.append(String(decoding: try list.string(limit: 1024), as: UTF8.self))
        }
        let validAfter = try r.uint64(), validBefore = try r.uint64()
        let critical = try r.string(limit: AgentMessage.Limit.keyBlob)
        try pairs(critical)
        try pairs(try r.string(limit: AgentMessage.Limit.keyBlob))  // extensions
        _ = try r.string(limit: 1024)  // reserved
        let signatureKey = try r.string(limit: AgentMessage.Limit.keyBlob)
        let signedLength = r.offset
        let signature = try r.string(limit: AgentMessage.Limit.signature)
        try r.finish()
        let cert = SSHCertificate(typeName: type, publicKey: plain.bytes, serial: serial, certificateType: certType,
                                  keyID: keyID, principals: principals, validAfter: validAfter, validBefore: validBefore,
                                  hasCriticalOptions: !critical.isEmpty, signatureKey: signatureKey)
        return (cert, signature, signedLength)
    }

    /// A section of (string name, string data) pairs, read to its end.
    private static func pairs(_ section: [UInt8]) throws(SSHWireError) {
        var r = SSHReader(section)
        while !r.isAtEnd {
            _ = try r.string(limit: section.count)
            _ = try r.string(limit: section.count)
        }
    }

    /// What ssh requires of a host certificate for `host` (the bare name, no port) at `now`
    /// (sshkey_cert_check_host): a host certificate, valid now, with principals, one of
    /// which (a pattern) matches `host`, and no critical options.
    public func isValidHostCertificate(for host: String, now: UInt64) -> Bool {
        certificateType == SSHCertificate.hostType && validAfter <= now && now < validBefore && !hasCriticalOptions &&
            principals.contains { Glob.matches(Array($0.utf8), Array(host.utf8)) }
    }
}
