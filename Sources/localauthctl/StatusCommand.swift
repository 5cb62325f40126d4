#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth

/// `localauthctl status [USER] [--json]`: what fprintd has for the user, the switch, the
/// lockout, the times, and what the module would do now — decided by `Rules`, the same
/// functions the module's helper runs, in the same order.
enum StatusCommand {
    static let spec = CommandSpec(
        name: "status", synopsis: "status [USER | --all] [--json]",
        summary: "show USER's fingerprints, lockout, times and what the module would do now",
        help: """
        Shows, for USER (default: you): the reader and the enrolled fingers (from fprintd),
        whether fingerprint login is on (opt_in and the user's switch) and whether the
        enrolled set changed since it was trusted, the consecutive failed matches and the
        lockout, the last password and fingerprint times, and which rule requires the
        password now (lockout, reboot, idle, stale, never used). Reads nothing but fprintd
        and the state; changes nothing. Another user's status needs root; without root the
        state (root only) is not shown.
        --all (root only) lists every user with recorded state, like faillock: failed
        matches, lockout, which rule requires the password, the last password and finger.
        --json prints one JSON object instead (keys in localauthctl(8)); with --all, a list.
        """,
        flags: Flag.common + [.json, all], run: run)

    static let all = Flag("--all", .toggle, privileged: true, "every user with recorded state")

    static func run(_ inv: Invocation) -> Int32 {
        let named: String?
        switch inv.userArgument() {
        case .success(let n): named = n
        case .failure(let e): return fail(spec, e)
        }
        if inv.has(all) {
            guard named == nil else { return usageError(spec, "USER and --all together") }
            return StatusAll.run(inv, spec: spec)
        }
        let account: Account
        switch targetAccount(named, what: "reading another user's status") {
        case .success(let a): account = a
        case .failure(let e): return fail(spec, e)
        }
        let configLog = MemoryLog()
        let options: Options
        switch inv.options(log: configLog) {
        case .success(let o): options = o
        case .failure(let e): return fail(spec, e)
        }
        let status = Status.gather(account, options: options, configPath: inv.value(.config) ?? ConfigFile.installedPath,
                                   configIssues: configLog.lines.count)
        if inv.has(.json) {
            say(status.json.encoded())
        } else {
            for (label, value) in status.lines {
                say(label.isEmpty ? value : padCells(label + ":", 21) + value)
            }
        }
        return Exit.ok
    }
}

/// Everything `status` reports, gathered once.
struct Status {
    let account: Account
    let options: Options
    let rules: Rules
    let configPath: String
    let configIssues: Int
    let now: Timestamp
    let bootID: String?
    var enrolled: Result<EnrolledSet, EvaluationError>
    var passwordUsable: Bool?
    /// nil when the state could not be read (the reason is in `stateError`).
    var stored: StoredState?
    var stateError: String?
    /// "trusted", "changed", "not-trusted-yet", "none", "unknown".
    var enrolledSetState = "unknown"
    /// Where the state was read: "state directory" (root), "localauthd" (your own, without
    /// root), or nil when it could not be.
    var stateSource: String?

    static func gather(_ account: Account, options: Options, configPath: String, configIssues: Int) -> Status {
        let system = LinuxSystem()
        let sensor = makeSensor(options, log: ToolLog.shared)
        var s = Status(account: account, options: options, rules: Rules(options), configPath: configPath,
                       configIssues: configIssues, now: SystemClock().now(), bootID: system.bootID(),
                       enrolled: Result { () throws(EvaluationError) in try sensor.enrolledSet(for: account.name.value) },
                       passwordUsable: system.hasUsablePassword(account.name))
        let store = FileStateStore(directory: options.stateDir)
        if !callerIsRoot {
            // Your own state, through localauthd (it answers for the peer's uid only).
            switch OwnStatus.fetch(account, bootID: s.bootID) {
            case .success(let summary):
                s.stored = summary.stored
                s.stateError = summary.stored == nil ? summary.cause : nil
                s.enrolledSetState = summary.enrolledSet
                s.stateSource = "localauthd"
            case .failure(let e):
                s.stateError = "readable by root only (sudo localauthctl status \(account.name)); "
                    + "\(e.message)"
                s.enrolledSetState = s.compareEnrolledSet(store)
            }
            return s
        } else if !stateDirectoryExists(options.stateDir) {
            s.stored = .fresh  // nothing recorded yet; reading does not create the directory
        } else {
            do { s.stored = try store.load(account.name) } catch { s.stateError = error.description }
        }
        if s.stored != nil { s.stateSource = "state directory" }
        s.enrolledSetState = s.compareEnrolledSet(store)
        return s
    }

    private func compareEnrolledSet(_ store: StateStore) -> String {
        guard case .success(let set) = enrolled else {
            if case .failure(let e) = enrolled, e.code == .biometryNotEnrolled { return "none" }
            return "unknown"
        }
        guard let stored, case .state(let state) = stored else {
            return stored == nil ? "unknown" : "not-trusted-yet"
        }
        guard state.trustedDomainState != nil else { return "not-trusted-yet" }
        // The installation secret exists once a set was trusted; computing reads it.
        guard let domain = try? DomainState.compute(set, store: store) else { return "unknown" }
        return rules.enrollmentRefusal(state, current: domain) == nil ? "trusted" : "changed"
    }

    // MARK: - Derived facts

    var userState: UserState? { stored?.userState }
    var failures: Int? { userState?.consecutiveFailures }
    var lockedOut: Bool? {
        guard let stored else { return nil }
        if case .damaged = stored { return true }
        return rules.isLockedOut(stored.userState)
    }
    var switchOn: Bool? { userState?.optedIn }
    var fingerprintLoginOn: Bool? {
        options.optIn == .optional ? true : switchOn
    }
    var passwordThisBoot: Bool? {
        guard let userState else { return nil }
        guard let bootID, let recorded = userState.bootID else { return false }
        return recorded == bootID
    }

    /// What the module would do now, in its own order: a usable password, the stored
    /// rules (lockout, the password preconditions, the switch), fprintd, the enrolled set.
    var decision: (kind: String, reason: String?, text: String) {
        if passwordUsable == false {
            return ("password", "no-password", tr(cliLanguage, "the account has no usable password, so no fingerprint either"))
        }
        guard let stored else {
            // Root could not read it: the module cannot either, and goes to the password.
            return callerIsRoot ? ("unavailable", "state-store", stateError ?? "the state is unreadable")
                                : ("unknown", nil, "the state is \(stateError ?? "unreadable")")
        }
        switch rules.refusal(stored, now: now, bootID: bootID) {
        case .error(let e)?:
            let (key, text) = explain(e.reason)
            return ("password", key, text)
        case .notOptedIn?:
            return ("off", "not-opted-in",
                    tr(cliLanguage, "fingerprint login is off for %s: the module steps aside (localauthctl enable)", account.name))
        case nil: break
        }
        switch enrolled {
        case .failure(let e):
            return ("unavailable", e.code.name, e.cause.isEmpty ? e.code.name : e.cause)
        case .success:
            if enrolledSetState == "changed" {
                return ("password", "enrollment-changed",
                        tr(cliLanguage, "the enrolled fingers changed since they were trusted: the password first"))
            }
            return ("fingerprint", nil,
                    tr(cliLanguage, "a finger (up to %s tries), then the password", rules.maxTries))
        }
    }

    /// A key for scripts and a sentence for people, for each reason the password comes first.
    func explain(_ reason: EvaluationError.Reason) -> (String, String) {
        if reason == .configurationUntrusted, let why = rules.untrustedConfiguration {
            return (reason.key, tr(cliLanguage, "fingerprint sign-in is off: the configuration cannot be trusted (%s; localauthctl doctor)", why))
        }
        return (reason.requiresPasswordFirst ? reason.key : "other", ruleText(reason, rules.figures, failures: failures))
    }

    // MARK: - Output

    var lines: [(String, String)] {
        var out: [(String, String)] = [(tr(cliLanguage, "user"), "\(account.name) (uid \(account.uid))")]
        switch enrolled {
        case .success(let set):
            out.append((tr(cliLanguage, "reader"), set.deviceName))
            out.append((tr(cliLanguage, "enrolled fingers"), set.fingers.joined(separator: ", ")))
        case .failure(let e) where e.code == .biometryNotEnrolled:
            out.append((tr(cliLanguage, "reader"), tr(cliLanguage, "present")))
            out.append((tr(cliLanguage, "enrolled fingers"), tr(cliLanguage, "none (fprintd-enroll)")))
        case .failure(let e):
            out.append((tr(cliLanguage, "reader"), tr(cliLanguage, "unavailable: %s", e.cause.isEmpty ? e.code.name : e.cause)))
            out.append((tr(cliLanguage, "enrolled fingers"), tr(cliLanguage, "unknown")))
        }
        let login: String
        switch (options.optIn, switchOn) {
        case (.optional, _): login = tr(cliLanguage, "on (opt_in = optional)")
        case (.required, true?): login = tr(cliLanguage, "on (turned on with localauthctl enable)")
        case (.required, false?): login = tr(cliLanguage, "off (opt_in = required; localauthctl enable)")
        case (.required, nil): login = tr(cliLanguage, "unknown (opt_in = required)")
        }
        out.append((tr(cliLanguage, "fingerprint login"), login))
        out.append((tr(cliLanguage, "enrolled set"), enrolledSetText))
        if stateSource == "localauthd" {
            out.append((tr(cliLanguage, "state"), tr(cliLanguage, "yours, read through localauthd")))
        }
        if let stateError {
            out.append((tr(cliLanguage, "state"), stateError))
        } else if case .damaged(let cause)? = stored {
            out.append((tr(cliLanguage, "state"), tr(cliLanguage, "damaged: %s", cause)))
        }
        if let failures, let lockedOut {
            out.append((tr(cliLanguage, "failed matches"), tr(cliLanguage, "%s in a row (lockout at %s)", failures, rules.lockoutThreshold)))
            out.append((tr(cliLanguage, "locked out"), lockedOut ? tr(cliLanguage, "yes (the password clears it; localauthctl reset)") : tr(cliLanguage, "no")))
            out.append((tr(cliLanguage, "last password"), timeText(userState?.lastPasswordAt)))
            out.append((tr(cliLanguage, "last fingerprint"), timeText(userState?.lastFingerprintAt)))
            out.append((tr(cliLanguage, "password this boot"), passwordThisBoot == true ? tr(cliLanguage, "yes") : tr(cliLanguage, "no")))
        }
        out.append((tr(cliLanguage, "after a remote login"), remoteLoginText))
        if passwordUsable == false { out.append((tr(cliLanguage, "account password"), tr(cliLanguage, "none usable"))) }
        let d = decision
        let next: String
        switch d.kind {
        case "fingerprint": next = tr(cliLanguage, "fingerprint: %s", d.text)
        case "password": next = tr(cliLanguage, "password first: %s", d.text)
        case "off": next = tr(cliLanguage, "password: %s", d.text)
        case "unavailable": next = tr(cliLanguage, "password: fingerprints unavailable (%s)", d.text)
        default: next = d.text
        }
        out.append((tr(cliLanguage, "next sign-in"), next))
        if configIssues > 0 {
            out.append((tr(cliLanguage, "config"), tr(cliLanguage, "%s: %s issue(s), see localauthctl doctor", configPath, configIssues)))
        }
        return out
    }

    /// `remote_login_guard` and root's records behind it (PresenceRule, rule 5).
    private var remoteLoginText: String {
        guard options.remoteLoginGuard else {
            return tr(cliLanguage, "the finger anywhere once the remote session ends (remote_login_guard = no)")
        }
        guard let s = userState, let remote = RemoteLogin(s, now: now, boot: bootID) else {
            return tr(cliLanguage, "no remote login since the last local unlock (remote_login_guard = yes)")
        }
        return tr(cliLanguage, "the password except at a console, the greeter or the lock screen, until a local unlock: remote login (%s) %s", remote.from, timeText(remote.at))
    }

    private var enrolledSetText: String {
        switch enrolledSetState {
        case "trusted": return tr(cliLanguage, "trusted")
        case "changed" where options.optIn == .required:
            return tr(cliLanguage, "changed since it was trusted (the password, then localauthctl enable)")
        case "changed": return tr(cliLanguage, "changed since it was trusted (the password trusts the new set)")
        case "not-trusted-yet" where options.optIn == .required:
            return tr(cliLanguage, "not trusted yet (localauthctl enable records it)")
        case "not-trusted-yet": return tr(cliLanguage, "not trusted yet (the next password or matched finger records it)")
        case "none": return tr(cliLanguage, "nothing enrolled")
        default: return tr(cliLanguage, "unknown")
        }
    }

    var json: JSON {
        let d = decision
        var reader: [(String, JSON)] = []
        var fingers: JSON = .null
        switch enrolled {
        case .success(let set):
            reader = [("available", .bool(true)), ("name", .string(set.deviceName)), ("error", .null)]
            fingers = .array(set.fingers.map { .string($0) })
        case .failure(let e) where e.code == .biometryNotEnrolled:
            reader = [("available", .bool(true)), ("name", .null), ("error", .null)]
            fingers = .array([])
        case .failure(let e):
            reader = [("available", .bool(false)), ("name", .null), ("error", .string(e.code.name)),
                      ("cause", .string(e.cause))]
        }
        let stateText: String
        switch stored {
        case nil: stateText = "unreadable"
        case .fresh?: stateText = "fresh"
        case .state?: stateText = "ok"
        case .damaged?: stateText = "damaged"
        }
        return .object([
            ("user", .string(account.name.value)),
            ("uid", .int(Int64(account.uid))),
            ("reader", .object(reader)),
            ("fingers", fingers),
            ("opt_in", .string(options.optIn.rawValue)),
            ("switch", .bool(switchOn)),
            ("fingerprint_login", .bool(fingerprintLoginOn)),
            ("enrolled_set", .string(enrolledSetState)),
            ("state", .string(stateText)),
            ("state_source", .string(stateSource)),
            ("state_error", .string(stateError ?? stored.flatMap { s -> String? in
                if case .damaged(let cause) = s { return cause }
                return nil
            })),
            ("consecutive_failures", .int(failures.map { Int64($0) })),
            ("lockout_threshold", .int(Int64(rules.lockoutThreshold))),
            ("locked_out", .bool(lockedOut)),
            ("last_password", .int(userState?.lastPasswordAt)),
            ("last_fingerprint", .int(userState?.lastFingerprintAt)),
            ("remote_login_guard", .bool(options.remoteLoginGuard)),
            ("last_remote_login", .int(userState?.lastRemoteLoginAt)),
            ("last_remote_login_from", userState?.lastRemoteLoginFrom.map { .string($0) } ?? .null),
            ("last_local_unlock", .int(userState?.lastLocalUnlockAt)),
            ("remote_login_since_unlock", .bool(userState.map { $0.remoteLoginSinceUnlock(now: now, boot: bootID) != nil })),
            ("password_this_boot", .bool(passwordThisBoot)),
            ("password_usable", .bool(passwordUsable)),
            ("password_required", d.kind == "password" ? .string(d.reason) : .null),
            ("decision", .string(d.kind)),
            ("decision_reason", .string(d.reason)),
            ("decision_text", .string(d.text)),
            ("now", .int(now)),
            ("config", .string(configPath)),
            ("config_issues", .int(Int64(configIssues))),
        ])
    }

    private func timeText(_ t: Timestamp?) -> String {
        guard let t else { return tr(cliLanguage, "never") }
        return "\(formatTime(t)) (\(ageText(now - t)))"
    }
}

/// Local time as `2025-11-30 10:18:00 +0100`.
func formatTime(_ t: Timestamp) -> String {
    var seconds = time_t(t)
    var parts = tm()
    guard localtime_r(&seconds, &parts) != nil else { return String(t) }
    var buffer = [CChar](repeating: 0, count: 64)
    let n = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S %z", &parts)
    return n > 0 ? String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self) : String(t)
}

/// "3 h 12 min ago", "in 5 min" (a clock set back).
func ageText(_ seconds: Int64) -> String {
    let s = abs(seconds)
    let text: String
    switch s {
    case ..<60: text = "\(s) s"
    case ..<3600: text = "\(s / 60) min"
    case ..<86400: text = "\(s / 3600) h \(s % 3600 / 60) min"
    default: text = "\(s / 86400) d \(s % 86400 / 3600) h"
    }
    return seconds >= 0 ? text + " ago" : "in " + text
}
