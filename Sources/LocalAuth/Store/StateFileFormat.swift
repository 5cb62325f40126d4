/// The text format of a state file: a header, `key=value` lines in a fixed order, and a
/// SHA-256 of everything before it, so a truncated or edited file is recognised.
///
///     localauth-state 1
///     failures=2
///     last_password=1764000000
///     ...
///     sha256=<hex of the lines above, newlines included>
enum StateFileFormat {
    static let header = "localauth-state 1"
    /// A state file is small; anything larger is damaged.
    static let maxSize = 4096

    static func encode(_ s: UserState) -> [UInt8] {
        var lines = [header, "failures=\(s.consecutiveFailures)"]
        func add(_ key: String, _ value: String?) { if let v = value { lines.append("\(key)=\(v)") } }
        add("last_password", s.lastPasswordAt.map { String($0) })
        add("last_fingerprint", s.lastFingerprintAt.map { String($0) })
        add("last_fingerprint_terminal", s.lastFingerprintTerminal)
        add("boot_id", s.bootID)
        lines.append("opted_in=\(s.optedIn ? 1 : 0)")
        add("trusted_domain_state", s.trustedDomainState)
        // Only when there is something to say: files written before it existed stay valid.
        if s.passwordFailures > 0 { lines.append("password_failures=\(s.passwordFailures)") }
        add("last_remote_login", s.lastRemoteLoginAt.map { String($0) })
        add("last_remote_login_from", s.lastRemoteLoginFrom)
        add("last_local_unlock", s.lastLocalUnlockAt.map { String($0) })
        add("last_remote_login_boot", s.lastRemoteLoginBoot?.text)
        add("last_local_unlock_boot", s.lastLocalUnlockBoot?.text)
        let body = Array((lines.joined(separator: "\n") + "\n").utf8)
        return body + Array("sha256=\(Crypto.hex(Crypto.sha256(body)))\n".utf8)
    }

    struct Damage: Error, Equatable {
        let why: String
        init(_ why: String) { self.why = why }
    }

    /// Decodes a file's bytes; the error says what is wrong, for the log.
    static func decode(_ bytes: [UInt8]) -> Result<UserState, Damage> {
        guard bytes.count <= maxSize else { return .failure(Damage("larger than \(maxSize) bytes")) }
        guard String(validating: bytes, as: UTF8.self) != nil else { return .failure(Damage("not UTF-8")) }
        // The checksum line is the last line: find the newline before it.
        guard bytes.last == UInt8(ascii: "\n"),
              let cut = bytes.dropLast().lastIndex(of: UInt8(ascii: "\n")).map({ $0 + 1 }),
              bytes[cut...].starts(with: Array("sha256=".utf8))
        else { return .failure(Damage("truncated (no checksum line)")) }
        let body = Array(bytes[..<cut])
        let sum = String(decoding: bytes[(cut + 7)..<(bytes.count - 1)], as: UTF8.self)
        guard sum == Crypto.hex(Crypto.sha256(body)) else { return .failure(Damage("checksum mismatch")) }
        return parse(body)
    }

    /// The lines of the (checked, UTF-8) body, split as bytes: a line ends at each "\n"
    /// byte. Not as Characters, where a terminal name ending in "\r" would join the next
    /// line ("\r\n" is one Character) and damage the file; and bytes, not Unicode scalars,
    /// because splitting a String's scalars generically cost a seventh of the helper's
    /// start-up.
    private static func parse(_ body: [UInt8]) -> Result<UserState, Damage> {
        var lines = body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard let first = lines.first, first.elementsEqual(header.utf8) else {
            return .failure(Damage("unknown header"))
        }
        lines.removeFirst()
        if lines.last?.isEmpty == true { lines.removeLast() }
        var s = UserState()
        var seen: [String] = []
        for line in lines {
            guard let eq = line.firstIndex(of: UInt8(ascii: "=")) else { return .failure(Damage("line without `=`")) }
            let key = String(decoding: line[..<eq], as: UTF8.self)
            let value = String(decoding: line[(eq + 1)...], as: UTF8.self)
            guard !seen.contains(key) else { return .failure(Damage("`\(key)` twice")) }
            seen.append(key)
            guard set(key, value, &s) else { return .failure(Damage("bad `\(key)`")) }
        }
        return seen.contains("failures") ? .success(s) : .failure(Damage("no failure count"))
    }

    private static func set(_ key: String, _ value: String, _ s: inout UserState) -> Bool {
        switch key {
        case "failures":
            guard let n = Int(value), n >= 0 else { return false }
            s.consecutiveFailures = n
        case "last_password":
            guard let t = Timestamp(value) else { return false }
            s.lastPasswordAt = t
        case "last_fingerprint":
            guard let t = Timestamp(value) else { return false }
            s.lastFingerprintAt = t
        case "last_fingerprint_terminal": s.lastFingerprintTerminal = value
        case "boot_id": s.bootID = value
        case "opted_in":
            guard value == "0" || value == "1" else { return false }
            s.optedIn = value == "1"
        case "trusted_domain_state": s.trustedDomainState = value
        case "password_failures":
            guard let n = Int(value), n >= 0 else { return false }
            s.passwordFailures = n
        case "last_remote_login":
            guard let t = Timestamp(value) else { return false }
            s.lastRemoteLoginAt = t
        case "last_remote_login_from": s.lastRemoteLoginFrom = value
        case "last_local_unlock":
            guard let t = Timestamp(value) else { return false }
            s.lastLocalUnlockAt = t
        case "last_remote_login_boot":
            guard let b = BootStamp(text: value) else { return false }
            s.lastRemoteLoginBoot = b
        case "last_local_unlock_boot":
            guard let b = BootStamp(text: value) else { return false }
            s.lastLocalUnlockBoot = b
        default: return false
        }
        return true
    }
}
