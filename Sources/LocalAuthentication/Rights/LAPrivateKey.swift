import CCrypto
import Foundation

/// Apple's `SecKeyAlgorithm` (a Security framework string, absent on Linux): the names a
/// right's key is used with. Only ECDSA P-256 with SHA-256 is here.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// ECDSA over SHA-256 of the message, the signature in DER (X9.62), as Apple's.
    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA256")
    /// The same over a SHA-256 digest the caller computed.
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-X962:SHA256")
}

/// Apple's `LAPrivateKey`: a right's P-256 private key, created and kept by the root side;
/// it signs only for the process the right was authorized for.
///
/// `@unchecked Sendable`: its properties are constants.
open class LAPrivateKey: NSObject, @unchecked Sendable {
    let identifier: String
    public let publicKey: LAPublicKey
    let capability: RightCapability

    init(identifier: String, publicKey: LAPublicKey, capability: RightCapability) {
        self.identifier = identifier
        self.publicKey = publicKey
        self.capability = capability
    }

    open func canSign(using algorithm: SecKeyAlgorithm) -> Bool {
        algorithm == .ecdsaSignatureMessageX962SHA256 || algorithm == .ecdsaSignatureDigestX962SHA256
    }

    /// Apple's other uses of the key (decryption, key exchange) are not offered here.
    open func canDecrypt(using algorithm: SecKeyAlgorithm) -> Bool { false }
    open func canExchangeKeys(using algorithm: SecKeyAlgorithm) -> Bool { false }

    /// The DER ECDSA signature of `data` (of its SHA-256, for the message algorithm).
    nonisolated(nonsending) open func sign(_ data: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        let digest: Data
        switch algorithm {
        case .ecdsaSignatureMessageX962SHA256: digest = Digest.sha256(data)
        case .ecdsaSignatureDigestX962SHA256 where data.count == 32: digest = data
        default:
            throw LAError.make(.invalidContext, debug: "the key signs with ecdsaSignatureMessageX962SHA256 only")
        }
        let values = try await RightsClient.call(.sign(identifier: try RightsClient.wire(identifier),
                                                       digest: RightsClient.hex(digest),
                                                       capability: capability.current ?? ""))
        guard let signature = RightsClient.bytes(values["signature"]), !signature.isEmpty else {
            throw LAError.make(.biometryNotAvailable, debug: "the root side sent no readable signature")
        }
        return signature
    }

    @preconcurrency
    open func sign(_ data: Data, secKeyAlgorithm algorithm: SecKeyAlgorithm,
                   completion: @escaping @Sendable (Data?, Error?) -> Void) {
        RightsClient.complete({ try await self.sign(data, algorithm: algorithm) }, completion)
    }
}

/// Apple's `LAPublicKey`: the public half, which may leave.
///
/// `@unchecked Sendable`: its one property is a constant.
open class LAPublicKey: NSObject, @unchecked Sendable {
    let bytes: Data

    init(bytes: Data) {
        self.bytes = bytes
    }

    /// The X9.63 uncompressed point (0x04 || x || y, 65 bytes), as Apple exports it.
    nonisolated(nonsending) open func export() async throws -> Data { bytes }

    @preconcurrency
    open func export(completion: @escaping @Sendable (Data?, Error?) -> Void) {
        completion(bytes, nil)
    }

    open func canVerify(using algorithm: SecKeyAlgorithm) -> Bool {
        algorithm == .ecdsaSignatureMessageX962SHA256
    }

    /// Throws `authenticationFailed` when `signature` is not the key's over `signedData`.
    nonisolated(nonsending) open func verify(_ signedData: Data, signature: Data, algorithm: SecKeyAlgorithm) async throws {
        guard algorithm == .ecdsaSignatureMessageX962SHA256, Digest.verify(signedData, signature, key: bytes) else {
            throw LAError.make(.authenticationFailed, debug: "the signature does not verify")
        }
    }
}

/// SHA-256 and P-256 verification from libgcrypt (the root side's library too).
enum Digest {
    private static let ready: Bool = la_gcrypt_setup() != 0

    static func sha256(_ data: Data) -> Data {
        precondition(ready, "libgcrypt did not start")
        var out = [UInt8](repeating: 0, count: 32)
        data.withUnsafeBytes { gcry_md_hash_buffer(Int32(GCRY_MD_SHA256.rawValue), &out, $0.baseAddress, $0.count) }
        return Data(out)
    }

    static func verify(_ message: Data, _ der: Data, key: Data) -> Bool {
        guard ready, key.count == 65, let (r, s) = components(Array(der)) else { return false }
        let digest = Array(sha256(message))
        return la_p256_verify(Array(key), digest, r, s) == 0
    }

    /// r and s (32 bytes each) of a DER ECDSA-Sig-Value.
    private static func components(_ der: [UInt8]) -> ([UInt8], [UInt8])? {
        guard der.count >= 8, der[0] == 0x30, Int(der[1]) == der.count - 2 else { return nil }
        var i = 2
        func integer() -> [UInt8]? {
            guard i + 2 <= der.count, der[i] == 0x02 else { return nil }
            let n = Int(der[i + 1])
            guard (1...33).contains(n), i + 2 + n <= der.count else { return nil }
            var v = Array(der[(i + 2)..<(i + 2 + n)])
            i += 2 + n
            if v.count == 33 { guard v.removeFirst() == 0 else { return nil } }
            return [UInt8](repeating: 0, count: 32 - v.count) + v
        }
        guard let r = integer(), let s = integer(), i == der.count else { return nil }
        return (r, s)
    }
}
