/// The forms of a stored key's public half that key management and the agent use, from its
/// 65-byte point: the wire's SSHPublicKey makes them (the blob, the one-line form, the
/// allowed_signers line, the `SHA256:` fingerprint); here they are total functions of a
/// point the store checked (SSHKeyRecord.decode: 65 bytes, 0x04 first), and the one rule
/// for what may name a signer.
public enum SSHKeyText {
    public static let keyType = SSHPublicKey.p256Name

    /// The public key blob of a 65-byte X9.63 point (an empty blob for anything else: it
    /// matches no key).
    public static func blob(point: [UInt8]) -> [UInt8] {
        (try? SSHPublicKey.p256Blob(point: point)) ?? []
    }

    /// The point of an `ecdsa-sha2-nistp256` blob; nil for any other blob.
    public static func point(blob: [UInt8]) -> [UInt8]? {
        try? SSHPublicKey.p256Point(blob: blob)
    }

    /// `ecdsa-sha2-nistp256 AAAA… comment` (the comment left out when empty).
    public static func openSSHLine(point: [UInt8], comment: String) -> String {
        (try? SSHPublicKey.line(blob: blob(point: point), comment: comment)) ?? ""
    }

    /// An `allowed_signers` line (ssh-keygen(1), ALLOWED SIGNERS) for git's signatures:
    /// `PRINCIPAL namespaces="git" ecdsa-sha2-nistp256 AAAA…`. Empty for a principal
    /// `principalProblem` refuses.
    public static func allowedSignersLine(principal: String, point: [UInt8], namespace: String = "git") -> String {
        guard principalProblem(principal) == nil else { return "" }
        return (try? SSHPublicKey.allowedSignersLine(principal: principal, blob: blob(point: point),
                                                     namespaces: [namespace])) ?? ""
    }

    /// Why `principal` cannot open an allowed_signers line (no white space, quote, comma
    /// list or control character, not a comment: one principal, as git's user.email); nil
    /// when it can.
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
        SSHPublicKey.fingerprint(blob(point: point))
    }

    public static func fingerprint(blob: [UInt8]) -> String {
        SSHPublicKey.fingerprint(blob)
    }
}
