#if canImport(Glibc)
import Glibc
#endif

/// `doctor`'s look at the PAM service files: every service whose auth stack uses the module,
/// run as libpam would (PamWalk) for each way it can go — the finger matched, every password
/// refused, the password of each password module accepted — with a fix for each problem
/// that is itself checked the same way, so that no advice locks out a class of users.
struct DoctorPam {
    typealias Finding = DoctorCommand.Finding

    let directory: String

    func check() -> [Finding] {
        guard let names = DoctorCommand.directoryEntries(directory) else {
            return [Finding(severity: .problem,
                            message: "PAM directory \(directory): \(String(cString: strerror(errno)))", fix: nil)]
        }
        var reader = PamStackReader(directory: directory)
        var out: [Finding] = []
        var users: [String] = []
        // Services whose stacks are the same lines (say, everything in common-auth) are
        // checked once, and the finding names them all.
        var groups: [(key: String, subject: String, rules: [PamRule], account: Bool, services: [String])] = []
        // Debian's common-* files are pieces that services include, never services; the
        // module steps aside in localauthctl's own password check (localauthctlService).
        for name in names where !name.hasPrefix("common-") && name != "localauthctl" {
            guard let rules = reader.authStack(name), rules.contains(where: { $0.isLocalauth }) else { continue }
            users.append(name)
            let account = accountLineRuns(reader.stack(name, type: "account") ?? [])
            let subject = subjectFile(directory + "/" + name, rules)
            let key = subject + "\u{0}" + rules.map { "\($0.location) \($0.text)" }.joined(separator: "\n")
                + (account ? "+account" : "")
            if let i = groups.firstIndex(where: { $0.key == key }) {
                groups[i].services.append(name)
            } else {
                groups.append((key, subject, rules, account, [name]))
            }
        }
        for g in groups {
            out += ServiceCheck(service: g.subject, rules: g.rules, accountClears: g.account,
                                usedBy: g.services).findings()
        }
        for (location, name) in reader.missing {
            out.append(Finding(severity: .warning, message: "\(location): included file \(name) not found", fix: nil))
        }
        out += coverage(users, names)
        if users.isEmpty {
            out.append(Finding(severity: .warning, message: "no service in \(directory) uses pam_localauth.so",
                               fix: "add `auth sufficient pam_localauth.so` before `@include common-auth` and "
                                   + "`auth optional pam_localauth.so authsucc` after it (pam_localauth(8)), or "
                                   + "pam-auth-update --enable localauth localauth-authsucc"))
        }
        out += PamControlCheck(directory: directory, names: names).findings()
        out += localauthctlService(names, users: users)
        out += fprintdProfile(&reader)
        return out
    }

    /// libpam-fprintd's pam-auth-update profile conflicts with ours (`Conflicts: fprintd`):
    /// enabling ours after pam-auth-update's "Incompatible PAM profiles" screen leaves
    /// libpam-fprintd's off without a word. Said, so nobody wonders where pam_fprintd went.
    private func fprintdProfile(_ reader: inout PamStackReader) -> [Finding] {
        guard access(DoctorPam.fprintdProfilePath, F_OK) == 0,
              let common = reader.authStack("common-auth"),
              common.contains(where: { $0.isFirstLine }),
              !common.contains(where: { $0.moduleName == "pam_fprintd.so" }) else { return [] }
        return [Finding(severity: .ok,
                        message: "libpam-fprintd's pam-auth-update profile is off: it conflicts with localauth's, and "
                            + "pam-auth-update left it out when localauth's were enabled (pam_fprintd no longer "
                            + "asks for the finger in common-auth; `pam-auth-update --enable fprintd` would take "
                            + "localauth's lines out)")]
    }

    static let fprintdProfilePath = "/usr/share/pam-configs/fprintd"

    /// An `account` line of ours that runs when the account is fine (every module succeeds).
    private func accountLineRuns(_ rules: [PamRule]) -> Bool {
        let run = PamWalk.run(rules) { _ in "success" }
        return run.ran.contains { rules[$0].isLocalauth }
    }

    /// The file a finding is about: an included file (common-auth) when the whole auth
    /// stack is that file's, else the service file. Our lines all in common-auth are not
    /// enough: a problem with a line of the service's own (a password module above the
    /// include) is the service file's to fix, and its line numbers are the service's.
    private func subjectFile(_ service: String, _ rules: [PamRule]) -> String {
        let files = Set(rules.map(\.file))
        if files.count == 1, let only = files.first { return only }
        return service
    }

    /// sudo and Debian's `sudo -i` service: when one asks for the finger, so should the other.
    private func coverage(_ users: [String], _ names: [String]) -> [Finding] {
        guard !users.isEmpty else { return [] }
        var out: [Finding] = []
        for (service, what) in [("sudo", "sudo"), ("sudo-i", "sudo -i")] where names.contains(service) {
            if users.contains(service) {
                out.append(Finding(severity: .ok, message: "\(what) asks for the finger (\(directory)/\(service))"))
            } else {
                out.append(Finding(severity: .warning,
                                   message: "\(what) asks for the password only: \(directory)/\(service) does not use "
                                       + "pam_localauth.so",
                                   fix: "in \(directory)/\(service), " + DoctorPam.exampleLines
                                       + ", or pam-auth-update --enable localauth localauth-authsucc"))
            }
        }
        return out
    }

    /// The lines to add to a service, from the shipped example (never from another service
    /// file of this machine, which may be anything: a test's, with test-only arguments).
    static let exampleLines = "add `auth sufficient pam_localauth.so` before `@include common-auth`, "
        + "`auth optional pam_localauth.so authsucc` after it and `account optional pam_localauth.so` after "
        + "`@include common-account`, as in the shipped example (/usr/share/doc/localauth/examples/pam.d/sudo, "
        + "pam_localauth(8))"

    /// The service `enable` and `disable` check passwords with: it must take the password
    /// of every user who signs in by password elsewhere, directory users included (the
    /// module steps aside in it, so `@include common-auth` is right).
    private func localauthctlService(_ names: [String], users: [String]) -> [Finding] {
        let path = directory + "/localauthctl"
        let shipped = "`@include common-auth` in \(path), as the package ships it (pam_localauth.so steps aside there)"
        guard names.contains("localauthctl") else {
            return [Finding(severity: .warning,
                            message: "\(path) is missing: localauthctl enable and disable check the password "
                                + "with the `other` service (on Debian it refuses everything)",
                            fix: shipped)]
        }
        var reader = PamStackReader(directory: directory)
        let own = Set((reader.authStack("localauthctl") ?? []).filter(\.isPasswordModule).map(\.moduleName))
        guard !own.isEmpty else {
            return [Finding(severity: .warning, message: "\(path): no password module in its auth stack", fix: shipped)]
        }
        // The password modules that let users in through the services that use the module.
        var elsewhere: [String: String] = [:]
        for service in users {
            for rule in reader.authStack(service) ?? [] where rule.isPasswordModule && elsewhere[rule.moduleName] == nil {
                elsewhere[rule.moduleName] = service
            }
        }
        let missing = elsewhere.keys.filter { !own.contains($0) }.sorted()
        guard missing.isEmpty else {
            let who = missing.map { "\($0) (\(elsewhere[$0]!))" }.joined(separator: ", ")
            return [Finding(severity: .warning,
                            message: "\(path) checks the password with \(own.sorted().joined(separator: ", ")) only: "
                                + "users of \(who) cannot pass `localauthctl enable` or `disable` when it asks for "
                                + "their password",
                            fix: shipped)]
        }
        return [Finding(severity: .ok,
                        message: "\(path): checks the password with \(own.sorted().joined(separator: ", "))")]
    }
}

/// The findings for one auth stack.
struct ServiceCheck {
    typealias Finding = DoctorCommand.Finding

    let service: String
    let rules: [PamRule]
    /// An `account` line of ours clears the lockout after the whole auth stack succeeded.
    let accountClears: Bool
    let usedBy: [String]

    private var s: PamScenarios { PamScenarios(rules: rules) }

    func findings() -> [Finding] {
        var out: [Finding] = []
        let firsts = rules.indices.filter { rules[$0].isFirstLine }
        guard let first = firsts.first else {
            let succ = rules.indices.first { rules[$0].isAuthsucc }!
            out.append(problem("\(show(succ)) without the module line: it never acts",
                               fix: "add `auth sufficient pam_localauth.so` to \(service)"
                                   + (s.passwords.first.map { " above \(top($0))" } ?? " before the password module")))
            return out
        }
        if firsts.count > 1 {
            out.append(Finding(severity: .warning,
                               message: "\(subject): pam_localauth.so runs twice: \(show(firsts[0])) and \(show(firsts[1]))",
                               fix: "keep one of them (the service's own lines or the pam-auth-update profile)"))
        }
        out += fprintd()
        out += moduleLine(first)
        guard !s.passwords.isEmpty else {
            out.append(Finding(severity: .warning, message: "\(subject): no password module in the auth stack",
                               fix: nil))
            return out
        }
        out += passwordOrder(first)
        out += authsucc(first)
        out += directoryLogin()
        if !out.contains(where: { $0.severity != .ok }) {
            out.append(Finding(severity: .ok, message: soundText(first)))
        }
        return out
    }

    // MARK: - The module line

    private func moduleLine(_ first: Int) -> [Finding] {
        let control = rules[first].control
        if [control.action(for: "authinfo_unavail"), control.action(for: "auth_err")]
            .contains(where: { $0 == .bad || $0 == .die }) {
            return [problem("\(show(first)) is `\(control.text)`: a fingerprint that fails or is unavailable "
                            + "denies the login, the password cannot follow",
                            fix: "use `auth sufficient pam_localauth.so` at \(service) \(top(first))")]
        }
        let matched = s.fingerMatched()
        let after = matched.ran.filter { $0 > first }
        if let p = after.first(where: { rules[$0].isPasswordModule }) {
            return [Finding(severity: .warning,
                            message: "\(subject): \(show(first)) is `\(control.text)`: a matched finger does "
                                + "not end the stack\(whyNotEnded(first)), \(rules[p].moduleName) asks for the "
                                + "password anyway",
                            fix: controlFix(first))]
        }
        if !matched.succeeded {
            let end = matched.endedAt.map { " (the stack ends at \(show($0)))" } ?? ""
            return [problem("\(show(first)) is `\(control.text)`: a matched finger is refused\(end)",
                            fix: controlFix(first))]
        }
        return []
    }

    /// `sufficient` already ends the stack on a match, except inside a substack (its `done`
    /// ends only the substack): saying "use `sufficient`" to such a line changes nothing.
    private func endsTheStack(_ i: Int) -> Bool { rules[i].control.action(for: "success") == .done }

    private func whyNotEnded(_ i: Int) -> String {
        endsTheStack(i) && rules[i].level > 0 ? " (it is in a substack, whose `done` ends only the substack)" : ""
    }

    private func controlFix(_ i: Int) -> String? {
        guard endsTheStack(i) else { return "use `auth sufficient pam_localauth.so` at \(service) \(top(i))" }
        guard rules[i].level > 0 else { return nil }  // the finding says where the stack ends
        return "move \(rules[i].location) `\(rules[i].text)` out of the substack: `auth sufficient pam_localauth.so` "
            + "in \(service) itself, above \(top(i))"
    }

    /// The module line must come before the password modules that prompt.
    private func passwordOrder(_ first: Int) -> [Finding] {
        var out: [Finding] = []
        for p in s.passwords where p < first && !rules[p].neverPrompts {
            let message = "\(show(first)) comes after the password module, \(show(p)): "
            if rules[p].moduleName == "pam_unix.so" {
                out.append(problem(message + "the password is asked before the finger",
                                   fix: "in \(service), move \(top(first)) above \(top(p))"))
            } else {
                out.append(Finding(severity: .warning,
                                   message: "\(subject): " + message + "users of \(rules[p].moduleName) are asked "
                                       + "for the password before the finger",
                                   fix: "in \(service), move \(top(first)) above \(top(p))"))
            }
        }
        return out
    }

    // MARK: - The authsucc line

    /// Who gets a lockout cleared by their password. The account line (the account phase,
    /// reached only after the whole auth stack succeeded) clears it for accounts without a
    /// local hash (SSSD, Kerberos): libpam drops PAM_AUTHTOK when pam_authenticate returns,
    /// so there it has no password to check a local account's against. The `authsucc` auth
    /// line checks the typed password against the local account itself, so it clears only
    /// for pam_unix's users, and only where a good password reaches it (a wrong one reaching
    /// it is refused there, no longer a hole): they need it, account line or not.
    private func authsucc(_ first: Int) -> [Finding] {
        // pam-auth-update's lines: its second profile puts the account line in common-account.
        let accountFix = rules[first].file.hasSuffix("/common-auth")
            ? "pam-auth-update --enable localauth localauth-authsucc, and `@include common-account` in "
                + "each service (its account line clears a lockout for accounts without a local hash)"
            : "add `account optional pam_localauth.so` to \(service) (the account phase runs after "
                + "the whole auth stack succeeded: it clears a lockout for accounts without a local hash)"
        let succs = s.authsuccs
        let firstPassword = s.passwords[0]
        let letIn = s.modulesThatLetIn()
        let localIn = s.passwords.filter { rules[$0].isLocalPassword && letIn.contains($0) }
        let otherIn = s.passwords.filter { !rules[$0].isLocalPassword && letIn.contains($0) }
        // No single edit that keeps everyone in and every failure counted: no fix at all,
        // rather than one that is not reached either, or skips what counts.
        let localFix = StackRepair(service: service, rules: rules).best()
            ?? "by hand, as pam_localauth(8) EXAMPLES shows: no change of one line keeps every user getting in "
                + "and every module that counts or logs failures reached"
        if succs.isEmpty {
            if accountClears && localIn.isEmpty { return [] }
            let managed = rules[first].file.hasSuffix("/common-auth")  // pam-auth-update's lines
            let fixes = (localIn.isEmpty ? [] : [localFix]) + (accountClears || otherIn.isEmpty ? [] : [accountFix])
            let why = accountClears
                ? "no `authsucc` line, and the account line cannot check a local password (libpam drops "
                    + "PAM_AUTHTOK when pam_authenticate returns)"
                : "no `authsucc` line and no `account` line"
            return [problem("no line clears a fingerprint lockout after the password module, "
                            + "\(show(firstPassword)): \(why)",
                            fix: managed ? "pam-auth-update --enable localauth localauth-authsucc"
                                         : fixes.isEmpty ? nil : fixes.joined(separator: "; and "))]
        }
        var out: [Finding] = []
        for p in s.authsuccFaults().missedBy where rules[p].isLocalPassword {
            let succ = succs.first { $0 > p } ?? succs[0]
            let end = s.passwordAccepted(by: p).endedAt.map { " (the stack ends at \(show($0)))" } ?? ""
            let reason = s.passwords.count > 1 ? " accepted by \(rules[p].moduleName)" : ""
            out.append(problem("\(show(succ)) is not reached after a successful password\(reason)\(end)",
                               fix: localFix))
        }
        for p in otherIn where !accountClears {
            out.append(problem("a password accepted by \(rules[p].moduleName) (\(show(p))) never clears a "
                               + "fingerprint lockout: the `authsucc` line can check local passwords only",
                               fix: accountFix))
        }
        return out
    }

    // MARK: - Directory services at a login

    /// Services that start a session: what pam_sss, pam_krb5 and pam_winbind do at a
    /// password login (a Kerberos ticket, cached offline credentials refreshed) is what a
    /// fingerprint login goes without.
    static let logins: Set<String> = ["login", "gdm-password", "gdm-fingerprint", "lightdm", "sddm", "greetd",
                                      "xdm", "lxdm", "slim"]

    private func directoryLogin() -> [Finding] {
        let who = usedBy.filter { ServiceCheck.logins.contains($0) }
        guard !who.isEmpty else { return [] }
        let matched = Set(s.fingerMatched().ran)
        let skipped = s.passwords.filter {
            ["pam_sss.so", "pam_krb5.so", "pam_winbind.so"].contains(rules[$0].moduleName) && !matched.contains($0)
                && s.passwordAccepted(by: $0).succeeded
        }
        guard let d = skipped.first else { return [] }
        return [Finding(severity: .warning,
                        message: "\(subject): a fingerprint login (\(who.joined(separator: ", "))) skips "
                            + "\(rules[d].moduleName), which at a password login gets the Kerberos ticket and refreshes "
                            + "the cached offline credentials: that session has no ticket (kinit, or the password at "
                            + "the next login)",
                        fix: nil)]
    }

    // MARK: - pam_fprintd beside us

    private func fprintd() -> [Finding] {
        guard let i = rules.indices.first(where: { rules[$0].moduleName == "pam_fprintd.so" }) else { return [] }
        return [problem("\(show(i)) scans the finger too: users are asked for it twice, and a match there "
                        + "skips localauth's lockout and rules",
                        fix: rules[i].file.hasSuffix("/common-auth")
                            ? "pam-auth-update --disable fprintd" : "remove \(rules[i].location)")]
    }

    // MARK: - Wording

    private var subject: String {
        usedBy.count > 1 || !service.hasSuffix("/" + (usedBy.first ?? ""))
            ? "\(service) (used by \(usedBy.joined(separator: ", ")))" : service
    }

    private func soundText(_ first: Int) -> String {
        let passwords = s.passwords.map { "\(rules[$0].moduleName) \(rules[$0].location)" }.joined(separator: ", ")
        var clear: String
        if let succ = s.authsuccs.first {
            clear = s.authsuccFaults().afterFailure == nil
                ? "authsucc \(rules[succ].location), reached only after the password succeeded"
                : "authsucc \(rules[succ].location), reached after the password (it checks the password itself)"
        } else {
            clear = "the account line clears a lockout after the password (no local password here)"
        }
        if accountClears && !s.authsuccs.isEmpty { clear += "; the account line clears it for accounts without a local hash" }
        return "\(subject): module line \(rules[first].location), password \(passwords), \(clear)"
    }

    private func problem(_ message: String, fix: String?) -> Finding {
        Finding(severity: .problem, message: "\(subject): \(message)", fix: fix)
    }

    func show(_ i: Int) -> String {
        let r = rules[i]
        if r.file == service { return "line \(r.line) `\(r.text)`" }
        return "\(r.location) `\(r.text)` (via line \(r.top.line) `\(r.top.text)`)"
    }

    /// The service's own line to edit for rule `i`.
    func top(_ i: Int) -> String { "line \(rules[i].file == service ? rules[i].line : rules[i].top.line)" }
}

/// Finds the smallest edit that clears lockouts right — the `authsucc` line reached after
/// every password that lets a user in and after no refused one — and keeps every class of
/// users (each password module, a matched finger) getting in as before. Each candidate is
/// run through the same scenarios; advice that would lock anyone out is never given.
struct StackRepair {
    let service: String
    let rules: [PamRule]

    func best() -> String? {
        for (text, candidate) in candidates() where acceptable(candidate) { return text }
        return nil
    }

    private func candidates() -> [(String, [PamRule])] {
        var out: [(String, [PamRule])] = []
        let passwords = rules.indices.filter { rules[$0].isPasswordModule }
        for p in passwords where rules[p].control.text != "requisite" {
            var changed = rules
            changed[p].control = .requisite
            out.append(("make \(rules[p].location) `requisite` instead of `\(rules[p].control.text)`", changed))
        }
        let withoutSucc = rules.filter { !$0.isAuthsucc }
        let had = rules.first { $0.isAuthsucc }
        // The line always answers PAM_AUTHINFO_UNAVAIL: one whose control counts that as a
        // failure is moved written `optional`, or the move would refuse every password.
        let rewrite = had.map { [.bad, .die].contains($0.control.action(for: "authinfo_unavail")) } ?? true
        for (line, index) in insertionPoints(withoutSucc) {
            var moved = withoutSucc
            moved.insert(authsuccRule(after: line, as: rewrite ? nil : had), at: index)
            let text: String
            if let had {
                text = "move \(had.location) `\(had.text)` to \(service) after line \(line)"
                    + (rewrite ? ", written `auth optional pam_localauth.so authsucc`" : "")
            } else {
                text = "add `auth optional pam_localauth.so authsucc` to \(service) after line \(line)"
            }
            out.append((text, moved))
        }
        return out
    }

    /// After each line of the service file itself: the index just past its last rule.
    private func insertionPoints(_ rules: [PamRule]) -> [(Int, Int)] {
        var points: [(Int, Int)] = []
        for (i, r) in rules.enumerated() {
            guard let line = r.file == service ? r.line : (r.top.file == service ? r.top.line : nil) else { continue }
            if let last = points.last, last.0 == line { points[points.count - 1].1 = i + 1 }
            else { points.append((line, i + 1)) }
        }
        return points
    }

    /// The line `as` (the stack's own `authsucc` line, as written), or the shipped one, in
    /// the service file after `line`.
    private func authsuccRule(after line: Int, as written: PamRule?) -> PamRule {
        let text = written?.text ?? "auth optional pam_localauth.so authsucc"
        return PamRule(file: service, line: line, control: written?.control ?? PamControl.parse("optional")!,
                       module: written?.module ?? "pam_localauth.so", arguments: written?.arguments ?? ["authsucc"],
                       text: text, top: (service, line, text), level: 0)
    }

    private func acceptable(_ candidate: [PamRule]) -> Bool {
        let before = PamScenarios(rules: rules)
        let after = PamScenarios(rules: candidate)
        let faults = after.authsuccFaults()
        guard !faults.missedBy.contains(where: { candidate[$0].isLocalPassword }) else { return false }
        // Every password module that let its users in still does (by where it is written).
        let letIn = Set(before.modulesThatLetIn().map { rules[$0].location })
        let stillIn = Set(after.modulesThatLetIn().map { candidate[$0].location })
        guard letIn.isSubset(of: stillIn) else { return false }
        if before.fingerMatched().succeeded && !after.fingerMatched().succeeded { return false }
        // Every module that counts, logs or records an outcome still runs where it ran:
        // making pam_unix `requisite` ends the stack before pam_faillock's `authfail`, and
        // failed passwords would no longer count (nor, after a good one, `authsucc` reset
        // the count).
        let runs: [(PamScenarios) -> PamWalk.Run] = [{ $0.everyPasswordFails() }, { $0.fingerMatched() }]
            + before.passwords.map { p in { $0.passwordAccepted(byLocation: self.rules[p].location) } }
        for scenario in runs where !keeps(scenario(before), in: rules, scenario(after), in: candidate) {
            return false
        }
        return true
    }

    /// Whether every line that records (StackRepair.records) and ran in `old` runs in `new`.
    private func keeps(_ old: PamWalk.Run, in oldRules: [PamRule], _ new: PamWalk.Run, in newRules: [PamRule]) -> Bool {
        let ranAfter = Set(new.ran.filter { !newRules[$0].isLocalauth }.map { newRules[$0].location })
        return old.ran.allSatisfy { !StackRepair.records(oldRules[$0]) || ranAfter.contains(oldRules[$0].location) }
    }

    /// Lines whose running matters in itself: everything but the password modules, ours,
    /// and the lines that only decide (pam_deny, pam_permit). pam_faillock, pam_tally2,
    /// pam_warn, pam_exec and whatever a site added to count or log are kept reached.
    static func records(_ rule: PamRule) -> Bool {
        !rule.isPasswordModule && !rule.isLocalauth && !["pam_deny.so", "pam_permit.so"].contains(rule.moduleName)
    }
}
