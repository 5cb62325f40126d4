#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// The request frame of a held connection, read without taking it off the socket: the
/// service answers a few requests itself (ServicePreflight, RemoteHostAnswer, ReaderAbsent) and hands every
/// other one, unread, to a helper.
struct RequestPeek {
    /// The request (LocalAuthProtocol's), decoded as the helper decodes it.
    let request: Request
    /// The frame's length on the wire, to take it off once the service answers.
    let bytes: Int

    /// What a held connection holds now.
    enum Input {
        /// A whole request frame that decodes as a request (`Request.decode`).
        case request(RequestPeek)
        /// Nothing yet, or the start of a frame that may still come whole.
        case notYet
        /// The peer closed (or the connection failed) before a whole frame.
        case empty
        /// Something that is not, and cannot become, a request frame (a request a helper
        /// would only answer "bad request" included).
        case malformed(String)
    }

    /// nil until a whole request frame has arrived.
    static func of(_ fd: Int32) -> RequestPeek? {
        if case .request(let request) = inspect(fd) { return request }
        return nil
    }

    static func inspect(_ fd: Int32) -> Input {
        var buffer = [UInt8](repeating: 0, count: 4 + Frame.maxLength)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        if n < 0 { return errno == EAGAIN || errno == EINTR ? .notYet : .empty }
        if n == 0 { return .empty }
        return classify(buffer, count: n)
    }

    /// The request of the first `n` bytes of `buffer`, nil when they hold none (yet).
    static func parse(_ buffer: [UInt8], count n: Int) -> RequestPeek? {
        if case .request(let request) = classify(buffer, count: n) { return request }
        return nil
    }

    /// The decision on the first `n` bytes of `buffer` (what the peek returned), apart from
    /// the socket so that scripts/fuzz can feed it any bytes.
    static func classify(_ buffer: [UInt8], count n: Int) -> Input {
        guard n >= 4, n <= buffer.count else { return .notYet }
        let length = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard (1...Frame.maxLength).contains(length) else { return .malformed("frame length \(length)") }
        guard n >= 5 else { return .notYet }
        guard buffer[4] == Frame.Kind.request.rawValue else { return .malformed("a frame other than a request first") }
        guard n >= 4 + length else { return .notYet }
        guard let kv = try? KeyValues.parse(Array(buffer[5..<(4 + length)])) else { return .malformed("unreadable keys") }
        switch Request.decode(kv) {
        case .success(let request): return .request(RequestPeek(request: request, bytes: 4 + length))
        case .failure(let problem): return .malformed(problem.description)
        }
    }

    /// Takes the frame off the socket (one closed with unread bytes resets the peer's
    /// connection, and the peer would read that instead of the answer), then sends `S` and
    /// the result, as a helper does. The few bytes fit the socket's buffer at once; a peer
    /// that cannot take them sees the connection close.
    func answer(_ fd: Int32, result: KeyValues) {
        answer(fd, payload: result.encoded())
    }

    func answer(_ fd: Int32, _ result: Answer) {
        answer(fd, payload: result.encode())
    }

    private func answer(_ fd: Int32, payload: [UInt8]) {
        var taken = [UInt8](repeating: 0, count: bytes)
        _ = taken.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        let out = Frame(.started).encoded() + Frame(.result, payload).encoded()
        _ = out.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }

    /// Answers with a refusal the service is sure a helper would give too: the result's
    /// code, name, reason and cause, as the helper writes them.
    func refuse(_ fd: Int32, _ code: EvaluationError.Code, reason: EvaluationError.Reason, cause: String) {
        answer(fd, Answer(code: code.rawValue, name: code.name, reason: reason.key, cause: cause))
    }
}
