#if canImport(Glibc)
import Glibc
#endif
import CCrypt
import CLinux
import LocalAuth

/// What checking a password against the account gave.
enum PasswordVerdict: Equatable {
    case matches
    case differs
    /// The account has no local hash to check against (a directory service, a locked or
    /// passwordless account): the password cannot be proven here.
    case unprovable(String)
}

/// The account password checked as pam_unix checks it: crypt(3) of the typed text with the
/// stored hash as the setting, compared in constant time. Needs root (the shadow file).
enum ShadowPassword {
    static func check(user: UserName, password: [UInt8]) -> PasswordVerdict {
        guard let stored = storedHash(user) else {
            return .unprovable("\(user) has no local password hash (a directory account?)")
        }
        guard !password.isEmpty, !password.contains(0) else { return .differs }
        let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
        let size = MemoryLayout<crypt_data>.size
        memset(data, 0, size)
        defer {
            explicit_bzero(data, size)
            data.deallocate()
        }
        var phrase = password.map { CChar(bitPattern: $0) } + [0]
        defer { phrase.withUnsafeMutableBytes { if let p = $0.baseAddress { explicit_bzero(p, $0.count) } } }
        guard let out = crypt_r(phrase, stored, data) else { return .differs }
        let computed = Array(String(cString: out).utf8)
        return constantTimeEqual(computed, Array(stored.utf8)) ? .matches : .differs
    }

    /// The shadow entry's hash, else the passwd entry's; nil when there is no usable one
    /// (empty, locked with `!`, `*`, or only the `x` placeholder).
    private static func storedHash(_ user: UserName) -> String? {
        var hash: String?
        if let sp = getspnam(user.value), let field = sp.pointee.sp_pwdp {
            hash = String(cString: field)
        } else if let pw = getpwnam(user.value), let field = pw.pointee.pw_passwd {
            hash = String(cString: field)
        }
        guard let h = hash, !h.isEmpty, h != "x", !h.hasPrefix("!"), !h.hasPrefix("*") else { return nil }
        return h
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

/// A password check that a user may call in a loop (a peer that is not root: the caller can
/// write requests by hand), made no better a guessing oracle than the system's own
/// `unix_chkpwd`:
///
/// * every outcome takes the same time (`duration`, counted from the start of the check),
///   so answering fast says nothing: a right password is not told from a wrong one by how
///   soon the answer comes;
/// * one check at a time per user (a lock file in the state directory): guesses cannot run
///   in parallel, so the rate is at most one per `duration`;
/// * every wrong password is logged and counted in the user's state (`password_failures`),
///   so the guessing shows in the log and in `localauthctl status`.
struct PacedPasswordCheck {
    /// Seconds every check takes, whatever its outcome.
    static let duration: Int64 = 1

    let store: FileStateStore
    let rules: Rules
    let log: LogSink

    /// The verdict; `nil` when the check could not be serialized (the state directory is
    /// unusable): then nothing is checked at all.
    func check(user: UserName, password: [UInt8]) -> PasswordVerdict? {
        do {
            return try store.withLock(named: ".password-check-\(user.value).lock") {
                let started = MonotonicClock.millis()
                let verdict = ShadowPassword.check(user: user, password: password)
                // An empty answer is no guess (no PAM_AUTHTOK): delayed, not counted.
                if verdict == .differs && !password.isEmpty { countFailure(user) }
                waitUntil(started + PacedPasswordCheck.duration * 1000)
                return verdict
            }
        } catch {
            log.log(.error, "password check for \(user) not done: \(error)")
            return nil
        }
    }

    private func countFailure(_ user: UserName) {
        var failures = 0
        do {
            try store.update(user) { stored in
                if case .damaged = stored { return nil }
                let next = rules.afterWrongPassword(stored.userState)
                failures = next.passwordFailures
                return next
            }
        } catch {
            log.log(.warning, "wrong password for \(user) not counted: \(error)")
        }
        log.log(.notice, "wrong password for \(user) from a caller that is not root (\(failures) since the last right one)")
    }

    private func waitUntil(_ deadline: Int64) {
        while true {
            let left = deadline - MonotonicClock.millis()
            guard left > 0 else { return }
            var ts = timespec(tv_sec: Int(left / 1000), tv_nsec: Int((left % 1000) * 1_000_000))
            nanosleep(&ts, nil)
        }
    }
}
