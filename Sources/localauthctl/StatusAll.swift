#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// `localauthctl status --all` (root only): every user with a state file, one line each,
/// from the state alone (no fprintd), like a bare `faillock`.
enum StatusAll {
    struct Row {
        let user: String
        let stored: StoredState
    }

    static func run(_ inv: Invocation, spec: CommandSpec) -> Int32 {
        let options: Options
        switch inv.options(log: StderrLog()) {
        case .success(let o): options = o
        case .failure(let e): return fail(spec, e)
        }
        let rules = Rules(options)
        let now = SystemClock().now()
        let boot = LinuxSystem().bootID()
        let rows: [Row]
        switch gather(options.stateDir) {
        case .success(let r): rows = r
        case .failure(let e): return fail(spec, e)
        }
        if inv.has(.json) {
            say(JSON.array(rows.map { json($0, rules, now: now, boot: boot) }).encoded())
            return Exit.ok
        }
        say(columns(["USER", "FAILED", "PASSWORD FIRST", "LAST PASSWORD", "LAST FINGER"]))
        for row in rows {
            let s = row.stored.userState
            let rule = passwordRule(row.stored, rules, now: now, boot: boot) ?? "-"
            let failed: String
            if case .damaged = row.stored { failed = "?" } else { failed = "\(s.consecutiveFailures)/\(rules.lockoutThreshold)" }
            say(columns([row.user, failed, rule, shortTime(s.lastPasswordAt), shortTime(s.lastFingerprintAt)]))
        }
        if rows.isEmpty { say("(no state recorded in \(options.stateDir))") }
        return Exit.ok
    }

    /// The users with a state file, sorted; the directory itself as the store checks it.
    static func gather(_ dir: String) -> Result<[Row], CLIError> {
        guard stateDirectoryExists(dir) else { return .success([]) }
        let store = FileStateStore(directory: dir)
        do { try store.checkDirectoryForReading() } catch { return .failure(.unavailable(error.description)) }
        guard let names = DoctorCommand.directoryEntries(dir) else {
            return .failure(.unavailable("\(dir): \(String(cString: strerror(errno)))"))
        }
        var rows: [Row] = []
        for file in names where file.hasSuffix(".state") {
            guard let user = try? UserName(String(file.dropLast(".state".count))),
                  let stored = try? store.load(user) else { continue }
            rows.append(Row(user: user.value, stored: stored))
        }
        return .success(rows)
    }

    static func passwordRule(_ stored: StoredState, _ rules: Rules, now: Timestamp, boot: String?) -> String? {
        guard case .error(let e)? = rules.refusal(stored, now: now, bootID: boot) else { return nil }
        return e.reason.key
    }

    static func json(_ row: Row, _ rules: Rules, now: Timestamp, boot: String?) -> JSON {
        let s = row.stored.userState
        var damaged = false
        if case .damaged = row.stored { damaged = true }
        return .object([
            ("user", .string(row.user)),
            ("state", .string(damaged ? "damaged" : "ok")),
            ("consecutive_failures", .int(damaged ? nil : Int64(s.consecutiveFailures))),
            ("lockout_threshold", .int(Int64(rules.lockoutThreshold))),
            ("locked_out", .bool(damaged || rules.isLockedOut(s))),
            ("password_required", .string(passwordRule(row.stored, rules, now: now, boot: boot))),
            ("last_password", .int(s.lastPasswordAt)),
            ("last_fingerprint", .int(s.lastFingerprintAt)),
        ])
    }

    private static func columns(_ fields: [String]) -> String {
        let widths = [16, 7, 17, 17, 16]
        return zip(fields, widths).map { $0.count >= $1 ? $0 + " " : $0.padding($1) }.joined()
            .trimmingWhitespace
    }

    private static func shortTime(_ t: Timestamp?) -> String {
        guard let t else { return "never" }
        var seconds = time_t(t)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return String(t) }
        var buffer = [CChar](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M", &parts)
        return n > 0 ? String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self) : String(t)
    }
}
