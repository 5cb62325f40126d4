// libFuzzer harness for the request frame as localauthd peeks at it (RequestPeek) and as the
// helper takes it (HelperRequest.parse, Sources/localauth-helper/Request.swift). scripts/fuzz
// compiles it with those two files, against LocalAuthProtocol and LocalAuth. A broken
// property traps (`fatalError`), which libFuzzer reports as a crash and keeps the input.
#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    // The buffer and count exactly as RequestPeek.of has them after its recv(MSG_PEEK).
    var buffer = [UInt8](repeating: 0, count: 4 + Frame.maxLength)
    let n = min(bytes.count, buffer.count)
    buffer.replaceSubrange(0..<n, with: bytes[0..<n])
    let peek = RequestPeek.parse(buffer, count: n)
    if let peek { checkPeek(peek, buffer: buffer, count: n) }

    // The helper reads the same bytes as frames; its first frame is the request.
    var decoder = FrameDecoder()
    decoder.append(bytes)
    let first = try? decoder.next()
    if let peek {
        require(first?.kind == .request && first.map { 5 + $0.payload.count } == peek.bytes,
                "localauthd peeked a request the helper does not read as its first frame")
    }
    guard let first, let request = try? HelperRequest.parse(first) else { return 0 }
    checkRequest(request, first)
    // What the helper takes, localauthd holds as a request too (and hands on, or answers).
    require(peek != nil, "a request the helper takes but localauthd does not see")
    require(peek?.request == request.wire, "localauthd and the helper read different requests")
    return 0
}

func require(_ condition: Bool, _ what: @autoclosure () -> String) {
    if !condition { fatalError("request_fuzz: \(what())") }
}

/// A peeked request is one whole frame of type `Q` within the bytes that were read and within
/// the frame limit, that decodes as a request (version 1, one known `mode`); none is seen
/// before its last byte has arrived.
func checkPeek(_ peek: RequestPeek, buffer: [UInt8], count n: Int) {
    require(peek.bytes >= 5 && peek.bytes <= n, "a request longer than what was read")
    require(peek.bytes - 4 <= Frame.maxLength, "a request longer than \(Frame.maxLength)")
    let length = buffer[0..<4].reduce(0) { $0 << 8 | Int($1) }
    require(peek.bytes == 4 + length && buffer[4] == Frame.Kind.request.rawValue, "not the frame's own length and type")
    let kv = try? KeyValues.parse(Array(buffer[5..<peek.bytes]))
    require(kv.map { try? Request.decode($0).get() } == peek.request, "a request that is not the payload's")
    require(kv?.value("version") == "1", "a request of another version")
    require(kv?.count("mode") == 1, "a request without exactly one mode")
    require(RequestPeek.parse(buffer, count: peek.bytes - 1) == nil, "a request seen before its last byte")
    require(RequestPeek.parse(buffer, count: peek.bytes)?.request == peek.request, "the peek depends on the bytes after it")
    // What is decoded encodes again as a request that decodes the same.
    require((try? Request.decode(peek.request.encode()).get()) == peek.request, "a request that does not round-trip")
}

/// Keys whose value the helper takes as one field: each at most once, so no second `mode`,
/// `user` or `proof` can hide behind the first (docs/PROTOCOL.md: every key is sent once).
let singleKeys = ["version", "mode", "user", "service", "tty", "rhost", "ruser", "silent", "stdin_tty", "display",
                  "locale", "language", "pid", "caller_uid", "first_line", "proof", "reader", "op", "policy", "keep"]

/// A request the helper takes is the frame's keys, each field exactly what its one key says.
func checkRequest(_ request: HelperRequest, _ frame: Frame) {
    let kv: KeyValues
    do { kv = try KeyValues.parse(frame.payload) } catch { return require(false, "a request from a payload that does not parse") }
    require(frame.kind == .request, "a request from a frame of type \(frame.kind)")
    require(request.keys == kv && kv.encoded() == frame.payload, "the request's keys are not the frame's")
    for key in singleKeys { require(kv.count(key) <= 1, "a request with two `\(key)`") }
    require(kv.value("version") == "1", "a request of another version")
    require(kv.value("mode") == request.mode.rawValue, "a mode that is not the frame's")
    require(kv.value("user") == request.user.value, "a user that is not the frame's")
    checkUserName(request.user.value)
    let fields: [(String, String)] = [("service", request.service), ("tty", request.tty), ("rhost", request.rhost),
                                      ("ruser", request.ruser), ("locale", request.locale),
                                      ("language", request.languageList)]
    for (key, value) in fields { require((kv.value(key) ?? "") == value, "`\(key)` is not the frame's") }
    let flags: [(String, Bool)] = [("silent", request.silent), ("stdin_tty", request.stdinTTY),
                                   ("display", request.display)]
    for (key, value) in flags { require((kv.value(key) == "1") == value, "`\(key)` is not the frame's") }
    // authsucc's own keys count in that mode only (nothing else reads them).
    let authsucc = request.mode == .authsucc
    require(request.firstLine == (authsucc && kv.value("first_line") == "1"), "`first_line` is not the frame's")
    require(request.readerUnreachable == (authsucc && kv.value("reader") == "unreachable"), "`reader` is not the frame's")
    require(!authsucc ? request.proof == nil : request.proof?.rawValue == kv.value("proof")
            || (request.proof == nil && kv.value("proof") != "authtok" && kv.value("proof") != "account"),
            "a proof that is not the frame's")
    require(request.callerPID == kv.value("pid").flatMap { Int32($0) }, "a pid that is not the frame's")
    require(request.callerUID == kv.value("caller_uid").flatMap { uid_t($0) }, "a caller uid that is not the frame's")
    require(request.terminalOwner == nil, "a terminal owner taken from the frame")
    require(request.arguments == kv.values("arg"), "arguments that are not the frame's, in order")
}

/// A user name the helper takes names no path and carries nothing a log line or a
/// terminal would act on (UserName's rules).
func checkUserName(_ name: String) {
    let bytes = Array(name.utf8)
    require(!bytes.isEmpty && bytes.count <= UserName.maxLength, "a user name of \(bytes.count) bytes")
    require(!bytes.contains(0x2F) && bytes.first != 0x2E
            && !zip(bytes, bytes.dropFirst()).contains { $0 == 0x2E && $1 == 0x2E }, "a user name that is a path")
    require(!bytes.contains { $0 < 0x20 || $0 == 0x7F }, "a user name with a control character")
}
