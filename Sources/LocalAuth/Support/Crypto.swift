import CCrypto

/// Hashes and keyed hashes from OpenSSL's libcrypto; nothing here is hand-written.
public enum Crypto {
    /// OpenSSL set up once, without reading the system's openssl.cnf: only SHA-256 and
    /// HMAC from the default provider are used, and parsing that file was the slowest part
    /// of a helper's way to the reader.
    private static let ready: Bool = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_LOAD_CONFIG), nil) == 1

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        _ = ready
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &out, &length, EVP_sha256(), nil)
        }
        precondition(ok == 1, "EVP_Digest(SHA-256) failed")  // only fails on allocation failure
        return Array(out.prefix(Int(length)))
    }

    /// HMAC-SHA-256 of `bytes` under `key`.
    public static func hmacSHA256(key: [UInt8], _ bytes: [UInt8]) -> [UInt8] {
        _ = ready
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { k in
            bytes.withUnsafeBytes { d in
                HMAC(EVP_sha256(), k.baseAddress, Int32(k.count),
                     d.baseAddress?.assumingMemoryBound(to: UInt8.self), d.count, &out, &length)
            }
        }
        precondition(result != nil, "HMAC(SHA-256) failed")
        return Array(out.prefix(Int(length)))
    }

    /// Cryptographically strong random bytes; nil if the generator failed.
    public static func randomBytes(_ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        return RAND_bytes(&out, Int32(count)) == 1 ? out : nil
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

    /// Overwrites a secret in place (the compiler may not elide it: OPENSSL_cleanse).
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
    }
}
