#if canImport(Glibc)
import Glibc
#endif
import CAudit
import CSystemd
import LocalAuth
import Synchronization

/// Whether this process has said that it cannot write audit records (said once).
private let auditFailureSaid = Atomic<Bool>(false)

/// Writes the lockout events where an administrator looks: the audit log, as pam_faillock
/// does (ANOM_LOGIN_FAILURES and RESP_ACCT_LOCK when a lockout begins, USER_MGMT when the
/// password or a reset clears it), and the journal, with a MESSAGE_ID for each event and
/// the user, counts, service, tty, rhost and ruser as fields. Where there is no audit
/// support in the kernel or no journal, that part is skipped; nothing here can fail an
/// authentication.
public final class SecurityRecord: SecurityEvents {
    /// `journalctl MESSAGE_ID=...` finds every lockout that began, or was cleared.
    public static let lockoutBeganID = "4a38a0e323504ceeb7478faacf9bffcb"
    public static let lockoutClearedID = "f11b02141c93420d8b8d8f5ff3ebad41"

    private let program: String
    private let log: LogSink

    /// `program`: the name in the journal's entries (`localauth-helper`, `localauthctl`);
    /// the audit records carry the executable's path.
    public init(program: String, log: LogSink) {
        self.program = program
        self.log = log
    }

    public func lockoutBegan(_ user: UserName, failures: Int, threshold: Int, context: EventContext) {
        audit(AUDIT_ANOM_LOGIN_FAILURES, op: "localauth-lockout", user, context, success: true)
        audit(AUDIT_RESP_ACCT_LOCK, op: "localauth-lockout", user, context, success: true)
        let message = "fingerprints locked out for \(user): \(failures) consecutive failed matches "
            + "(lockout at \(threshold)); the password lifts it"
        log.log(.notice, message)
        journal(Self.lockoutBeganID, message, user, context, extra: [
            "LOCALAUTH_FAILURES=\(failures)", "LOCALAUTH_THRESHOLD=\(threshold)",
        ])
    }

    public func lockoutCleared(_ user: UserName, failures: Int, by: ClearedBy, context: EventContext) {
        audit(AUDIT_USER_MGMT, op: by == .reset ? "localauth-reset" : "localauth-unlock", user, context,
              success: true)
        var message = "fingerprint lockout of \(user) cleared by the \(by.rawValue) (\(failures) consecutive failed matches)"
        if let actor = context.actorUID { message += " by uid \(actor)" }
        log.log(.notice, message)
        journal(Self.lockoutClearedID, message, user, context, extra: [
            "LOCALAUTH_FAILURES=\(failures)", "LOCALAUTH_CLEARED_BY=\(by.rawValue)",
        ] + (context.actorUID.map { ["LOCALAUTH_ACTOR_UID=\($0)"] } ?? []))
    }

    // MARK: - The audit log

    private func audit(_ type: Int32, op: String, _ user: UserName, _ c: EventContext,
                       success: Bool) {
        let fd = audit_open()
        guard fd >= 0 else { return auditUnavailable(errno, op: op, user) }
        defer { audit_close(fd) }
        // libaudit writes hostname= and terminal= as given: one word each.
        let host: String? = c.rhost.isEmpty ? nil : LogWords.word(c.rhost)
        let tty: String? = c.tty.isEmpty ? nil : LogWords.word(c.tty)
        let rc = withOptionalCString(host) { h in
            withOptionalCString(tty) { t in
                // The account by name (acct="..."), as pam_faillock's records and `ausearch
                // --user`... name it; libaudit prefers a given id to the name, so none is given.
                // No program name either: libaudit then writes the executable's full path
                // (exe="/usr/libexec/localauth/localauth-helper"), as in pam_faillock's
                // records, which `ausearch -x` and `-F exe=` audit rules match.
                audit_log_acct_message(fd, type, nil, op, user.value, UInt32.max, h, nil, t,
                                       success ? 1 : 0)
            }
        }
        if rc <= 0 && errno != ECONNREFUSED {
            log.log(.warning, "could not write the audit record \(op) for \(user): \(String(cString: strerror(errno)))")
        }
    }

    /// Once per process: a record that could not be written is said, unless the kernel has
    /// no audit (NETLINK_AUDIT unknown: EPROTONOSUPPORT; EINVAL from old kernels, as libaudit
    /// reads it). EAFNOSUPPORT is not taken for that: netlink is in every kernel this runs
    /// on, and it is what a filter on socket families answers (systemd's
    /// RestrictAddressFamilies= without AF_NETLINK; systemd-nspawn's for its guests), so it
    /// means the records are refused.
    private func auditUnavailable(_ error: Int32, op: String, _ user: UserName) {
        guard error != EPROTONOSUPPORT, error != EINVAL else { return }
        guard !auditFailureSaid.exchange(true, ordering: .relaxed) else { return }
        log.log(.error, "audit records cannot be written (the audit record \(op) for \(user) is lost): "
                + "audit_open: \(String(cString: strerror(error)))"
                + (error == EAFNOSUPPORT ? " (a filter refused the audit socket: AF_NETLINK missing from a unit's "
                   + "RestrictAddressFamilies=, or a container that keeps audit from its guests)" : ""))
    }

    // MARK: - The journal

    private func journal(_ id: String, _ message: String, _ user: UserName, _ c: EventContext, extra: [String]) {
        var fields = [
            "MESSAGE_ID=\(id)", "MESSAGE=\(program): \(message)", "PRIORITY=\(LOG_NOTICE)",
            "SYSLOG_FACILITY=\(LOG_AUTHPRIV >> 3)", "SYSLOG_IDENTIFIER=\(program)",
            "LOCALAUTH_USER=\(user.value)", "LOCALAUTH_SERVICE=\(c.service)", "LOCALAUTH_TTY=\(c.tty)",
            "LOCALAUTH_RHOST=\(c.rhost)", "LOCALAUTH_RUSER=\(c.ruser)",
        ] + extra
        fields = fields.map { String(String.UnicodeScalarView($0.unicodeScalars.map { $0 == "\n" ? " " : $0 })) }
        let copies = fields.map { strdup($0)! }
        defer { copies.forEach { free($0) } }
        var vectors = zip(copies, fields).map { iovec(iov_base: UnsafeMutableRawPointer($0.0), iov_len: $0.1.utf8.count) }
        _ = vectors.withUnsafeMutableBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) }
    }
}

private func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let s else { return body(nil) }
    return s.withCString { body($0) }
}
