/// SSH signature blobs (RFC 4253 §6.6): string algorithm, string body. For ECDSA (RFC 5656
/// §3.1.2) the body is mpint r || mpint s; for Ed25519 (RFC 8709) the 64 bytes R || S; for
/// RSA (RFC 8332) the PKCS#1 v1.5 signature as one unsigned integer.
public enum SSHSignature {
    /// The agent's answer for a localauth key: `der` is what `P256.sign` returns.
    public static func p256(der: [UInt8]) throws(SSHWireError) -> [UInt8] {
        guard let (r, s) = DER.ecdsaComponents(der) else { throw .malformed("not a DER ECDSA signature") }
        var body = SSHWriter()
        body.mpint(unsigned: r)
        body.mpint(unsigned: s)
        var w = SSHWriter()
        w.string(SSHPublicKey.p256Name)
        w.string(body.bytes)
        return w.bytes
    }

    /// The algorithm name and body of a signature blob (no trailing bytes).
    public static func parse(_ blob: [UInt8]) throws(SSHWireError) -> (algorithm: String, body: [UInt8]) {
        var r = SSHReader(blob)
        guard let algorithm = SSHPublicKey.printableName(try r.string(limit: 64)) else {
            throw .malformed("a signature without an algorithm name")
        }
        let body = try r.string(limit: AgentMessage.Limit.signature)
        try r.finish()
        return (algorithm, body)
    }

    /// r and s (each at most `limit` bytes, unsigned, no leading zeros) of an ECDSA body.
    public static func ecdsaComponents(_ body: [UInt8], limit: Int) throws(SSHWireError) -> (r: [UInt8], s: [UInt8]) {
        var reader = SSHReader(body)
        let r = try reader.mpint(limit: limit + 1)
        let s = try reader.mpint(limit: limit + 1)
        try reader.finish()
        guard !r.isEmpty, !s.isEmpty, r.count <= limit, s.count <= limit else {
            throw .malformed("an ECDSA signature value out of range")
        }
        return (r, s)
    }
}
