/// The frames on the pipe between pam_localauth.so and localauth-helper (docs/PROTOCOL.md):
/// a big-endian u32 length covering the type byte and the payload, at most `maxLength`,
/// then the type byte, then the payload.
public struct Frame: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        // Module → helper
        case request = 0x51   // Q
        case answer = 0x41    // A
        case noAnswer = 0x4E  // N
        case cancel = 0x43    // C
        case typed = 0x54     // T: a password was typed at a scan prompt (it stays in PAM)
        // Helper → module
        case started = 0x53       // S: the helper runs and has the request (sent first)
        case info = 0x49          // I
        case error = 0x45         // E
        case promptEchoOff = 0x50 // P
        case promptEchoOn = 0x70  // p
        case scanPrompt = 0x57    // W: password or finger, while the reader waits
        case skipPrompt = 0x4B    // K: Enter to skip to the password, while the reader waits
        case result = 0x52        // R
    }

    public static let maxLength = 4096

    public var kind: Kind
    public var payload: [UInt8]

    public init(_ kind: Kind, _ payload: [UInt8] = []) {
        self.kind = kind
        self.payload = payload
    }

    public init(_ kind: Kind, text: String) {
        self.init(kind, Array(text.utf8))
    }

    /// The payload as text; nil when it is not UTF-8 or contains NUL.
    public var text: String? {
        guard !payload.contains(0) else { return nil }
        return String(validating: payload, as: UTF8.self)
    }

    /// The bytes on the wire. A payload too long for one frame is cut at a UTF-8 boundary
    /// (only messages are ever that long; the module shows what fits).
    public func encoded() -> [UInt8] {
        var body = payload
        if body.count > Frame.maxLength - 1 {
            body = Array(body.prefix(Frame.maxLength - 1))
            while let last = body.last, last & 0xC0 == 0x80 { body.removeLast() }
            if let last = body.last, last >= 0xC0 { body.removeLast() }
        }
        let length = UInt32(body.count + 1)
        return [UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff),
                UInt8(length & 0xff), kind.rawValue] + body
    }
}

/// What is wrong with bytes that were supposed to be a frame.
public enum FrameError: Error, Equatable, CustomStringConvertible, Sendable {
    case badLength(UInt32)
    case unknownType(UInt8)
    case truncated
    case endOfStream
    case io(Int32)

    public var description: String {
        switch self {
        case .badLength(let n): return "frame length \(n) outside 1…\(Frame.maxLength)"
        case .unknownType(let t): return "unknown frame type 0x\(String(t, radix: 16))"
        case .truncated: return "truncated frame"
        case .endOfStream: return "end of stream"
        case .io(let e): return "read error \(e)"
        }
    }
}

/// Decodes frames from a byte buffer as they arrive. Pure: no I/O, so it can be fuzzed.
public struct FrameDecoder {
    private var buffer: [UInt8] = []

    public init() {}

    public mutating func append(_ bytes: [UInt8]) { buffer += bytes }

    /// Bytes received but not yet decoded.
    public var pending: Int { buffer.count }

    /// The next complete frame, nil when more bytes are needed, or an error that ends the
    /// stream (the length is checked before any payload is awaited).
    public mutating func next() throws(FrameError) -> Frame? {
        guard buffer.count >= 4 else { return nil }
        let length = buffer[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard length >= 1 && length <= UInt32(Frame.maxLength) else { throw .badLength(length) }
        guard buffer.count >= 5 else { return nil }
        guard let kind = Frame.Kind(rawValue: buffer[4]) else { throw .unknownType(buffer[4]) }
        let total = 4 + Int(length)
        guard buffer.count >= total else { return nil }
        let frame = Frame(kind, Array(buffer[5..<total]))
        buffer.removeFirst(total)
        return frame
    }
}
