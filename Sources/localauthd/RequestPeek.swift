#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// The request frame of a held connection, read without taking it off the socket: the
/// service answers a few requests itself (ServicePreflight, RemoteHostAnswer, ReaderAbsent) and hands every
/// other one, unread, to a helper.
struct RequestPeek {
    let keys: KeyValues
    /// The frame's length on the wire, to take it off once the service answers.
    let bytes: Int

    /// nil until a whole request frame of version 1 with one `mode` has arrived.
    static func of(_ fd: Int32) -> RequestPeek? {
        var buffer = [UInt8](repeating: 0, count: 4 + Frame.maxLength)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        return parse(buffer, count: n)
    }

    /// The decision of `of` on the first `n` bytes of `buffer` (what the peek returned; -1 on
    /// an error). Apart from the socket so that scripts/fuzz can feed it any bytes.
    static func parse(_ buffer: [UInt8], count n: Int) -> RequestPeek? {
        guard n >= 5, n <= buffer.count else { return nil }
        let length = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard (1...Frame.maxLength).contains(length), n >= 4 + length,
              buffer[4] == Frame.Kind.request.rawValue,
              let kv = try? KeyValues.parse(Array(buffer[5..<(4 + length)])),
              kv.value("version") == "1", kv.values("mode").count == 1 else { return nil }
        return RequestPeek(keys: kv, bytes: 4 + length)
    }

    /// Takes the frame off the socket (one closed with unread bytes resets the peer's
    /// connection, and the peer would read that instead of the answer), then sends `S` and
    /// the result, as a helper does. The few bytes fit the socket's buffer at once; a peer
    /// that cannot take them sees the connection close.
    func answer(_ fd: Int32, result: KeyValues) {
        var taken = [UInt8](repeating: 0, count: bytes)
        _ = taken.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        let out = Frame(.started).encoded() + Frame(.result, result.encoded()).encoded()
        _ = out.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }

    /// Answers with a refusal the service is sure a helper would give too: the result's
    /// code, name, reason and cause, as the helper writes them.
    func refuse(_ fd: Int32, _ code: EvaluationError.Code, reason: EvaluationError.Reason, cause: String) {
        var kv = KeyValues()
        kv.add("code", String(code.rawValue))
        kv.add("name", code.name)
        kv.add("reason", reason.key)
        kv.add("cause", cause)
        answer(fd, result: kv)
    }
}
