#if canImport(Glibc)
import Glibc
#endif
import CCrypto

/// Hashes and keyed hashes from libgcrypt, random bytes from the kernel; nothing here is
/// hand-written. libgcrypt is the crypto library libsystemd already loads (sd-bus needs
/// libsystemd), so the helper maps no second one.
public enum Crypto {
    /// libgcrypt set up once, before its first use (la_gcrypt_setup in the C shim).
    private static let ready: Bool = la_gcrypt_setup() != 0

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { data in digest(flags: 0, [data]) }
    }

    /// HMAC-SHA-256 of `bytes` under `key`.
    public static func hmacSHA256(key: [UInt8], _ bytes: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { k in
            bytes.withUnsafeBytes { data in digest(flags: UInt32(GCRY_MD_FLAG_HMAC.rawValue), [k, data]) }
        }
    }

    /// SHA-256 over `parts` in one call (gcry_md_hash_buffers); with GCRY_MD_FLAG_HMAC the
    /// first part is the key.
    private static func digest(flags: UInt32, _ parts: [UnsafeRawBufferPointer]) -> [UInt8] {
        precondition(ready, "libgcrypt could not be set up (older than the headers it was built with?)")
        var iov = parts.map {
            gcry_buffer_t(size: $0.count, off: 0, len: $0.count,
                          data: UnsafeMutableRawPointer(mutating: $0.baseAddress))
        }
        var out = [UInt8](repeating: 0, count: 32)
        let err = out.withUnsafeMutableBytes { o in
            gcry_md_hash_buffers(Int32(GCRY_MD_SHA256.rawValue), flags, o.baseAddress, &iov, Int32(iov.count))
        }
        precondition(err == 0, "gcry_md_hash_buffers(SHA-256) failed: \(err)")  // allocation, or FIPS refusing
        return out
    }

    /// Cryptographically strong random bytes (getrandom: the kernel's generator, waiting
    /// only until it is seeded after boot); nil if the kernel refused.
    public static func randomBytes(_ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = out.withUnsafeMutableBytes { getrandom($0.baseAddress! + filled, count - filled, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            filled += n
        }
        return out
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var chars: [UInt8] = []
        chars.reserveCapacity(bytes.count * 2)
        for b in bytes {
            chars.append(digits[Int(b >> 4)])
            chars.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: chars, as: UTF8.self)
    }

    /// Overwrites a secret in place (explicit_bzero: the compiler may not elide it).
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
    }
}
