#if canImport(Glibc)
import Glibc
#endif
import CCrypto

/// ECDSA over NIST P-256 with SHA-256, from libgcrypt (the C shim's la_p256_*): the keys
/// of the rights store. The private key never leaves the root side; the public key is the
/// X9.63 uncompressed point Apple's `LAPublicKey.export()` gives, and a signature is the
/// DER `ECDSA-Sig-Value` Apple's `.ecdsaSignatureMessageX962SHA256` gives.
public enum P256 {
    public struct KeyPair {
        /// The scalar d, 32 bytes (wipe after use).
        public var privateKey: [UInt8]
        /// 0x04 || x || y, 65 bytes.
        public let publicKey: [UInt8]
    }

    public enum Failure: Error, CustomStringConvertible {
        case library(String)
        public var description: String {
            switch self { case .library(let why): return "libgcrypt: \(why)" }
        }
    }

    public static func generate() throws(Failure) -> KeyPair {
        _ = Crypto.sha256([])  // libgcrypt set up (Crypto.ready)
        var d = [UInt8](repeating: 0, count: 32)
        var q = [UInt8](repeating: 0, count: 65)
        guard la_p256_generate(&d, &q) == 0 else { throw .library("key generation failed") }
        return KeyPair(privateKey: d, publicKey: q)
    }

    /// The DER signature of SHA-256(`message`).
    public static func sign(message: [UInt8], privateKey: [UInt8], publicKey: [UInt8]) throws(Failure) -> [UInt8] {
        try sign(digest: Crypto.sha256(message), privateKey: privateKey, publicKey: publicKey)
    }

    public static func sign(digest: [UInt8], privateKey: [UInt8], publicKey: [UInt8]) throws(Failure) -> [UInt8] {
        guard digest.count == 32, privateKey.count == 32, publicKey.count == 65 else {
            throw .library("a digest, key or point of the wrong size")
        }
        _ = Crypto.sha256([])
        var r = [UInt8](repeating: 0, count: 32)
        var s = [UInt8](repeating: 0, count: 32)
        guard la_p256_sign(privateKey, publicKey, digest, &r, &s) == 0 else { throw .library("signing failed") }
        return DER.ecdsaSignature(r: r, s: s)
    }

    /// Whether `signature` (DER) is one of `publicKey` over SHA-256(`message`).
    public static func verify(message: [UInt8], signature: [UInt8], publicKey: [UInt8]) -> Bool {
        guard publicKey.count == 65, let (r, s) = DER.ecdsaComponents(signature) else { return false }
        return la_p256_verify(publicKey, Crypto.sha256(message), r, s) == 0
    }
}

/// The one DER structure used: `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }`.
enum DER {
    static func ecdsaSignature(r: [UInt8], s: [UInt8]) -> [UInt8] {
        let body = integer(r) + integer(s)
        return [0x30] + length(body.count) + body
    }

    /// A non-negative INTEGER: no leading zero bytes but one, and a 0x00 before a high bit.
    private static func integer(_ bytes: [UInt8]) -> [UInt8] {
        var v = Array(bytes.drop { $0 == 0 })
        if v.isEmpty { v = [0] }
        if v[0] & 0x80 != 0 { v.insert(0, at: 0) }
        return [0x02] + length(v.count) + v
    }

    private static func length(_ n: Int) -> [UInt8] {
        n < 0x80 ? [UInt8(n)] : [0x81, UInt8(n)]  // a P-256 signature is at most 72 bytes
    }

    /// r and s, 32 bytes each, of a well-formed signature; nil otherwise.
    static func ecdsaComponents(_ der: [UInt8]) -> ([UInt8], [UInt8])? {
        guard der.count >= 8, der[0] == 0x30, Int(der[1]) == der.count - 2 else { return nil }
        var i = 2
        func next() -> [UInt8]? {
            guard i + 2 <= der.count, der[i] == 0x02 else { return nil }
            let n = Int(der[i + 1])
            guard n >= 1, n <= 33, i + 2 + n <= der.count else { return nil }
            var v = Array(der[(i + 2)..<(i + 2 + n)])
            i += 2 + n
            if v.count == 33 {
                guard v[0] == 0 else { return nil }
                v.removeFirst()
            }
            return [UInt8](repeating: 0, count: 32 - v.count) + v
        }
        guard let r = next(), let s = next(), i == der.count else { return nil }
        return (r, s)
    }
}
