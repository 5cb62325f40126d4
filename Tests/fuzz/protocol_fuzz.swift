// libFuzzer harness for the frames and key/value payloads both Swift sides read
// (Sources/LocalAuthProtocol: Frame, FrameDecoder, FrameChannel, KeyValues, Request, Answer). scripts/fuzz
// compiles it with those sources (`swiftc -sanitize=fuzzer,address`). A broken property
// traps (`fatalError`), which libFuzzer reports as a crash and keeps the input.
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProtocol(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let whole = Decoded(bytes, chunk: max(bytes.count, 1))
    whole.check(against: bytes)
    // The same stream in small pieces (the first byte picks their size) decodes the same:
    // the decoder must not depend on how reads cut the stream.
    let chunk = Int(bytes.first ?? 0) % 7 + 1
    let pieces = Decoded(bytes, chunk: chunk)
    require(pieces.frames == whole.frames && pieces.error == whole.error
            && (whole.error != nil || pieces.pending == whole.pending), "chunked decoding differs")
    checkChannel(bytes, expected: whole)
    checkKeyValues(bytes)
    for frame in whole.frames { checkKeyValues(frame.payload) }
    checkTyped(bytes)
    for frame in whole.frames { checkTyped(frame.payload) }
    checkEncoder(bytes)
    return 0
}

func require(_ condition: Bool, _ what: @autoclosure () -> String) {
    if !condition { fatalError("protocol_fuzz: \(what())") }
}

/// What a FrameDecoder made of a stream: the frames, the error that ended it (if any), and
/// the bytes it still holds.
struct Decoded {
    var frames: [Frame] = []
    var error: FrameError?
    var pending = 0

    init(_ bytes: [UInt8], chunk: Int) {
        var decoder = FrameDecoder()
        var offset = 0
        repeat {
            let end = min(offset + chunk, bytes.count)
            decoder.append(Array(bytes[offset..<end]))
            offset = end
            do {
                while let frame = try decoder.next() { frames.append(frame) }
            } catch {
                self.error = error
                break
            }
        } while offset < bytes.count
        pending = decoder.pending
    }

    /// Every frame is exactly the bytes it came from, within the limits; what ends the
    /// stream is what the bytes after the last frame say.
    func check(against bytes: [UInt8]) {
        var offset = 0
        for frame in frames {
            require(frame.payload.count + 1 <= Frame.maxLength, "a frame longer than \(Frame.maxLength)")
            let wire = frame.encoded()
            require(offset + wire.count <= bytes.count && Array(bytes[offset..<(offset + wire.count)]) == wire,
                    "a frame that is not the bytes it came from")
            offset += wire.count
        }
        let rest = Array(bytes[offset...])
        require(pending == rest.count, "the decoder lost or invented bytes")
        let length = rest.count >= 4 ? rest[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : nil
        switch error {
        case .badLength(let n)?:
            require(n == length && (n == 0 || n > UInt32(Frame.maxLength)), "badLength(\(n)) for a valid length")
        case .unknownType(let t)?:
            require(rest.count >= 5 && rest[4] == t && Frame.Kind(rawValue: t) == nil, "unknownType for a known type")
        case nil:
            // No complete frame is left behind: a valid length whose frame has not all arrived.
            if let length {
                require(length >= 1 && length <= UInt32(Frame.maxLength), "an invalid length not refused")
                require(rest.count < 4 + Int(length), "a whole frame left undecoded")
                if rest.count >= 5 { require(Frame.Kind(rawValue: rest[4]) != nil, "an unknown type not refused") }
            }
        default:
            require(false, "decoder error \(String(describing: error)) from bytes alone")
        }
    }
}

/// FrameChannel over a pipe holding the bytes and then closed: the same frames, then the
/// decoder's error, or `truncated` for a part frame, or `endOfStream`. Each frame sent back
/// through a channel arrives unchanged.
func checkChannel(_ bytes: [UInt8], expected: Decoded) {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return }
    defer { close(fds[0]) }
    let written = bytes.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
    close(fds[1])
    guard written == bytes.count else { return }   // more than a pipe holds: not this check's
    let channel = FrameChannel(input: fds[0], output: -1)
    var frames: [Frame] = []
    var end: FrameError?
    while end == nil {
        do { frames.append(try channel.receive()) } catch { end = error }
    }
    require(frames == expected.frames, "FrameChannel and FrameDecoder disagree on the frames")
    let want = expected.error ?? (expected.pending > 0 ? .truncated : .endOfStream)
    require(end == want, "FrameChannel ended with \(String(describing: end)), not \(want)")
    require(!channel.hasBufferedFrame, "a frame still buffered after the stream ended")

    var back: [Int32] = [-1, -1]
    guard pipe(&back) == 0 else { return }
    defer { close(back[0]) }
    let sender = FrameChannel(input: -1, output: back[1])
    for frame in frames { require(sender.send(frame), "send failed") }
    close(back[1])
    let receiver = FrameChannel(input: back[0], output: -1)
    for frame in frames { require((try? receiver.receive()) == frame, "a frame changed on the way back") }
}

/// KeyValues: a parse is exact (it encodes back to the very bytes), every pair keeps the
/// protocol's rules, and a refusal names a line that breaks them.
func checkKeyValues(_ bytes: [UInt8]) {
    let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    do throws(KeyValues.ParseError) {
        let kv = try KeyValues.parse(bytes)
        require(kv.encoded() == bytes, "parse then encode is not the identity")
        for (key, value) in kv.pairs {
            require(!key.isEmpty, "an empty key")
            require(!key.utf8.contains { $0 == 0x3D || $0 == 0x0A || $0 == 0 }, "a key with `=`, a newline or NUL")
            require(!value.utf8.contains { $0 == 0x0A || $0 == 0 }, "a value with a newline or NUL")
        }
        require(kv.pairs.count == (bytes.isEmpty ? 0 : lines.count), "pairs are not the lines")
        require((try? KeyValues.parse(kv.encoded())) == kv, "encode then parse changes the pairs")
    } catch {
        switch error {
        case .notText:
            require(bytes.contains(0) || String(validating: bytes, as: UTF8.self) == nil, "notText for text")
        case .lineWithoutEquals(let n):
            require(n >= 1 && n <= lines.count && !lines[n - 1].contains(0x3D), "lineWithoutEquals(\(n)) for a line with `=`")
        case .emptyKey(let n):
            require(n >= 1 && n <= lines.count && lines[n - 1].first == 0x3D, "emptyKey(\(n)) for a line with a key")
        }
    }
}

/// The encoders: pairs made from the input (NUL-separated key, value, key, value ...) parse
/// back as the same keys, with every newline and NUL gone from the values, so no value adds
/// a line; a payload longer than a frame is cut to fit, at a UTF-8 boundary.
func checkEncoder(_ bytes: [UInt8]) {
    let parts = bytes.split(separator: 0xFF, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    var kv = KeyValues()
    var i = 0
    while i + 1 < parts.count {
        let key = parts[i]
        if !key.isEmpty && !key.utf8.contains(where: { $0 == 0x3D || $0 == 0x0A || $0 == 0 }) { kv.add(key, parts[i + 1]) }
        i += 2
    }
    if !kv.pairs.isEmpty {
        let back = try? KeyValues.parse(kv.encoded())
        require(back != nil, "an encoded payload that does not parse")
        let cleaned = kv.pairs.map { ($0.0, String(decoding: $0.1.utf8.filter { $0 != 0x0A && $0 != 0 }, as: UTF8.self)) }
        require(back == KeyValues(cleaned), "a value changed the lines of its payload")
    }
    // Over 4 KB each time: for one input in sixteen (by its last byte), or the rest starves.
    guard let last = bytes.last, last & 0x0F == 0x0F else { return }
    var long = bytes
    while long.count < Frame.maxLength + 8 { long += bytes }
    let text = String(decoding: long, as: UTF8.self)   // valid UTF-8, whatever the input
    let wire = Frame(.info, text: text).encoded()
    var decoder = FrameDecoder()
    decoder.append(wire)
    let frame = try? decoder.next()
    require(frame?.kind == .info && decoder.pending == 0, "an encoded frame that does not decode")
    let payload = frame?.payload ?? []
    let utf8 = Array(text.utf8)
    require(payload.count <= utf8.count && memcmp(payload, utf8, payload.count) == 0,
            "the cut payload is not a prefix")
    require(String(validating: payload, as: UTF8.self) != nil, "the cut payload is not UTF-8")
}

/// A payload that decodes as a Request or an Answer encodes to one that decodes the same
/// (an Answer's cause cut at its limit first): nothing a decoder took is lost or changed on
/// the way back, and the encoder writes nothing its own decoder refuses.
func checkTyped(_ payload: [UInt8]) {
    if case .success(let request) = Request.decode(payload) {
        require(Request.decode(request.encode()) == .success(request), "a request that does not round-trip")
        require(request.keyValues.count("mode") == 1 && request.keyValues.value("version") == "1",
                "an encoded request without its version and one mode")
    }
    if case .success(var answer) = Answer.decode(payload) {
        answer.cause = answer.cause.map { String($0.prefix(Answer.causeLimit)) }
        require(Answer.decode(answer.encode()) == .success(answer), "an answer that does not round-trip")
    }
}
