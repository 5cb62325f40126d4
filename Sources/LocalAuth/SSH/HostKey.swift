/// A server's public key blob, read to verify its signature (`HostKeySignature`).
enum HostKey: Equatable {
    case ed25519(q: [UInt8])
    case ecdsa(curve: Curve, q: [UInt8])
    /// e and n, unsigned big-endian.
    case rsa(e: [UInt8], n: [UInt8])

    static let ed25519Name = "ssh-ed25519"
    static let rsaName = "ssh-rsa"

    /// The curves of RFC 5656 OpenSSH offers, each with the hash its signatures use.
    struct Curve: Equatable {
        let identifier: String   // "nistp256"
        let gcryptName: String   // "NIST P-256"
        let hash: SSHDigest.Algorithm
        let scalarBytes: Int     // the byte length of the group order
        var name: String { "ecdsa-sha2-" + identifier }
        var pointBytes: Int { 1 + 2 * scalarBytes }

        static let all = [
            Curve(identifier: "nistp256", gcryptName: "NIST P-256", hash: .sha256, scalarBytes: 32),
            Curve(identifier: "nistp384", gcryptName: "NIST P-384", hash: .sha384, scalarBytes: 48),
            Curve(identifier: "nistp521", gcryptName: "NIST P-521", hash: .sha512, scalarBytes: 66),
        ]
    }

    /// OpenSSH's bounds on an RSA modulus: at least 1024 bits, at most 16384.
    static let rsaBits = 1024...16384

    var name: String {
        switch self {
        case .ed25519: return HostKey.ed25519Name
        case .ecdsa(let curve, _): return curve.name
        case .rsa: return HostKey.rsaName
        }
    }

    static func parse(_ blob: [UInt8]) throws(HostKeySignature.Failure) -> HostKey {
        guard blob.count <= AgentMessage.Limit.keyBlob else { throw .malformedKey("a blob of \(blob.count) bytes") }
        guard let type = SSHPublicKey.typeName(of: blob) else { throw .malformedKey("no type name") }
        // A certificate's key signs; the certificate itself must carry its CA's good signature.
        if type.hasSuffix(SSHCertificate.suffix) { return try parse(SSHCertificate(blob: blob).publicKey) }
        guard type == ed25519Name || type == rsaName || Curve.all.contains(where: { $0.name == type }) else {
            throw .unsupported("the key type \(type)")
        }
        do { return try read(blob) } catch { throw .malformedKey(error.description) }
    }

    /// The fields after the type name, which `parse` has checked is one of these.
    private static func read(_ blob: [UInt8]) throws(SSHWireError) -> HostKey {
        var r = SSHReader(blob)
        let type = String(decoding: try r.string(limit: 64), as: UTF8.self)
        let key: HostKey
        if type == ed25519Name {
            let q = try r.string(limit: 32)
            guard q.count == 32 else { throw .malformed("an Ed25519 key of \(q.count) bytes") }
            key = .ed25519(q: q)
        } else if type == rsaName {
            let e = try r.mpint(limit: 64)
            let n = try r.mpint(limit: rsaBits.upperBound / 8 + 1)
            guard !e.isEmpty, e != [1], let top = n.first, rsaBits.contains(n.count * 8 - top.leadingZeroBitCount) else {
                throw .malformed("an RSA key out of bounds")
            }
            key = .rsa(e: e, n: n)
        } else {
            guard let curve = Curve.all.first(where: { $0.name == type }) else { throw .malformed("type \(type)") }
            guard try r.string(limit: 64) == Array(curve.identifier.utf8) else {
                throw .malformed("a curve that is not \(curve.identifier)")
            }
            let q = try r.string(limit: curve.pointBytes)
            guard q.count == curve.pointBytes, q[0] == 0x04 else {
                throw .malformed("not an uncompressed \(curve.identifier) point")
            }
            key = .ecdsa(curve: curve, q: q)
        }
        try r.finish()
        return key
    }
}
