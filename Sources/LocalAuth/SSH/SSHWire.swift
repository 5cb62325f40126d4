/// The SSH wire encoding (RFC 4251 §5) the agent protocol, public keys and signatures are
/// written in: big-endian uint32, length-prefixed strings, mpints, one-byte booleans.
/// Everything read here comes from a hostile peer, so every length is checked against what
/// is left and against a bound the caller names before anything is allocated.
public enum SSHWireError: Error, Equatable, CustomStringConvertible {
    /// Fewer bytes left than the field needs.
    case truncated
    /// A length prefix above the bound for that field.
    case tooLong(length: Int, limit: Int)
    /// Bytes left over after the last field of a structure.
    case trailingBytes(Int)
    /// A field that is well framed but not what it must be (an mpint with a sign, a name
    /// that is not UTF-8, an unknown type).
    case malformed(String)

    public var description: String {
        switch self {
        case .truncated: return "truncated"
        case .tooLong(let length, let limit): return "a length of \(length) over the bound \(limit)"
        case .trailingBytes(let n): return "\(n) bytes after the last field"
        case .malformed(let why): return why
        }
    }
}

/// Reads fields in order from a byte buffer; never traps, whatever the bytes.
public struct SSHReader {
    private let bytes: [UInt8]
    private var index: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.index = 0
    }

    public init(_ bytes: ArraySlice<UInt8>) {
        self.init(Array(bytes))
    }

    public var remaining: Int { bytes.count - index }
    /// How many bytes have been read.
    public var offset: Int { index }
    public var isAtEnd: Bool { index >= bytes.count }

    public mutating func byte() throws(SSHWireError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated }
        defer { index += 1 }
        return bytes[index]
    }

    public mutating func uint32() throws(SSHWireError) -> UInt32 {
        let raw = try take(4)
        return raw.reduce(0) { $0 << 8 | UInt32($1) }
    }

    public mutating func uint64() throws(SSHWireError) -> UInt64 {
        let raw = try take(8)
        return raw.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A boolean: any byte but zero is true (RFC 4251: "all non-zero values MUST be
    /// interpreted as TRUE"), the reading that never mistakes a forwarded use for a local one.
    public mutating func bool() throws(SSHWireError) -> Bool {
        try byte() != 0
    }

    /// `count` raw bytes.
    public mutating func take(_ count: Int) throws(SSHWireError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .truncated }
        defer { index += count }
        return Array(bytes[index..<(index + count)])
    }

    /// A string's bytes; its length must be at most `limit`.
    public mutating func string(limit: Int) throws(SSHWireError) -> [UInt8] {
        let length = try uint32()
        guard length <= UInt32(clamping: limit) else { throw .tooLong(length: Int(length), limit: limit) }
        return try take(Int(length))
    }

    /// A string that must be UTF-8 text (names, namespaces, comments).
    public mutating func text(limit: Int) throws(SSHWireError) -> String {
        let raw = try string(limit: limit)
        guard let text = String(validating: raw, as: UTF8.self) else { throw .malformed("a name that is not UTF-8") }
        return text
    }

    /// A non-negative mpint as its unsigned big-endian magnitude without leading zeros
    /// (zero is []). A negative value or a needless leading zero byte is refused, as
    /// OpenSSH refuses them. `limit` bounds the encoded length.
    public mutating func mpint(limit: Int) throws(SSHWireError) -> [UInt8] {
        let raw = try string(limit: limit)
        guard let first = raw.first else { return [] }
        guard first & 0x80 == 0 else { throw .malformed("a negative mpint") }
        guard first != 0 else {
            guard raw.count > 1, raw[1] & 0x80 != 0 else { throw .malformed("an mpint with a needless leading zero") }
            return Array(raw.dropFirst())
        }
        return raw
    }

    /// Throws unless every byte has been read.
    public func finish() throws(SSHWireError) {
        guard isAtEnd else { throw .trailingBytes(remaining) }
    }
}

/// Writes fields in order.
public struct SSHWriter {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func byte(_ value: UInt8) {
        bytes.append(value)
    }

    public mutating func uint32(_ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    public mutating func bool(_ value: Bool) {
        bytes.append(value ? 1 : 0)
    }

    public mutating func raw(_ value: [UInt8]) {
        bytes += value
    }

    /// A string; the callers' values are bounded far below 4 GiB (the frame is 256 KiB).
    public mutating func string(_ value: [UInt8]) {
        uint32(UInt32(truncatingIfNeeded: value.count))
        bytes += value
    }

    public mutating func string(_ value: String) {
        string(Array(value.utf8))
    }

    /// An unsigned big-endian magnitude as an mpint: leading zeros dropped, one zero byte
    /// added before a high bit so it does not read as negative.
    public mutating func mpint(unsigned value: [UInt8]) {
        var v = Array(value.drop { $0 == 0 })
        if let first = v.first, first & 0x80 != 0 { v.insert(0, at: 0) }
        string(v)
    }
}
