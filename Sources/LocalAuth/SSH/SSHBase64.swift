/// Base64 (RFC 4648 §4, the standard alphabet) as OpenSSH writes keys, fingerprints and
/// signatures; here because the engine has no Foundation.
public enum SSHBase64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// The value of each alphabet byte, 0xff for every other byte.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    /// `bytes` in base64; `padded: false` leaves out the trailing '=' (fingerprints).
    public static func encode(_ bytes: [UInt8], padded: Bool = true) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let b0 = bytes[i], b1 = n > 1 ? bytes[i + 1] : 0, b2 = n > 2 ? bytes[i + 2] : 0
            let sextets = [b0 >> 2, (b0 & 0x03) << 4 | b1 >> 4, (b1 & 0x0f) << 2 | b2 >> 6, b2 & 0x3f]
            for k in 0..<(n + 1) { out.append(alphabet[Int(sextets[k])]) }
            if padded { for _ in n..<3 { out.append(UInt8(ascii: "=")) } }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of `text`: padding optional, but no other byte than the alphabet's, no
    /// whitespace, and no leftover bits set (a non-canonical ending is refused). nil if not
    /// base64 or longer than `limit` characters.
    public static func decode(_ text: some StringProtocol, limit: Int = 1 << 20) -> [UInt8]? {
        decode(bytes: Array(text.utf8), limit: limit)
    }

    public static func decode(bytes input: [UInt8], limit: Int = 1 << 20) -> [UInt8]? {
        guard input.count <= limit else { return nil }
        var chars = input[...]
        var pads = 0
        while chars.last == UInt8(ascii: "="), pads < 2 {
            chars.removeLast()
            pads += 1
        }
        guard pads == 0 || (chars.count + pads) % 4 == 0, chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in chars {
            let v = values[Int(c)]
            guard v != 0xff else { return nil }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }
        return out
    }
}
