/// A key's public half as OpenSSH writes it: the `ecdsa-sha2-nistp256` blob (RFC 5656:
/// string "ecdsa-sha2-nistp256", string "nistp256", string Q), its base64 in an
/// `authorized_keys` or `allowed_signers` line, and its `SHA256:` fingerprint. The one
/// place these forms of a key are made for key management and lookup.
public enum SSHKeyText {
    public static let keyType = "ecdsa-sha2-nistp256"
    static let curve = "nistp256"

    /// The public key blob of a 65-byte X9.63 point.
    public static func blob(point: [UInt8]) -> [UInt8] {
        string(Array(keyType.utf8)) + string(Array(curve.utf8)) + string(point)
    }

    /// The point of an `ecdsa-sha2-nistp256` blob; nil for any other blob.
    public static func point(blob: [UInt8]) -> [UInt8]? {
        guard blob.count == 4 + 19 + 4 + 8 + 4 + 65 else { return nil }
        let point = Array(blob.suffix(65))
        return self.blob(point: point) == blob && point[0] == 0x04 ? point : nil
    }

    /// `ecdsa-sha2-nistp256 AAAA… comment` (the comment left out when empty).
    public static func openSSHLine(point: [UInt8], comment: String) -> String {
        let key = keyType + " " + base64(blob(point: point))
        return comment.isEmpty ? key : key + " " + comment
    }

    /// An `allowed_signers` line (ssh-keygen(1), ALLOWED SIGNERS) for git's signatures:
    /// `PRINCIPAL namespaces="git" ecdsa-sha2-nistp256 AAAA…`.
    public static func allowedSignersLine(principal: String, point: [UInt8], namespace: String = "git") -> String {
        "\(principal) namespaces=\"\(namespace)\" \(keyType) \(base64(blob(point: point)))"
    }

    /// Why `principal` cannot open an allowed_signers line (no white space, quote, comma
    /// list trick or control character: one principal, as git's user.email); nil when it can.
    public static func principalProblem(_ principal: String) -> String? {
        let bytes = Array(principal.utf8)
        guard (1...256).contains(bytes.count) else { return "a principal is 1 to 256 bytes" }
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: ",") }),
              bytes[0] != UInt8(ascii: "#") else {
            return "a principal is printable ASCII without spaces, quotes or commas, not starting with #"
        }
        return nil
    }

    /// `SHA256:` and the unpadded base64 of the blob's SHA-256, as `ssh-keygen -l` prints it.
    public static func fingerprint(point: [UInt8]) -> String {
        fingerprint(blob: blob(point: point))
    }

    public static func fingerprint(blob: [UInt8]) -> String {
        var text = base64(Crypto.sha256(blob))
        while text.hasSuffix("=") { text.removeLast() }
        return "SHA256:" + text
    }

    /// An SSH `string`: uint32 length, then the bytes.
    private static func string(_ bytes: [UInt8]) -> [UInt8] {
        let n = UInt32(bytes.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + bytes
    }

    /// RFC 4648 base64, padded.
    public static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let b0 = UInt32(bytes[i])
            let b1 = n > 1 ? UInt32(bytes[i + 1]) : 0
            let b2 = n > 2 ? UInt32(bytes[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(n > 1 ? alphabet[Int(v >> 6 & 63)] : UInt8(ascii: "="))
            out.append(n > 2 ? alphabet[Int(v & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
