/// SSH public keys as blobs (RFC 5656 §3.1 for ECDSA: string "ecdsa-sha2-nistp256",
/// string "nistp256", string Q) and as the one-line form of authorized_keys, allowed_signers
/// and `ssh-add -L`. localauth's keys are P-256 (`P256`); other types are only read, to
/// name and verify a server's host key.
public enum SSHPublicKey {
    public static let p256Name = "ecdsa-sha2-nistp256"
    static let p256Curve = "nistp256"

    /// The blob of the P-256 key whose X9.63 uncompressed point is `point` (65 bytes, 0x04 first).
    public static func p256Blob(point: [UInt8]) throws(SSHWireError) -> [UInt8] {
        guard point.count == 65, point[0] == 0x04 else { throw .malformed("not an uncompressed P-256 point") }
        var w = SSHWriter()
        w.string(p256Name)
        w.string(p256Curve)
        w.string(point)
        return w.bytes
    }

    /// The 65-byte point of a P-256 key's blob; throws for any other blob.
    public static func p256Point(blob: [UInt8]) throws(SSHWireError) -> [UInt8] {
        var r = SSHReader(blob)
        guard try r.string(limit: 64) == Array(p256Name.utf8) else { throw .malformed("not an \(p256Name) key") }
        guard try r.string(limit: 64) == Array(p256Curve.utf8) else { throw .malformed("not the nistp256 curve") }
        let point = try r.string(limit: 65)
        guard point.count == 65, point[0] == 0x04 else { throw .malformed("not an uncompressed P-256 point") }
        try r.finish()
        return point
    }

    /// The key type a blob names ("ssh-ed25519", "rsa-sha2-512"'s key "ssh-rsa", …), if its
    /// first field is a plausible name (1 to 64 printable ASCII bytes); what it says is not
    /// checked against the rest of the blob.
    public static func typeName(of blob: [UInt8]) -> String? {
        var r = SSHReader(blob)
        guard let name = try? r.string(limit: 64) else { return nil }
        return printableName(name)
    }

    /// 1 to 64 bytes of printable ASCII without spaces, as text.
    static func printableName(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty, bytes.count <= 64, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// "SHA256:" and the unpadded base64 of SHA-256(blob), as `ssh-keygen -l` prints it.
    public static func fingerprint(_ blob: [UInt8]) -> String {
        "SHA256:" + SSHBase64.encode(Crypto.sha256(blob), padded: false)
    }

    /// "TYPE BASE64 COMMENT" (authorized_keys, `ssh-add -L`); the comment loses its control
    /// characters, which would end the line. Throws for a blob without a type name.
    public static func line(blob: [UInt8], comment: String = "") throws(SSHWireError) -> String {
        guard let type = typeName(of: blob) else { throw .malformed("a key blob without a type name") }
        let tail = sanitized(comment)
        return type + " " + SSHBase64.encode(blob) + (tail.isEmpty ? "" : " " + tail)
    }

    /// An allowed_signers line (ssh-keygen(1) "ALLOWED SIGNERS") for `principal`, e.g. an
    /// e-mail address, limited to `namespaces` when some are given ("git").
    public static func allowedSignersLine(principal: String, blob: [UInt8],
                                          namespaces: [String] = []) throws(SSHWireError) -> String {
        guard !principal.isEmpty,
              principal.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0 != "\"" && $0 != "," && $0.value != 0x7f })
        else { throw .malformed("a principal with spaces, quotes, commas or control characters") }
        guard namespaces.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: ",") } })
        else { throw .malformed("a namespace that is not plain ASCII") }
        let options = namespaces.isEmpty ? "" : "namespaces=\"" + namespaces.joined(separator: ",") + "\" "
        return principal + " " + options + (try line(blob: blob))
    }

    /// The type, blob and comment of a "TYPE BASE64 [COMMENT]" line; nil if the base64 is
    /// not, or the blob's own type is not TYPE.
    public static func parseLine(_ text: String) -> (type: String, blob: [UInt8], comment: String)? {
        let fields = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard fields.count >= 2, let blob = SSHBase64.decode(fields[1], limit: 64 * 1024),
              let type = typeName(of: blob), type == fields[0] else { return nil }
        return (type, blob, fields.count > 2 ? String(fields[2]) : "")
    }

    private static func sanitized(_ comment: String) -> String {
        String(String.UnicodeScalarView(comment.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f }))
    }
}
