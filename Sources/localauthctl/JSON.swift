/// A JSON value and its encoding (RFC 8259), written by hand: no Foundation in the tool.
indirect enum JSON: Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([JSON])
    /// Keys in the order given.
    case object([(String, JSON)])

    static func == (a: JSON, b: JSON) -> Bool { a.encoded() == b.encoded() }

    static func string(_ s: String?) -> JSON { s.map { .string($0) } ?? .null }
    static func int(_ n: Int64?) -> JSON { n.map { .int($0) } ?? .null }
    static func bool(_ b: Bool?) -> JSON { b.map { .bool($0) } ?? .null }

    func encoded() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let n): out += String(n)
        case .string(let s): JSON.quote(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                JSON.quote(key, into: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    /// A string literal: `"` and `\` escaped, control characters as `\n`, `\t`, … or
    /// `\u00XX`; everything else as UTF-8 (a Swift String is always valid Unicode).
    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7f || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
