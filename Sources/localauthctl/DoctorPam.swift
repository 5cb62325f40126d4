#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// `doctor`'s look at the PAM service files: every service whose auth stack uses the module,
/// run as libpam would (PamWalk) for each way it can go — the finger matched, every password
/// refused, the password of each password module accepted — with a fix for each problem
/// that is itself checked the same way, so that no advice locks out a class of users.
struct DoctorPam {
    typealias Finding = DoctorCommand.Finding

    let directory: String

    func check() -> [Finding] {
        let directory = self.directory
        guard let names = DoctorCommand.directoryEntries(directory) else {
            let why = String(cString: strerror(errno))
            return [Finding(.problem, "pam.directory", { l in tr(l, "PAM directory %s: %s", directory, why) })]
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
            out.append(Finding(.warning, "pam.include-missing", { l in tr(l, "%s: included file %s not found", location, name) }))
        }
        out += coverage(users, names)
        if users.isEmpty {
            out.append(Finding(.warning, "pam.unused", { l in tr(l, "no service in %s uses pam_localauth.so", directory) },
                               fix: { l in
                                   tr(l, "add %s before %s and %s after it (pam_localauth(8)), or %s",
                                      "`auth sufficient pam_localauth.so`", "`@include common-auth`",
                                      "`auth optional pam_localauth.so authsucc`", DoctorPam.enableProfiles)
                               }))
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
        return [Finding(.ok, "pam.fprintd-profile-off", { l in
            tr(l, "libpam-fprintd's pam-auth-update profile is off: it conflicts with localauth's, and pam-auth-update left it out when localauth's were enabled (pam_fprintd no longer asks for the finger in common-auth; %s would take localauth's lines out)",
               "`pam-auth-update --enable fprintd`")
        })]
    }

    static let fprintdProfilePath = "/usr/share/pam-configs/fprintd"

    /// The command that enables both of the package's pam-auth-update profiles.
    static let enableProfiles = "pam-auth-update --enable localauth localauth-authsucc"

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
            let path = directory + "/" + service
            if users.contains(service) {
                out.append(Finding(.ok, "pam.sudo-finger", { l in tr(l, "%s asks for the finger (%s)", what, path) }))
            } else {
                out.append(Finding(.warning, "pam.sudo-password-only", { l in
                    tr(l, "%s asks for the password only: %s does not use pam_localauth.so", what, path)
                }, fix: { l in tr(l, "in %s, %s, or %s", path, DoctorPam.exampleLines(l), DoctorPam.enableProfiles) }))
            }
        }
        return out
    }

    /// The lines to add to a service, from the shipped example (never from another service
    /// file of this machine, which may be anything: a test's, with test-only arguments).
    static func exampleLines(_ l: Language) -> String {
        tr(l, "add %s before %s, %s after it and %s after %s, as in the shipped example (%s, pam_localauth(8))",
           "`auth sufficient pam_localauth.so`", "`@include common-auth`", "`auth optional pam_localauth.so authsucc`",
           "`account optional pam_localauth.so`", "`@include common-account`",
           "/usr/share/doc/localauth/examples/pam.d/sudo")
    }

    /// The service `enable` and `disable` check passwords with: it must take the password
    /// of every user who signs in by password elsewhere, directory users included (the
    /// module steps aside in it, so `@include common-auth` is right).
    private func localauthctlService(_ names: [String], users: [String]) -> [Finding] {
        let path = directory + "/localauthctl"
        let shipped: DoctorCommand.Text = { l in
            tr(l, "%s in %s, as the package ships it (pam_localauth.so steps aside there)", "`@include common-auth`", path)
        }
        guard names.contains("localauthctl") else {
            return [Finding(.warning, "pam.localauthctl-missing", { l in
                tr(l, "%s is missing: localauthctl enable and disable check the password with the `other` service (on Debian it refuses everything)",
                   path)
            }, fix: shipped)]
        }
        var reader = PamStackReader(directory: directory)
        let own = Set((reader.authStack("localauthctl") ?? []).filter(\.isPasswordModule).map(\.moduleName))
        guard !own.isEmpty else {
            return [Finding(.warning, "pam.localauthctl-no-password",
                            { l in tr(l, "%s: no password module in its auth stack", path) }, fix: shipped)]
        }
        // The password modules that let users in through the services that use the module.
        var elsewhere: [String: String] = [:]
        for service in users {
            for rule in reader.authStack(service) ?? [] where rule.isPasswordModule && elsewhere[rule.moduleName] == nil {
                elsewhere[rule.moduleName] = service
            }
        }
        let missing = elsewhere.keys.filter { !own.contains($0) }.sorted()
        let modules = own.sorted().joined(separator: ", ")
        guard missing.isEmpty else {
            let who = missing.map { "\($0) (\(elsewhere[$0]!))" }.joined(separator: ", ")
            return [Finding(.warning, "pam.localauthctl-local-only", { l in
                tr(l, "%s checks the password with %s only: users of %s cannot pass `localauthctl enable` or `disable` when it asks for their password",
                   path, modules, who)
            }, fix: shipped)]
        }
        return [Finding(.ok, "pam.localauthctl-ok", { l in tr(l, "%s: checks the password with %s", path, modules) })]
    }
}

/// The findings for one auth stack.
struct ServiceCheck {
    typealias Finding = DoctorCommand.Finding
    typealias Text = DoctorCommand.Text

    let service: String
    let rules: [PamRule]
    /// An `account` line of ours clears the lockout after the whole auth stack succeeded.
    let accountClears: Bool
    let usedBy: [String]

    private var s: PamScenarios { PamScenarios(rules: rules) }

    /// The line that belongs in a service, as the shipped examples write it.
    static let moduleLineText = "`auth sufficient pam_localauth.so`"

    func findings() -> [Finding] {
        var out: [Finding] = []
        let firsts = rules.indices.filter { rules[$0].isFirstLine }
        guard let first = firsts.first else {
            let succ = rules.indices.first { rules[$0].isAuthsucc }!
            let service = self.service, password = s.passwords.first
            out.append(problem("pam.authsucc-alone", { l in tr(l, "%s without the module line: it never acts", show(succ, l)) },
                               fix: { l in
                                   password.map { tr(l, "add %s to %s above %s", ServiceCheck.moduleLineText, service, top($0, l)) }
                                       ?? tr(l, "add %s to %s before the password module", ServiceCheck.moduleLineText, service)
                               }))
            return out
        }
        if fingerOnly(first) {
            return [Finding(.ok, "pam.finger-only", { l in
                tr(l, "%s: the finger only (%s): its failure fails this conversation, and the password is asked in another",
                   subject(l), show(first, l))
            })]
        }
        if firsts.count > 1 {
            out.append(Finding(.warning, "pam.module-line-twice", { l in
                tr(l, "%s: pam_localauth.so runs twice: %s and %s", subject(l), show(firsts[0], l), show(firsts[1], l))
            }, fix: { l in tr(l, "keep one of them (the service's own lines or the pam-auth-update profile)") }))
        }
        out += fprintd()
        out += moduleLine(first)
        guard !s.passwords.isEmpty else {
            out.append(Finding(.warning, "pam.no-password-module",
                               { l in tr(l, "%s: no password module in the auth stack", subject(l)) }))
            return out
        }
        out += passwordOrder(first)
        out += authsucc(first)
        out += directoryLogin()
        if !out.contains(where: { $0.severity != .ok }) {
            out.append(Finding(.ok, "pam.sound", { l in soundText(first, l) }))
        }
        return out
    }

    /// The desktops' finger conversations, run beside their password's (GDM's, Plasma's lock
    /// screen's): no password module, and a module line whose failure fails the stack. Their
    /// failing costs nobody a sign-in; `sufficient` there would let the stack succeed on the
    /// lines around it, so the module line's usual advice does not apply.
    static let fingerConversations: Set<String> = ["gdm-fingerprint", "kde-fingerprint"]

    private func fingerOnly(_ first: Int) -> Bool {
        guard s.passwords.isEmpty, !usedBy.isEmpty else { return false }
        let fails = [rules[first].control.action(for: "authinfo_unavail"), rules[first].control.action(for: "auth_err")]
            .allSatisfy { $0 == .bad || $0 == .die }
        return fails && (usedBy.allSatisfy(ServiceCheck.fingerConversations.contains)
                         || rules[first].arguments.contains("policy=biometrics"))
    }

    // MARK: - The module line

    private func moduleLine(_ first: Int) -> [Finding] {
        let control = rules[first].control.text
        if [rules[first].control.action(for: "authinfo_unavail"), rules[first].control.action(for: "auth_err")]
            .contains(where: { $0 == .bad || $0 == .die }) {
            return [problem("pam.module-line-denies", { l in
                tr(l, "%s is `%s`: a fingerprint that fails or is unavailable denies the login, the password cannot follow",
                   show(first, l), control)
            }, fix: useSufficient(first))]
        }
        let matched = s.fingerMatched()
        let after = matched.ran.filter { $0 > first }
        if let p = after.first(where: { rules[$0].isPasswordModule }) {
            let module = rules[p].moduleName, inSubstack = endsTheStack(first) && rules[first].level > 0
            return [Finding(.warning, "pam.finger-does-not-end-stack", { l in
                inSubstack
                    ? tr(l, "%s: %s is `%s`: a matched finger does not end the stack (it is in a substack, whose `done` ends only the substack), %s asks for the password anyway",
                         subject(l), show(first, l), control, module)
                    : tr(l, "%s: %s is `%s`: a matched finger does not end the stack, %s asks for the password anyway",
                         subject(l), show(first, l), control, module)
            }, fix: controlFix(first))]
        }
        if !matched.succeeded {
            let end = matched.endedAt
            return [problem("pam.finger-refused", { l in
                end.map { tr(l, "%s is `%s`: a matched finger is refused (the stack ends at %s)", show(first, l), control,
                             show($0, l)) }
                    ?? tr(l, "%s is `%s`: a matched finger is refused", show(first, l), control)
            }, fix: controlFix(first))]
        }
        return []
    }

    /// `sufficient` already ends the stack on a match, except inside a substack (its `done`
    /// ends only the substack): saying "use `sufficient`" to such a line changes nothing.
    private func endsTheStack(_ i: Int) -> Bool { rules[i].control.action(for: "success") == .done }

    private func useSufficient(_ i: Int) -> Text {
        let service = self.service
        return { l in tr(l, "use %1$s at %2$s %3$s", ServiceCheck.moduleLineText, service, top(i, l)) }
    }

    private func controlFix(_ i: Int) -> Text? {
        guard endsTheStack(i) else { return useSufficient(i) }
        guard rules[i].level > 0 else { return nil }  // the finding says where the stack ends
        let rule = rules[i], service = self.service
        return { l in
            tr(l, "move %s `%s` out of the substack: %s in %s itself, above %s", rule.location, rule.text,
               ServiceCheck.moduleLineText, service, top(i, l))
        }
    }

    /// The module line must come before the password modules that prompt.
    private func passwordOrder(_ first: Int) -> [Finding] {
        var out: [Finding] = []
        let service = self.service
        for p in s.passwords where p < first && !rules[p].neverPrompts {
            let fix: Text = { l in tr(l, "in %s, move %s above %s", service, top(first, l), top(p, l)) }
            if rules[p].moduleName == "pam_unix.so" {
                out.append(problem("pam.password-before-finger", { l in
                    tr(l, "%s comes after the password module, %s: the password is asked before the finger",
                       show(first, l), show(p, l))
                }, fix: fix))
            } else {
                let module = rules[p].moduleName
                out.append(Finding(.warning, "pam.password-before-finger", { l in
                    tr(l, "%s: %s comes after the password module, %s: users of %s are asked for the password before the finger",
                       subject(l), show(first, l), show(p, l), module)
                }, fix: fix))
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
        let managed = rules[first].file.hasSuffix("/common-auth")
        let service = self.service
        let accountFix: Text = managed
            ? { l in
                tr(l, "%s, and %s in each service (its account line clears a lockout for accounts without a local hash)",
                   DoctorPam.enableProfiles, "`@include common-account`")
            }
            : { l in
                tr(l, "add %s to %s (the account phase runs after the whole auth stack succeeded: it clears a lockout for accounts without a local hash)",
                   "`account optional pam_localauth.so`", service)
            }
        let succs = s.authsuccs
        let firstPassword = s.passwords[0]
        let letIn = s.modulesThatLetIn()
        let localIn = s.passwords.filter { rules[$0].isLocalPassword && letIn.contains($0) }
        let otherIn = s.passwords.filter { !rules[$0].isLocalPassword && letIn.contains($0) }
        // No single edit that keeps everyone in and every failure counted: no fix at all,
        // rather than one that is not reached either, or skips what counts.
        let localFix: Text = StackRepair(service: service, rules: rules).best() ?? { l in
            tr(l, "by hand, as pam_localauth(8) EXAMPLES shows: no change of one line keeps every user getting in and every module that counts or logs failures reached")
        }
        if succs.isEmpty {
            if accountClears && localIn.isEmpty { return [] }
            let fixes = (localIn.isEmpty ? [] : [localFix]) + (accountClears || otherIn.isEmpty ? [] : [accountFix])
            let accountClears = self.accountClears
            let fix: Text? = managed ? DoctorCommand.verbatim(DoctorPam.enableProfiles)
                : fixes.count == 2 ? { l in tr(l, "%s; and %s", fixes[0](l), fixes[1](l)) } : fixes.first
            return [problem("pam.no-lockout-clear", { l in
                accountClears
                    ? tr(l, "no line clears a fingerprint lockout after the password module, %s: no `authsucc` line, and the account line cannot check a local password (libpam drops PAM_AUTHTOK when pam_authenticate returns)",
                         show(firstPassword, l))
                    : tr(l, "no line clears a fingerprint lockout after the password module, %s: no `authsucc` line and no `account` line",
                         show(firstPassword, l))
            }, fix: fix)]
        }
        var out: [Finding] = []
        for p in s.authsuccFaults().missedBy where rules[p].isLocalPassword {
            let succ = succs.first { $0 > p } ?? succs[0]
            let end = s.passwordAccepted(by: p).endedAt
            let module = s.passwords.count > 1 ? rules[p].moduleName : nil
            out.append(problem("pam.authsucc-not-reached", { l in
                switch (module, end) {
                case (nil, nil):
                    return tr(l, "%s is not reached after a successful password", show(succ, l))
                case (nil, let end?):
                    return tr(l, "%s is not reached after a successful password (the stack ends at %s)", show(succ, l),
                              show(end, l))
                case (let module?, nil):
                    return tr(l, "%s is not reached after a successful password accepted by %s", show(succ, l), module)
                case (let module?, let end?):
                    return tr(l, "%s is not reached after a successful password accepted by %s (the stack ends at %s)",
                              show(succ, l), module, show(end, l))
                }
            }, fix: localFix))
        }
        for p in otherIn where !accountClears {
            let module = rules[p].moduleName
            out.append(problem("pam.lockout-not-cleared-for-module", { l in
                tr(l, "a password accepted by %s (%s) never clears a fingerprint lockout: the `authsucc` line can check local passwords only",
                   module, show(p, l))
            }, fix: accountFix))
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
        let module = rules[d].moduleName, logins = who.joined(separator: ", ")
        return [Finding(.warning, "pam.finger-login-skips-directory", { l in
            tr(l, "%s: a fingerprint login (%s) skips %s, which at a password login gets the Kerberos ticket and refreshes the cached offline credentials: that session has no ticket (%s, or the password at the next login)",
               subject(l), logins, module, "kinit")
        })]
    }

    // MARK: - pam_fprintd beside us

    private func fprintd() -> [Finding] {
        guard let i = rules.indices.first(where: { rules[$0].moduleName == "pam_fprintd.so" }) else { return [] }
        let location = rules[i].location
        return [problem("pam.fprintd-beside", { l in
            tr(l, "%s scans the finger too: users are asked for it twice, and a match there skips localauth's lockout and rules",
               show(i, l))
        }, fix: rules[i].file.hasSuffix("/common-auth")
            ? DoctorCommand.verbatim("pam-auth-update --disable fprintd") : { l in tr(l, "remove %s", location) })]
    }

    // MARK: - Wording

    private func subject(_ l: Language) -> String {
        usedBy.count > 1 || !service.hasSuffix("/" + (usedBy.first ?? ""))
            ? tr(l, "%s (used by %s)", service, usedBy.joined(separator: ", ")) : service
    }

    private func soundText(_ first: Int, _ l: Language) -> String {
        let passwords = s.passwords.map { "\(rules[$0].moduleName) \(rules[$0].location)" }.joined(separator: ", ")
        var clear: String
        if let succ = s.authsuccs.first {
            clear = s.authsuccFaults().afterFailure == nil
                ? tr(l, "authsucc %s, reached only after the password succeeded", rules[succ].location)
                : tr(l, "authsucc %s, reached after the password (it checks the password itself)", rules[succ].location)
        } else {
            clear = tr(l, "the account line clears a lockout after the password (no local password here)")
        }
        if accountClears && !s.authsuccs.isEmpty {
            clear = tr(l, "%s; the account line clears it for accounts without a local hash", clear)
        }
        return tr(l, "%s: module line %s, password %s, %s", subject(l), rules[first].location, passwords, clear)
    }

    /// A problem of this stack, said after its subject.
    private func problem(_ code: String, _ message: @escaping Text, fix: Text?) -> Finding {
        Finding(.problem, code, { l in tr(l, "%s: %s", subject(l), message(l)) }, fix: fix)
    }

    func show(_ i: Int, _ l: Language) -> String {
        let r = rules[i]
        if r.file == service { return tr(l, "line %s `%s`", r.line, r.text) }
        return tr(l, "%s `%s` (via line %s `%s`)", r.location, r.text, r.top.line, r.top.text)
    }

    /// The service's own line to edit for rule `i`.
    func top(_ i: Int, _ l: Language) -> String {
        tr(l, "line %s", rules[i].file == service ? rules[i].line : rules[i].top.line)
    }
}

/// Finds the smallest edit that clears lockouts right — the `authsucc` line reached after
/// every password that lets a user in and after no refused one — and keeps every class of
/// users (each password module, a matched finger) getting in as before. Each candidate is
/// run through the same scenarios; advice that would lock anyone out is never given.
struct StackRepair {
    let service: String
    let rules: [PamRule]

    func best() -> DoctorCommand.Text? {
        for (text, candidate) in candidates() where acceptable(candidate) { return text }
        return nil
    }

    private func candidates() -> [(DoctorCommand.Text, [PamRule])] {
        var out: [(DoctorCommand.Text, [PamRule])] = []
        let passwords = rules.indices.filter { rules[$0].isPasswordModule }
        let service = self.service
        for p in passwords where rules[p].control.text != "requisite" {
            var changed = rules
            changed[p].control = .requisite
            let location = rules[p].location, control = rules[p].control.text
            out.append(({ l in tr(l, "make %s `requisite` instead of `%s`", location, control) }, changed))
        }
        let withoutSucc = rules.filter { !$0.isAuthsucc }
        let had = rules.first { $0.isAuthsucc }
        // The line always answers PAM_AUTHINFO_UNAVAIL: one whose control counts that as a
        // failure is moved written `optional`, or the move would refuse every password.
        let rewrite = had.map { [.bad, .die].contains($0.control.action(for: "authinfo_unavail")) } ?? true
        for (line, index) in insertionPoints(withoutSucc) {
            var moved = withoutSucc
            moved.insert(authsuccRule(after: line, as: rewrite ? nil : had), at: index)
            let shipped = "`auth optional pam_localauth.so authsucc`"
            let text: DoctorCommand.Text
            if let had {
                text = rewrite
                    ? { l in tr(l, "move %s `%s` to %s after line %s, written %s", had.location, had.text, service, line, shipped) }
                    : { l in tr(l, "move %s `%s` to %s after line %s", had.location, had.text, service, line) }
            } else {
                text = { l in tr(l, "add %s to %s after line %s", shipped, service, line) }
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
