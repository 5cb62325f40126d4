/// One line of a known_hosts file: [@marker] patterns keytype base64-key [comment].
struct KnownHostsEntry {
    enum Marker { case none, revoked, certificateAuthority }

    let marker: Marker
    let patterns: [UInt8]
    let keyType: [UInt8]
    let keyBase64: [UInt8]

    /// nil for a comment, a blank line, an unknown marker or a line with too few fields.
    init?(_ line: ArraySlice<UInt8>) {
        var fields = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0d }).makeIterator()
        guard var first = fields.next(), first.first != UInt8(ascii: "#") else { return nil }
        if first.first == UInt8(ascii: "@") {
            switch String(decoding: first, as: UTF8.self) {
            case "@revoked": marker = .revoked
            case "@cert-authority": marker = .certificateAuthority
            default: return nil  // OpenSSH skips a line with a marker it does not know
            }
            guard let next = fields.next() else { return nil }
            first = next
        } else {
            marker = .none
        }
        guard let type = fields.next(), let key = fields.next() else { return nil }
        patterns = Array(first)
        keyType = Array(type)
        keyBase64 = Array(key)
        // Patterns and keys far over any real one are not read further (a host list of a
        // few names is a few hundred bytes; this bounds the pattern matching per line).
        guard patterns.count <= KnownHosts.maxNameBytes * 4, keyBase64.count <= 4 * AgentMessage.Limit.keyBlob / 3 + 4 else { return nil }
    }

    /// Whether the line's key is `blob` (and its type field says so).
    func holds(_ blob: [UInt8]) -> Bool {
        guard let type = SSHPublicKey.typeName(of: blob), Array(type.utf8) == keyType else { return false }
        return SSHBase64.decode(bytes: keyBase64) == blob
    }

    /// Whether the line's patterns take `name` (a lowercased lookup name), as ssh matches
    /// them: a hashed entry if it is the hash of `name`; a plain list if a pattern matches
    /// and no negated one does.
    func matches(_ name: String) -> Bool {
        if hashed { return KnownHostsEntry.hashed(patterns, matches: name) }
        return list.allows(Array(name.utf8))
    }

    /// The names this entry gives: for a hashed entry, the candidate it hashes; for a plain
    /// one, its literal names no negation excludes, and the candidates it matches.
    func names(candidates: [String]) -> [String] {
        if hashed { return candidates.filter(matches) }
        let list = self.list
        var names: [String] = []
        for literal in list.positive where !literal.contains(where: { $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: "?") }) {
            if list.allows(literal), let text = KnownHostsEntry.printable(literal) { names.append(text) }
        }
        for candidate in candidates where list.allows(Array(candidate.utf8)) {
            if let text = KnownHostsEntry.printable(Array(candidate.utf8)) { names.append(text) }
        }
        return names
    }

    private var hashed: Bool { patterns.first == UInt8(ascii: "|") }

    /// A plain pattern list, lowercased: positive patterns and negated ones (without '!').
    struct Patterns {
        var positive: [[UInt8]] = []
        var negated: [[UInt8]] = []

        func allows(_ name: [UInt8]) -> Bool {
            positive.contains { Glob.matches($0, name) } && !negated.contains { Glob.matches($0, name) }
        }
    }

    private var list: Patterns {
        var list = Patterns()
        for pattern in patterns.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true) {
            let lowered = pattern.map(KnownHostsEntry.lower)
            if lowered.first == UInt8(ascii: "!") { list.negated.append(Array(lowered.dropFirst())) } else { list.positive.append(lowered) }
        }
        return list
    }

    /// "|1|" base64(salt) "|" base64(HMAC-SHA1(salt, name)), salt and hash 20 bytes each.
    static func hashed(_ field: [UInt8], matches name: String) -> Bool {
        let parts = field.split(separator: UInt8(ascii: "|"), omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].isEmpty, parts[1] == [UInt8(ascii: "1")],
              let salt = SSHBase64.decode(bytes: Array(parts[2]), limit: 64), salt.count == 20,
              let hash = SSHBase64.decode(bytes: Array(parts[3]), limit: 64), hash.count == 20,
              let mac = SSHDigest.hmac(.sha1, key: salt, Array(name.utf8)) else { return false }
        // Not a secret comparison: both sides are the user's own file and command line.
        return mac == hash
    }

    static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte
    }

    /// A name fit for a prompt: UTF-8, showable (`SSHText`), no spaces; others are left out.
    static func printable(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty, let text = String(validating: bytes, as: UTF8.self), SSHText.isShowable(text),
              !text.contains(" ") else { return nil }
        return text
    }
}

/// OpenSSH's host patterns: '*' any run of bytes, '?' any one byte, nothing else special.
enum Glob {
    /// Iterative, with one backtrack point: linear in practice, at most |pattern|·|name|.
    static func matches(_ pattern: [UInt8], _ name: [UInt8]) -> Bool {
        var p = 0, n = 0
        var star = -1, resume = 0
        while n < name.count {
            if p < pattern.count, pattern[p] == UInt8(ascii: "?") || pattern[p] == name[n] {
                p += 1
                n += 1
            } else if p < pattern.count, pattern[p] == UInt8(ascii: "*") {
                star = p
                resume = n
                p += 1
            } else if star >= 0 {
                p = star + 1
                resume += 1
                n = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.count
    }
}
