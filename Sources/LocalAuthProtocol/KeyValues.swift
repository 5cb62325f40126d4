/// `key=value` lines separated by `\n`, the payload of request and result frames.
public struct KeyValues: Equatable, Sendable {
    public private(set) var pairs: [(String, String)] = []

    public init() {}

    public init(_ pairs: [(String, String)]) { self.pairs = pairs }

    public static func == (a: KeyValues, b: KeyValues) -> Bool {
        a.pairs.count == b.pairs.count && zip(a.pairs, b.pairs).allSatisfy { $0 == $1 }
    }

    public mutating func add(_ key: String, _ value: String) { pairs.append((key, value)) }

    /// The only value of `key`; nil when absent.
    public func value(_ key: String) -> String? { pairs.first { $0.0 == key }?.1 }

    public func values(_ key: String) -> [String] { pairs.filter { $0.0 == key }.map(\.1) }

    public func count(_ key: String) -> Int { pairs.filter { $0.0 == key }.count }

    /// Values lose every byte 0x0A and 0x00 (they are one line each by definition). By
    /// byte, not by Character: "\r\n" is one Character, and a filter of Characters let its
    /// 0x0A through, which started a line (a key) of the value's choosing.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(pairs.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 })
        for (i, (key, value)) in pairs.enumerated() {
            if i > 0 { out.append(UInt8(ascii: "\n")) }
            out.append(contentsOf: key.utf8)
            out.append(UInt8(ascii: "="))
            for byte in value.utf8 where byte != 0x0A && byte != 0 { out.append(byte) }
        }
        return out
    }

    public enum ParseError: Error, Equatable, Sendable {
        case notText
        case lineWithoutEquals(Int)
        case emptyKey(Int)
    }

    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> KeyValues {
        guard !bytes.contains(0), String(validating: bytes, as: UTF8.self) != nil else {
            throw .notText
        }
        var kv = KeyValues()
        if bytes.isEmpty { return kv }
        // Lines end at the byte 0x0A, as the module writes them. Split as Characters, a
        // value ending in "\r" would join the next line ("\r\n" is one Character).
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        for (i, line) in lines.enumerated() {
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")) else { throw .lineWithoutEquals(i + 1) }
            guard eq != line.startIndex else { throw .emptyKey(i + 1) }
            kv.add(String(decoding: line[..<eq], as: UTF8.self),
                   String(decoding: line[(eq + 1)...], as: UTF8.self))
        }
        return kv
    }
}
