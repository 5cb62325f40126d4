import CCrypto

/// Whether a server's host key signed some data: the session-bind of the ssh-agent protocol
/// carries the host key's signature over the session identifier (the exchange hash), and
/// only once it verifies may the agent name the destination or bind the connection.
/// The types OpenSSH servers offer: ssh-ed25519; ecdsa-sha2-nistp256/384/521 (the data
/// hashed with SHA-256/384/512, RFC 5656 §6.2.1); ssh-rsa keys with rsa-sha2-256/512
/// signatures (RFC 8332; the SHA-1 "ssh-rsa" signature is refused). libgcrypt checks.
public enum HostKeySignature {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The key blob is not a well-formed key of a type known here.
        case malformedKey(String)
        /// The signature blob is not well formed.
        case malformedSignature(String)
        /// A key type or signature algorithm not verified here.
        case unsupported(String)
        /// A signature algorithm that does not belong to the key's type.
        case mismatch(key: String, signature: String)
        /// Well formed, but not a signature of this key over this data.
        case bad

        public var description: String {
            switch self {
            case .malformedKey(let why): return "host key: \(why)"
            case .malformedSignature(let why): return "signature: \(why)"
            case .unsupported(let what): return "\(what) is not supported"
            case .mismatch(let key, let signature): return "a \(signature) signature for a \(key) key"
            case .bad: return "the signature does not verify"
            }
        }
    }

    /// Returns when `signature` (an SSH signature blob) is `hostKey`'s (an SSH public key
    /// blob) over `data`; throws saying why not otherwise.
    public static func verify(hostKey: [UInt8], signature: [UInt8], data: [UInt8]) throws(Failure) {
        guard data.count <= AgentFrame.maxLength else { throw .malformedSignature("data over \(AgentFrame.maxLength) bytes") }
        let key = try HostKey.parse(hostKey)
        let (algorithm, body): (String, [UInt8])
        do { (algorithm, body) = try SSHSignature.parse(signature) } catch { throw .malformedSignature(error.description) }
        _ = Crypto.sha256([])  // libgcrypt set up before its first direct use
        switch key {
        case .ed25519(let q):
            guard algorithm == HostKey.ed25519Name else { throw .mismatch(key: key.name, signature: algorithm) }
            guard body.count == 64 else { throw .malformedSignature("an Ed25519 signature of \(body.count) bytes") }
            guard la_ed25519_verify(q, body, data, data.count) == 0 else { throw .bad }
        case .ecdsa(let curve, let q):
            guard algorithm == curve.name else { throw .mismatch(key: key.name, signature: algorithm) }
            let (r, s): ([UInt8], [UInt8])
            do { (r, s) = try SSHSignature.ecdsaComponents(body, limit: curve.scalarBytes) } catch {
                throw .malformedSignature(error.description)
            }
            guard let digest = SSHDigest.hash(curve.hash, data) else { throw .unsupported(curve.hash.name) }
            guard la_ecdsa_verify(curve.gcryptName, q, q.count, curve.hash.name, digest, digest.count,
                                  r, r.count, s, s.count) == 0 else { throw .bad }
        case .rsa(let e, let n):
            let hash: SSHDigest.Algorithm
            switch algorithm {
            case "rsa-sha2-256": hash = .sha256
            case "rsa-sha2-512": hash = .sha512
            case HostKey.rsaName: throw .unsupported("the SHA-1 signature ssh-rsa")
            default: throw .mismatch(key: key.name, signature: algorithm)
            }
            // The signature is an integer below n: as long as n at most (OpenSSH pads a shorter one).
            guard !body.isEmpty, body.count <= n.count else { throw .malformedSignature("an RSA signature of \(body.count) bytes") }
            guard let digest = SSHDigest.hash(hash, data) else { throw .unsupported(hash.name) }
            guard la_rsa_verify(n, n.count, e, e.count, hash.name, digest, digest.count, body, body.count) == 0 else {
                throw .bad
            }
        }
    }

    /// The same verdict as a Bool, for callers that only log the failure's description elsewhere.
    public static func isValid(hostKey: [UInt8], signature: [UInt8], data: [UInt8]) -> Bool {
        (try? verify(hostKey: hostKey, signature: signature, data: data)) != nil
    }
}
