import CCrypto

/// The hashes SSH signatures and hashed known_hosts names use, from libgcrypt.
enum SSHDigest {
    struct Algorithm: Equatable {
        let id: Int32
        /// libgcrypt's name in an S-expression ("sha256").
        let name: String
        let length: Int

        static let sha1 = Algorithm(id: Int32(GCRY_MD_SHA1.rawValue), name: "sha1", length: 20)
        static let sha256 = Algorithm(id: Int32(GCRY_MD_SHA256.rawValue), name: "sha256", length: 32)
        static let sha384 = Algorithm(id: Int32(GCRY_MD_SHA384.rawValue), name: "sha384", length: 48)
        static let sha512 = Algorithm(id: Int32(GCRY_MD_SHA512.rawValue), name: "sha512", length: 64)
    }

    /// nil only if libgcrypt refuses the algorithm (a FIPS mode, an allocation failure).
    static func hash(_ algorithm: Algorithm, _ data: [UInt8]) -> [UInt8]? {
        run(algorithm, key: nil, data)
    }

    /// HMAC of `data` under `key` (non-empty).
    static func hmac(_ algorithm: Algorithm, key: [UInt8], _ data: [UInt8]) -> [UInt8]? {
        run(algorithm, key: key, data)
    }

    private static func run(_ algorithm: Algorithm, key: [UInt8]?, _ data: [UInt8]) -> [UInt8]? {
        _ = Crypto.sha256([])  // libgcrypt set up
        var out = [UInt8](repeating: 0, count: algorithm.length)
        // A non-empty buffer under every pointer (an empty array may have none).
        let message = data.isEmpty ? [0] : data
        let rc = message.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { o in
                if let key {
                    return key.withUnsafeBufferPointer { k in
                        la_md(algorithm.id, k.baseAddress, k.count, d.baseAddress, data.count, o.baseAddress)
                    }
                }
                return la_md(algorithm.id, nil, 0, d.baseAddress, data.count, o.baseAddress)
            }
        }
        return rc == 0 ? out : nil
    }
}
