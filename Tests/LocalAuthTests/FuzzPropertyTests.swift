import Testing
@testable import LocalAuth
import LocalAuthProtocol

/// Property tests with random and mutated inputs for what the helper parses: frames from
/// the module, key/value payloads, the config file and module arguments. The generator is
/// seeded, so a failure names the seed and case that reproduce it; nothing may trap, and
/// each parser keeps its invariants (round trips, the frame size limit, option bounds).
@Suite struct FuzzPropertyTests {
    static let seeds: [UInt64] = [1, 0x5EED, 0xF00D_CAFE, 20_261_130]

    // MARK: - Frames

    @Test(arguments: seeds) func framesRoundTripThroughTheDecoderInAnyChunks(seed: UInt64) throws {
        var rng = SplitMix64(seed)
        for _ in 0..<200 {
            let frames = (0..<Int.random(in: 1...4, using: &rng)).map { _ in
                Frame(Self.kinds.randomElement(using: &rng)!, rng.bytes(Int.random(in: 0...600, using: &rng)))
            }
            let wire = frames.flatMap { $0.encoded() }
            var decoder = FrameDecoder()
            var got: [Frame] = []
            var offset = 0
            while offset < wire.count {
                let n = min(wire.count - offset, Int.random(in: 1...700, using: &rng))
                decoder.append(Array(wire[offset..<(offset + n)]))
                offset += n
                while let f = try decoder.next() { got.append(f) }
            }
            #expect(got == frames, "seed \(seed)")
            #expect(decoder.pending == 0)
        }
    }

    @Test(arguments: seeds) func anOverlongPayloadIsCutToAValidPrefix(seed: UInt64) throws {
        var rng = SplitMix64(seed)
        for _ in 0..<50 {
            let text = rng.text(Int.random(in: 4000...6000, using: &rng))
            var decoder = FrameDecoder()
            decoder.append(Frame(.info, text: text).encoded())
            let f = try #require(try decoder.next())
            #expect(f.payload.count <= Frame.maxLength - 1)
            let cut = try #require(f.text, "cut inside a character, seed \(seed)")
            #expect(text.utf8.starts(with: cut.utf8))
        }
    }

    @Test(arguments: seeds) func theDecoderNeverAcceptsALengthOutsideTheLimit(seed: UInt64) {
        var rng = SplitMix64(seed)
        for _ in 0..<2000 {
            let length = Bool.random(using: &rng)
                ? UInt32.random(in: UInt32(Frame.maxLength + 1)...UInt32.max, using: &rng) : 0
            var decoder = FrameDecoder()
            decoder.append(Self.header(length) + [Frame.Kind.info.rawValue]
                           + rng.bytes(Int.random(in: 0...64, using: &rng)))
            #expect(throws: FrameError.badLength(length)) { try decoder.next() }
        }
    }

    @Test(arguments: seeds) func randomAndMutatedStreamsNeverTrap(seed: UInt64) {
        var rng = SplitMix64(seed)
        for _ in 0..<600 {
            var bytes = Bool.random(using: &rng)
                ? rng.bytes(Int.random(in: 0...300, using: &rng))
                : Frame(Self.kinds.randomElement(using: &rng)!, rng.bytes(Int.random(in: 0...200, using: &rng))).encoded()
            rng.mutate(&bytes)
            var decoder = FrameDecoder()
            decoder.append(bytes)
            var consumed = 0
            do {
                while let f = try decoder.next() {
                    #expect(f.payload.count + 1 <= Frame.maxLength)
                    consumed += 5 + f.payload.count
                }
                #expect(consumed + decoder.pending == bytes.count)
            } catch {
                // A protocol error ends the stream; that is the required outcome.
            }
        }
    }

    // MARK: - Key/value payloads

    @Test(arguments: seeds) func keyValuesRoundTrip(seed: UInt64) throws {
        var rng = SplitMix64(seed)
        for _ in 0..<500 {
            var kv = KeyValues()
            for _ in 0..<Int.random(in: 0...8, using: &rng) {
                kv.add("k" + rng.token(Int.random(in: 0...12, using: &rng), excluding: "=\n\0"),
                       rng.token(Int.random(in: 0...40, using: &rng), excluding: "\n\0"))
            }
            let parsed = try KeyValues.parse(kv.encoded())
            #expect(parsed == kv, "seed \(seed): \(kv.pairs)")
        }
    }

    @Test(arguments: seeds) func keyValueLinesAreSplitAtEveryNewlineByte(seed: UInt64) throws {
        // "\r\n" is one Character in Swift; the protocol's lines end at the byte 0x0A.
        var rng = SplitMix64(seed)
        for _ in 0..<300 {
            let pairs = (0..<Int.random(in: 1...5, using: &rng)).map { i in
                ("k\(i)", rng.token(Int.random(in: 0...10, using: &rng), excluding: "\n\0") + "\r")
            }
            let parsed = try KeyValues.parse(KeyValues(pairs).encoded())
            #expect(parsed.pairs.count == pairs.count, "seed \(seed): \(pairs)")
        }
    }

    @Test func aValueWithCarriageReturnNewlineStaysOneLine() throws {
        // "\r\n" is one Character: a filter of Characters kept its 0x0A, and the rest of
        // the value became a key of its own.
        let kv = KeyValues([("cause", "no reader\r\ncode=0"), ("name", "x")])
        let parsed = try KeyValues.parse(kv.encoded())
        #expect(parsed.pairs.count == 2)
        #expect(parsed.value("code") == nil)
        #expect(parsed.value("cause") == "no reader\rcode=0")
    }

    @Test(arguments: seeds) func parsedKeyValuesKeepTheProtocolsRules(seed: UInt64) {
        var rng = SplitMix64(seed)
        for _ in 0..<600 {
            var bytes = Array(rng.text(Int.random(in: 0...80, using: &rng), alphabet: "ab=\n\r\0é").utf8)
            rng.mutate(&bytes)
            guard let kv = try? KeyValues.parse(bytes) else { continue }
            for (key, value) in kv.pairs {
                #expect(!key.isEmpty, "an empty key was accepted: \(bytes)")
                #expect(!key.utf8.contains(UInt8(ascii: "=")) && !key.utf8.contains(10))
                #expect(!value.utf8.contains(10) && !value.utf8.contains(0))
            }
        }
    }

    @Test(arguments: seeds) func parseAcceptsExactlyWhatTheRulesAllow(seed: UInt64) {
        // The rules read plainly: no 0x00, the whole valid UTF-8, every line with a key
        // before its first `=`. parse (one pass, each piece checked where it is made) must
        // accept the same texts and give the same pairs.
        var rng = SplitMix64(seed)
        for _ in 0..<600 {
            var bytes = Array(rng.text(Int.random(in: 0...80, using: &rng), alphabet: "ab=\n\ré").utf8)
            rng.mutate(&bytes)
            #expect((try? KeyValues.parse(bytes))?.pairs.map { [$0.0, $0.1] } == Self.plainReading(bytes), "\(bytes)")
        }
    }

    private static func plainReading(_ bytes: [UInt8]) -> [[String]]? {
        guard !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else { return nil }
        if bytes.isEmpty { return [] }
        var pairs: [[String]] = []
        for line in text.utf8.split(separator: 10, omittingEmptySubsequences: false) {
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")), eq != line.startIndex else { return nil }
            pairs.append([String(Substring(line[..<eq])), String(Substring(line[line.index(after: eq)...]))])
        }
        return pairs
    }

    // MARK: - State files

    @Test(arguments: seeds) func stateFilesRoundTripWhateverTheTerminalIsCalled(seed: UInt64) {
        // The terminal comes from PAM_TTY: one line, but "\r" and anything else may be in it.
        var rng = SplitMix64(seed)
        for _ in 0..<300 {
            var s = UserState()
            s.consecutiveFailures = Int.random(in: 0...1000, using: &rng)
            s.lastFingerprintAt = Bool.random(using: &rng) ? Int64.random(in: 0...4_000_000_000, using: &rng) : nil
            s.lastFingerprintTerminal = rng.token(Int.random(in: 0...20, using: &rng), excluding: "\n") + "\r"
            s.bootID = Bool.random(using: &rng) ? rng.token(8, excluding: "\n") : nil
            s.optedIn = Bool.random(using: &rng)
            s.lastRemoteLoginAt = Bool.random(using: &rng) ? Int64.random(in: 0...4_000_000_000, using: &rng) : nil
            s.lastRemoteLoginFrom = Bool.random(using: &rng) ? rng.token(Int.random(in: 1...20, using: &rng), excluding: "\n") : nil
            s.lastLocalUnlockAt = Bool.random(using: &rng) ? Int64.random(in: 0...4_000_000_000, using: &rng) : nil
            s.lastRemoteLoginBoot = Bool.random(using: &rng)
                ? BootStamp(bootID: "b" + rng.token(8, excluding: "\n "), millis: Int64.random(in: 0...Int64.max, using: &rng)) : nil
            s.lastLocalUnlockBoot = Bool.random(using: &rng)
                ? BootStamp(bootID: "b" + rng.token(8, excluding: "\n "), millis: Int64.random(in: 0...Int64.max, using: &rng)) : nil
            let decoded = StateFileFormat.decode(StateFileFormat.encode(s))
            #expect(decoded == .success(s), "seed \(seed): \(s)")
        }
    }

    @Test(arguments: seeds) func aMutatedStateFileIsDamagedOrValidNeverATrap(seed: UInt64) {
        var rng = SplitMix64(seed)
        var s = UserState()
        s.consecutiveFailures = 4
        let good = StateFileFormat.encode(s)
        for _ in 0..<1000 {
            var bytes = good
            rng.mutate(&bytes)
            if case .success(let t) = StateFileFormat.decode(bytes), bytes != good {
                // Only a change the checksum cannot see may pass: none that lowers the count.
                #expect(t.consecutiveFailures >= 4, "seed \(seed): \(bytes)")
            }
        }
    }

    // MARK: - Configuration

    @Test(arguments: seeds) func noConfigTextSetsAnOptionOutOfBounds(seed: UInt64) {
        var rng = SplitMix64(seed)
        for _ in 0..<600 {
            let text = (0..<Int.random(in: 0...12, using: &rng)).map { _ in rng.configLine() }
                .joined(separator: Bool.random(using: &rng) ? "\n" : "\r\n")
            var options = Options()
            let issues = ConfigParser.apply(fileText: text, source: "fuzz.conf", to: &options)
            Self.expectWithinBounds(options, "seed \(seed): \(text.debugDescription)")
            let defaults = Options()
            #expect(options.helper == defaults.helper && options.config == defaults.config
                    && options.helperTimeout == defaults.helperTimeout, "module-only key set from a file")
            let lines = text.unicodeScalars.filter { $0 == "\n" }.count + 1
            #expect(issues.allSatisfy { $0.line >= 1 && $0.line <= lines })
        }
    }

    @Test(arguments: seeds) func crlfAndLfConfigFilesMeanTheSame(seed: UInt64) {
        var rng = SplitMix64(seed)
        for _ in 0..<300 {
            let lines = (0..<Int.random(in: 1...8, using: &rng)).map { _ in rng.configLine() }
            var lf = Options(), crlf = Options()
            let a = ConfigParser.apply(fileText: lines.joined(separator: "\n"), source: "f", to: &lf)
            let b = ConfigParser.apply(fileText: lines.joined(separator: "\r\n"), source: "f", to: &crlf)
            #expect(lf == crlf, "seed \(seed): \(lines)")
            #expect(a.count == b.count)
        }
    }

    @Test(arguments: seeds) func noModuleArgumentSetsAnOptionOutOfBounds(seed: UInt64) {
        var rng = SplitMix64(seed)
        for _ in 0..<600 {
            let args = (0..<Int.random(in: 0...10, using: &rng)).map { _ in
                rng.configLine().filter { $0 != " " && $0 != "\t" }
            }
            var options = Options()
            _ = ConfigParser.apply(arguments: args, to: &options)
            Self.expectWithinBounds(options, "seed \(seed): \(args)")
            // From an unprivileged caller, the keys that move files or the bus never change.
            var limited = Options()
            _ = ConfigParser.apply(arguments: args, to: &limited) { !Options.privilegedKeys.contains($0) }
            let d = Options()
            #expect(limited.stateDir == d.stateDir && limited.dbusAddress == d.dbusAddress
                    && limited.lidPath == d.lidPath && limited.fprintDir == d.fprintDir
                    && limited.config == d.config && limited.helper == d.helper)
        }
    }

    static func expectWithinBounds(_ o: Options, _ context: String) {
        #expect((1...10).contains(o.maxTries), "\(context)")
        #expect((1...100).contains(o.lockoutThreshold), "\(context)")
        #expect((1...600).contains(o.scanTimeout), "\(context)")
        #expect((0.1...30).contains(o.busTimeout), "\(context)")
        #expect((0...Options.maxReuseDuration).contains(o.reuseDuration), "\(context)")
        #expect((1...3600).contains(o.helperTimeout), "\(context)")
        for hours in [o.passwordAfterIdleHours, o.passwordStaleHours, o.fingerprintStaleHours] {
            #expect((0...100_000).contains(hours), "\(context)")
        }
        for text in [o.reason, o.fallbackTitle ?? ""] {
            #expect(text.utf8.count <= 256 && !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f })
        }
        for path in [o.stateDir, o.lidPath, o.fprintDir, o.config] + (o.helper.isEmpty ? [] : [o.helper]) {
            #expect(path.hasPrefix("/") && !path.split(separator: "/").contains("..")
                    && !path.unicodeScalars.contains { $0.value < 0x20 }, "\(context): \(path)")
        }
        #expect(o.dbusAddress.hasPrefix("unix:"), "\(context)")
    }

    // MARK: - Generators

    static let kinds: [Frame.Kind] = [.request, .answer, .noAnswer, .cancel, .info, .error,
                                      .promptEchoOff, .promptEchoOn, .result]

    static func header(_ length: UInt32) -> [UInt8] {
        [UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff)]
    }
}

/// SplitMix64: a small, fast, seedable generator (the standard library's is not seedable).
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(_ seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &self) } }

    /// Text drawn from `alphabet`, or from a mix of ASCII, accents, CJK and emoji.
    mutating func text(_ n: Int, alphabet: String = "") -> String {
        let pool: [Character] = alphabet.isEmpty ? Array("aZ09 =/._-\tçé✓指紋🙂\u{7f}\u{1}") : Array(alphabet)
        return String((0..<n).map { _ in pool.randomElement(using: &self)! })
    }

    /// A token without the characters in `excluding`.
    mutating func token(_ n: Int, excluding: String) -> String {
        var out = text(n)
        out.removeAll { excluding.contains($0) }
        return out
    }

    /// Flips, inserts, deletes and truncates a few bytes.
    mutating func mutate(_ bytes: inout [UInt8]) {
        for _ in 0..<Int.random(in: 0...4, using: &self) {
            switch Int.random(in: 0...3, using: &self) {
            case 0 where !bytes.isEmpty:
                bytes[Int.random(in: 0..<bytes.count, using: &self)] ^= UInt8.random(in: 1...255, using: &self)
            case 1:
                bytes.insert(UInt8.random(in: 0...255, using: &self), at: Int.random(in: 0...bytes.count, using: &self))
            case 2 where !bytes.isEmpty:
                bytes.remove(at: Int.random(in: 0..<bytes.count, using: &self))
            case 3 where !bytes.isEmpty:
                bytes.removeLast(Int.random(in: 0...bytes.count, using: &self))
            default:
                break
            }
        }
    }

    /// One config line: a real key or a near miss, a value near or past the bounds, or noise.
    mutating func configLine() -> String {
        let keys = Options.allKeys + ["max_tries ", " bus_timeout", "MAX_TRIES", "", "#max_tries", "unknown"]
        let values = ["0", "1", "3", "10", "11", "100", "101", "600", "601", "0.1", "0.09", "30", "30.5",
                      "-1", "1e309", "nan", "inf", "-inf", "0x10", "1e-400", " 5 ", "yes", "no", "on", "maybe",
                      "owner", "biometrics", "required", "optional", "sequential", "concurrent",
                      "/var/lib/x", "/a/../b", "relative", "/tmp/\u{1}x", "unix:path=/run/x", "tcp:host=x",
                      String(repeating: "x", count: 300), "text with spaces", "\u{7f}", ""]
        switch Int.random(in: 0...9, using: &self) {
        case 0: return text(Int.random(in: 0...30, using: &self))
        case 1: return "# " + text(10)
        default:
            let key = keys.randomElement(using: &self)!
            let value = values.randomElement(using: &self)!
            let eq = ["=", " = ", "\t=\t", "=="].randomElement(using: &self)!
            return key + eq + value
        }
    }
}
