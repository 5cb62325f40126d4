#if canImport(Glibc)
import Glibc
#endif
import LocalAuthProtocol

/// One approval kept for reuse: a key (its name and the SHA-256 of its point, so that a
/// key created again under the name inherits nothing), the scope it was given for, and
/// when (CLOCK_BOOTTIME with the boot: SSHKeyRule.reuseApplies).
///
///     <name> <key id> <hex of the scope> <boot id> <milliseconds>
public struct SSHKeyReuse: Equatable, Sendable {
    public var name: String
    /// The first 16 bytes of the SHA-256 of the key's point, in hex.
    public var keyID: String
    public var scope: String
    public var at: BootStamp

    public init(name: String, keyID: String, scope: String, at: BootStamp) {
        self.name = name
        self.keyID = keyID
        self.scope = scope
        self.at = at
    }

    public static func keyID(_ record: SSHKeyRecord) -> String {
        Crypto.hex(Array(Crypto.sha256(record.publicKey).prefix(16)))
    }

    public var line: String { "\(name) \(keyID) \(Crypto.hex(Array(scope.utf8))) \(at.bootID) \(at.millis)" }

    public init?(line: Substring) {
        let w = line.split(separator: " ", omittingEmptySubsequences: false)
        guard w.count == 5, SSHKeyRecord.nameProblem(String(w[0])) == nil, w[1].utf8.count == 32,
              let scope = Hex.decode(String(w[2])), let at = BootStamp(text: "\(w[3]) \(w[4])") else { return nil }
        self.init(name: String(w[0]), keyID: String(w[1]), scope: String(decoding: scope, as: UTF8.self), at: at)
    }
}

/// One use of a key, or a refusal, as `localauthctl ssh log` shows it: wall-clock time, the
/// key's name, what was approved (root's own words: "log in to HOST", "sign a git commit"),
/// the outcome (a word: `signed`, `reused`, `refused-forwarded`, …) and the program chain.
///
///     <time> <name> <outcome> <hex of what> <hex of the chain>
public struct SSHKeyUse: Equatable, Sendable {
    public var at: Timestamp
    public var key: String
    public var what: String
    public var outcome: String
    public var chain: String

    public init(at: Timestamp, key: String, what: String, outcome: String, chain: String) {
        self.at = at
        self.key = key
        self.what = what
        self.outcome = outcome
        self.chain = chain
    }

    /// Longest `what` and `chain` kept (bytes; longer ones are cut).
    public static let maxText = 200

    public var line: String {
        let outcome = self.outcome.isEmpty ? "-" : self.outcome
        return "\(at) \(key.isEmpty ? "-" : key) \(outcome) \(Self.hexText(what)) \(Self.hexText(chain))"
    }

    public init?(line: Substring) {
        let w = line.split(separator: " ", omittingEmptySubsequences: false)
        guard w.count == 5, let at = Timestamp(w[0]), let what = Hex.decode(String(w[3])),
              let chain = Hex.decode(String(w[4])) else { return nil }
        self.init(at: at, key: String(w[1]), what: String(decoding: what, as: UTF8.self), outcome: String(w[2]),
                  chain: String(decoding: chain, as: UTF8.self))
    }

    /// At most `maxText` bytes, cut between characters' scalars (never inside one).
    private static func hexText(_ text: String) -> String {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            guard bytes.count + encoded.count <= maxText else { break }
            bytes += encoded
        }
        return Crypto.hex(bytes)
    }

    /// An outcome is a word of `a-z 0-9 -` (anything else becomes `other`).
    static func word(_ text: String) -> String {
        let ok = !text.isEmpty && text.utf8.count <= 40
            && text.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") }
        return ok ? text : "other"
    }
}

/// Approvals kept for reuse and the ring of last uses.
extension SSHKeyStore {
    /// Approvals kept at most (the oldest go first).
    public static let maxReuseEntries = 256
    /// Uses kept in the ring.
    public static let maxUses = 50
    /// Longest scope kept for reuse.
    public static let maxScopeBytes = 512

    var reusePath: String { directory + "/reuse" }
    var usesPath: String { directory + "/uses" }

    /// When `record`'s last approval for `scope` was given; nil for none. A damaged file
    /// holds none (no reuse: every signature asks).
    public func reuse(for record: SSHKeyRecord, scope: String) throws(Failure) -> BootStamp? {
        try prepare()
        let id = SSHKeyReuse.keyID(record)
        return try locked(LOCK_SH) { () throws(Failure) -> BootStamp? in
            try reuseEntries().last { $0.name == record.name && $0.keyID == id && $0.scope == scope }?.at
        }
    }

    /// Keeps an approval of `record` for `scope` given `at` (it replaces the last one for the
    /// same key and scope). A scope longer than `maxScopeBytes` is not kept.
    public func recordUse(for record: SSHKeyRecord, scope: String, at: BootStamp) throws(Failure) {
        guard !scope.isEmpty, scope.utf8.count <= Self.maxScopeBytes, record.reuseSeconds > 0 else { return }
        try prepare()
        let entry = SSHKeyReuse(name: record.name, keyID: SSHKeyReuse.keyID(record), scope: scope, at: at)
        try locked { () throws(Failure) in
            var entries = try reuseEntries().filter {
                !($0.name == entry.name && $0.keyID == entry.keyID && $0.scope == entry.scope)
            }
            entries.append(entry)
            try writeReuse(Array(entries.suffix(Self.maxReuseEntries)))
        }
    }

    /// Forgets every approval of the key named `name` (caller holds the lock).
    func forgetReuse(name: String) throws(Failure) {
        let entries = try reuseEntries()
        let kept = entries.filter { $0.name != name }
        if kept.count != entries.count { try writeReuse(kept) }
    }

    private func reuseEntries() throws(Failure) -> [SSHKeyReuse] {
        let bytes: [UInt8]?
        do { bytes = try read(reusePath, limit: 256 * 1024) } catch {
            if case .damaged = error { return [] }
            throw error
        }
        guard let bytes else { return [] }
        var out: [SSHKeyReuse] = []
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            guard let entry = SSHKeyReuse(line: line) else { return [] }  // damaged: nothing reused
            out.append(entry)
        }
        return out
    }

    private func writeReuse(_ entries: [SSHKeyReuse]) throws(Failure) {
        if exists(reusePath), (try? read(reusePath, limit: 256 * 1024)) == nil { unlink(reusePath) }
        try writeAtomically(reusePath, Array(entries.map { $0.line + "\n" }.joined().utf8))
    }

    // MARK: - The last uses

    /// Adds one use to the ring (the oldest beyond `maxUses` dropped). A damaged ring is
    /// started again: it is a record for the user to read, not a rule.
    public func appendUse(_ use: SSHKeyUse) throws(Failure) {
        try prepare()
        var use = use
        use.outcome = SSHKeyUse.word(use.outcome)
        if SSHKeyRecord.nameProblem(use.key) != nil { use.key = "-" }
        try locked { () throws(Failure) in
            var uses = (try? usesRing()) ?? []
            uses.append(use)
            try checkFreeSpace(4096)
            if exists(usesPath), (try? read(usesPath, limit: 256 * 1024)) == nil { unlink(usesPath) }
            try writeAtomically(usesPath, Array(uses.suffix(Self.maxUses).map { $0.line + "\n" }.joined().utf8))
        }
    }

    /// The last `limit` uses, oldest first.
    public func lastUses(limit: Int = SSHKeyStore.maxUses) throws(Failure) -> [SSHKeyUse] {
        try prepare()
        return try locked(LOCK_SH) { () throws(Failure) -> [SSHKeyUse] in
            Array(try usesRing().suffix(max(0, limit)))
        }
    }

    private func usesRing() throws(Failure) -> [SSHKeyUse] {
        guard let bytes = try read(usesPath, limit: 256 * 1024) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap(SSHKeyUse.init(line:))
    }
}
