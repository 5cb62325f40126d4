/// A message on the agent socket: uint32 length, then that many bytes of body.
public enum AgentFrame {
    /// The largest body accepted (OpenSSH's agent takes 256 KiB too).
    public static let maxLength = 256 * 1024

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// Not all of the frame has arrived: read more, or, at the end of the stream, log it.
        case incomplete(have: Int, need: Int)
        /// A length over `maxLength`: the connection is to be closed.
        case oversized(length: UInt32)
        /// A length of zero (no message number).
        case empty

        public var description: String {
            switch self {
            case .incomplete(let have, let need): return "an incomplete frame (\(have) of \(need) bytes)"
            case .oversized(let length): return "a frame of \(length) bytes (at most \(AgentFrame.maxLength))"
            case .empty: return "an empty frame"
            }
        }
    }

    /// The first frame of `buffer`: its body and how many bytes of `buffer` it took.
    public static func split(_ buffer: [UInt8]) throws(Failure) -> (body: [UInt8], consumed: Int) {
        guard buffer.count >= 4 else { throw .incomplete(have: buffer.count, need: 4) }
        let length = buffer[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard length <= UInt32(maxLength) else { throw .oversized(length: length) }
        guard length > 0 else { throw .empty }
        let total = 4 + Int(length)
        guard buffer.count >= total else { throw .incomplete(have: buffer.count, need: total) }
        return (Array(buffer[4..<total]), total)
    }

    /// `body` with its length before it.
    public static func frame(_ body: [UInt8]) -> [UInt8] {
        var w = SSHWriter()
        w.string(body)
        return w.bytes
    }
}
