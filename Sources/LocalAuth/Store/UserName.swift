/// A user name that is safe to use as a file name inside the state directory.
/// Names come from PAM (anyone can type one at a login prompt), so nothing is assumed.
public struct UserName: Equatable, Hashable, CustomStringConvertible, Sendable {
    public let value: String

    /// The longest accepted name, in bytes (Linux tools accept at most 32; directory
    /// services go longer).
    public static let maxLength = 128

    public enum Invalid: Error, Equatable, CustomStringConvertible, Sendable {
        case empty
        case tooLong(Int)
        case slash
        case dotDot
        case leadingDot
        case controlCharacter
        case notUTF8

        public var description: String {
            switch self {
            case .empty: return "the user name is empty"
            case .tooLong(let n): return "the user name is \(n) bytes long (at most \(UserName.maxLength))"
            case .slash: return "the user name contains `/`"
            case .dotDot: return "the user name contains `..`"
            case .leadingDot: return "the user name starts with `.`"
            case .controlCharacter: return "the user name contains a control character"
            case .notUTF8: return "the user name is not valid UTF-8"
            }
        }
    }

    public init(_ raw: String) throws(Invalid) {
        let bytes = Array(raw.utf8)
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.count <= Self.maxLength else { throw .tooLong(bytes.count) }
        guard !bytes.contains(UInt8(ascii: "/")) else { throw .slash }
        guard !raw.includes("..") else { throw .dotDot }
        guard bytes.first != UInt8(ascii: ".") else { throw .leadingDot }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7f }) else { throw .controlCharacter }
        guard String(validating: bytes, as: UTF8.self) != nil else { throw .notUTF8 }
        value = raw
    }

    public var description: String { value }
}
