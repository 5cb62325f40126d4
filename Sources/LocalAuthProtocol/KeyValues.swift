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

    /// Lines end at the byte 0x0A, as the module writes them (split as Characters, a value
    /// ending in "\r" would join the next line: "\r\n" is one Character). Each key and value
    /// is checked as UTF-8 where it is made: split at ASCII bytes, the pieces of valid text
    /// are valid, and a text that is not has a piece that is not. One pass, no copy of the
    /// whole: localauthd and the library parse a frame for every preflight.
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> KeyValues {
        guard !bytes.contains(0) else { throw .notText }
        var kv = KeyValues()
        if bytes.isEmpty { return kv }
        var start = bytes.startIndex
        var number = 1
        while true {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            let line = bytes[start..<end]
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")) else { throw .lineWithoutEquals(number) }
            guard eq != line.startIndex else { throw .emptyKey(number) }
            guard let key = String(validating: line[..<eq], as: UTF8.self),
                  let value = String(validating: line[(eq + 1)...], as: UTF8.self) else { throw .notText }
            kv.pairs.append((key, value))
            if end == bytes.endIndex { return kv }
            start = end + 1
            number += 1
        }
    }
}
