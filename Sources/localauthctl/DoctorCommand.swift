#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth

/// `localauthctl doctor [USER]`: checks what fingerprint login needs on this machine, and
/// says for each problem the line to fix.
enum DoctorCommand {
    static let pamDir = Flag("--pam-dir", .value("DIR"), "the PAM service files to read (default /etc/pam.d)")
    static let helper = Flag("--helper", .value("PATH"),
                             "the helper to check (default: beside this program); an earlier "
                             + "version's launcher is looked for in its directory")
    static let module = Flag("--module", .value("PATH"), "the PAM module to check (default: where libpam finds it)")
    static let service = Flag("--service", .value("PATH"),
                              "localauthd's socket to check (default \(DoctorService.defaultSocket), the module's)")

    static let spec = CommandSpec(
        name: "doctor", synopsis: "doctor [USER]",
        summary: "check fprintd, the reader, prints, helper, state, config and PAM lines",
        help: """
        Checks, and for each problem prints the line to fix: fprintd answers and has a
        reader; USER (default: you) has enrolled prints; the module and the helper are
        root's and nobody else can write them (and no earlier version's setuid launcher is
        left); localauthd's socket is
        root's and answers (where systemd runs and the unit is installed, that it is
        there at all); the state directory is
        root's and 0700 (and USER is not locked out); the config file is root's and every
        line parses (file:line for each issue); /etc/pam.d/localauthctl takes the password of
        every password module the other services use; sudo and sudo -i both ask for the finger; and every PAM service that uses
        pam_localauth.so, run as libpam runs it (@include, include, substack, jumps): the
        module line before the password modules (pam_unix, pam_sss, pam_krb5, pam_winbind,
        pam_ldap, pam_systemd_home), no pam_fprintd beside it, and a lockout cleared after
        the password of every module that lets users in: by an `account` line (every
        account), or by the `authsucc` line reached after pam_unix (it checks local
        passwords only); and no line of the module that fails its stack once the module
        is missing (the package removed: "Module is unknown"), the desktops' finger-only
        conversations (gdm-fingerprint, kde-fingerprint) excepted. Where KDE Plasma is
        installed (a `kde` service in /etc/pam.d or /usr/lib/pam.d): whether its lock
        screen's kde-fingerprint is localauth's or the stock pam_fprintd, whether the
        password typed at its lock screen (kde) clears a lockout, and whether SDDM's login
        takes the finger. A fix is printed only when
        it keeps every user getting in as before. Exit 0 when nothing is a problem
        (warnings allowed), 1 when something is. Findings are in your language (LANGUAGE,
        LC_ALL, LC_MESSAGES, LANG). --json prints one object for fleet scripts, the same in
        every language: user, language ("en": its text is English), findings (each with
        severity ok, warning or problem, a stable code such as state.mode, message, and fix
        or null), problems and warnings.
        """,
        flags: Flag.common + [pamDir, helper, module, service, .json], run: run)

    enum Severity: String {
        case ok, warning, problem

        /// The word in the first column, in `l` (--json has the raw value).
        func label(_ l: Language) -> String {
            switch self {
            case .ok: return tr(l, "ok")
            case .warning: return tr(l, "warning")
            case .problem: return tr(l, "problem")
            }
        }
    }

    /// A sentence of doctor's, in whichever language it is printed in: the user's on the
    /// terminal, English in --json (one language for every machine a fleet script reads).
    /// File paths, PAM lines, commands and option names are its arguments, never translated.
    typealias Text = (Language) -> String

    /// The same in every language: a command to run.
    static func verbatim(_ text: String) -> Text { { _ in text } }

    struct Finding {
        let severity: Severity
        /// What the finding is about, for scripts (--json): the same in every language and
        /// release, such as `helper.owner` or `pam.authsucc-not-reached`.
        let code: String
        let message: Text
        var fix: Text?

        init(_ severity: Severity, _ code: String, _ message: @escaping Text, fix: Text? = nil) {
            self.severity = severity
            self.code = code
            self.message = message
            self.fix = fix
        }
    }

    static func run(_ inv: Invocation) -> Int32 {
        let named: String?
        switch inv.userArgument() {
        case .success(let n): named = n
        case .failure(let e): return fail(spec, e)
        }
        let account: Account
        switch targetAccount(named, what: "checking another user") {
        case .success(let a): account = a
        case .failure(let e): return fail(spec, e)
        }
        let configPath = inv.value(.config) ?? ConfigFile.installedPath
        let options: Options
        switch inv.options(log: MemoryLog()) {  // the config's issues are findings below
        case .success(let o): options = o
        case .failure(let e): return fail(spec, e)
        }
        var findings: [Finding] = []
        let helperPath = inv.value(helper) ?? defaultHelperPath()
        findings += fprintd(account, options)
        findings += helperFile(helperPath)
        findings += stateDirectory(options.stateDir, account, options)
        findings += configFile(configPath)
        findings += DoctorInstall(prefix: installPrefix(), moduleOverride: inv.value(module),
                                  helper: helperPath).check()
        findings += DoctorService(socket: inv.value(service) ?? DoctorService.defaultSocket).check()
        findings += DoctorPam(directory: inv.value(pamDir) ?? "/etc/pam.d").check()
        findings += DoctorPlasma(directory: inv.value(pamDir) ?? "/etc/pam.d").check()

        let problems = findings.filter { $0.severity == .problem }.count
        let warnings = findings.filter { $0.severity == .warning }.count
        if inv.has(.json) {
            say(json(account, findings, problems: problems, warnings: warnings).encoded())
            return problems > 0 ? Exit.failed : Exit.ok
        }
        let l = cliLanguage
        let indent = String(repeating: " ", count: 9)
        for f in findings {
            say(padCells(f.severity.label(l), 9) + f.message(l))
            if let fix = f.fix { say(indent + tr(l, "fix: %s", fix(l))) }
        }
        say("doctor: " + trn(l, "%s problem", "%s problems", problems, problems) + ", "
            + trn(l, "%s warning", "%s warnings", warnings, warnings))
        return problems > 0 ? Exit.failed : Exit.ok
    }

    /// The same in every language: codes and severities for scripts, and the text in
    /// English, as `language` says.
    static func json(_ account: Account, _ findings: [Finding], problems: Int, warnings: Int) -> JSON {
        .object([
            ("user", .string(account.name.value)),
            ("language", .string(Language.english.rawValue)),
            ("findings", .array(findings.map { f in
                .object([("severity", .string(f.severity.rawValue)), ("code", .string(f.code)),
                         ("message", .string(f.message(.english))), ("fix", .string(f.fix?(.english)))])
            })),
            ("problems", .int(Int64(problems))),
            ("warnings", .int(Int64(warnings))),
        ])
    }

    // MARK: - fprintd, the reader, the prints

    static func fprintd(_ account: Account, _ options: Options) -> [Finding] {
        let sensor = makeSensor(options, log: ToolLog.shared)
        let user = account.name.value
        do {
            let set = try sensor.enrolledSet(for: user)
            let fingers = set.fingers.joined(separator: ", ")
            return [Finding(.ok, "fprintd.reader", { l in tr(l, "fprintd answers; reader \"%s\"", set.deviceName) }),
                    Finding(.ok, "prints.enrolled", { l in tr(l, "prints of %s: %s", user, fingers) })]
        } catch {
            let present = Finding(.ok, "fprintd.reader", { l in tr(l, "fprintd answers; a reader is present") })
            switch error.code {
            case .biometryNotEnrolled where account.uid == 0:
                // Root signs in with its password; the users are the ones to check.
                return [present,
                        Finding(.ok, "prints.root", { l in
                            tr(l, "no fingerprints enrolled for root (name a user to check theirs: %s)",
                               "localauthctl doctor USER")
                        })]
            case .biometryNotEnrolled:
                return [present,
                        Finding(.problem, "prints.none", { l in tr(l, "no fingerprints enrolled for %s", user) },
                                fix: verbatim("fprintd-enroll -f right-index-finger \(user)"))]
            case _ where error.cause.contains("no fingerprint reader"):
                return [Finding(.ok, "fprintd.answers", { l in tr(l, "fprintd answers") }),
                        Finding(.problem, "fprintd.no-reader", { l in tr(l, "fprintd has no fingerprint reader") },
                                fix: { l in
                                    tr(l, "connect a reader libfprint supports (%s; fprintd's log: %s)", "lsusb",
                                       "journalctl -u fprintd")
                                })]
            default:
                let cause = error.cause
                return [Finding(.problem, "fprintd.unreachable",
                                { l in tr(l, "fprintd is not reachable on %s: %s", options.dbusAddress, cause) },
                                fix: fprintdFix(cause))]
            }
        }
    }

    /// What to do when fprintd does not answer: nothing to install when it is installed.
    static func fprintdFix(_ cause: String) -> Text {
        let paths: [String] = ["/usr/libexec/fprintd", "/usr/lib/fprintd/fprintd"]
        let installed = paths.contains { path in access(path, X_OK) == 0 }
        let start = "systemctl start dbus", install = "apt-get install fprintd", log = "journalctl -u fprintd"
        if cause.contains("system bus") || cause.contains("no bus connection") {
            return installed
                ? { l in tr(l, "start the system bus (%s); fprintd is installed and is started by it on demand", start) }
                : { l in tr(l, "start the system bus (%s), and %s", start, install) }
        }
        return installed
            ? { l in tr(l, "fprintd is installed but did not answer: its log (%s) says why", log) }
            : { l in tr(l, "%s (it is started by D-Bus on demand)", install) }
    }

    /// The fix for a file of the package that is missing.
    static var install: Text { { l in tr(l, "install it (the localauth package, or %s)", "scripts/install") } }
    static var reinstall: Text { { l in tr(l, "reinstall it") } }

    // MARK: - The helper

    /// Beside this program: PREFIX/bin/localauthctl → PREFIX/libexec/localauth/localauth-helper.
    static func defaultHelperPath() -> String {
        installPrefix() + "/libexec/localauth/localauth-helper"
    }

    /// PREFIX of PREFIX/bin/localauthctl ("/usr" when it cannot be told).
    static func installPrefix() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "/usr" }
        let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return exe.split(separator: "/", omittingEmptySubsequences: false).dropLast(2).joined(separator: "/")
    }

    static func helperFile(_ path: String) -> [Finding] {
        guard path.hasPrefix("/") else {
            return [Finding(.problem, "helper.path", { l in tr(l, "helper %s: not an absolute path", path) })]
        }
        var st = stat()
        guard stat(path, &st) == 0 else {
            let why = String(cString: strerror(errno))
            return [Finding(.problem, "helper.missing", { l in tr(l, "helper %s: %s", path, why) }, fix: install)]
        }
        var out: [Finding] = []
        let mode = octal(st.st_mode & 0o7777), bits = st.st_mode & 0o7777, uid = st.st_uid
        if (st.st_mode & S_IFMT) != S_IFREG {
            out.append(Finding(.problem, "helper.not-regular", { l in tr(l, "helper %s: not a regular file", path) },
                               fix: reinstall))
        }
        if uid != 0 {
            out.append(Finding(.problem, "helper.owner",
                               { l in tr(l, "helper %s: owned by uid %s, not root (the module refuses it)", path, uid) },
                               fix: verbatim("chown root:root \(path)")))
        }
        if bits & 0o022 != 0 {
            out.append(Finding(.problem, "helper.writable", { l in
                tr(l, "helper %s: mode %s, writable by group or others (the module refuses it)", path, mode)
            }, fix: verbatim("chmod go-w \(path)")))
        }
        if bits & 0o111 == 0 {
            out.append(Finding(.problem, "helper.not-executable",
                               { l in tr(l, "helper %s: mode %s, not executable", path, mode) },
                               fix: verbatim("chmod 0755 \(path)")))
        } else if bits & 0o001 == 0 {
            out.append(Finding(.warning, "helper.not-executable-by-others", { l in
                tr(l, "helper %s: mode %s, not executable by others (a screen locker running as the user cannot start it)",
                   path, mode)
            }, fix: verbatim("chmod 0755 \(path)")))
        }
        out += parentDirectories(path)
        if out.isEmpty {
            out.append(Finding(.ok, "helper.ok", { l in tr(l, "helper %s: root's, mode %s", path, mode) }))
        }
        return out
    }

    /// Every directory above the helper must be root's and closed to others, or someone
    /// else could put another program in its place.
    static func parentDirectories(_ path: String) -> [Finding] {
        var out: [Finding] = []
        var parts = path.split(separator: "/").map(String.init)
        while !parts.isEmpty {
            parts.removeLast()
            let dir = "/" + parts.joined(separator: "/")
            var st = stat()
            guard stat(dir, &st) == 0 else { continue }
            let bits = st.st_mode & 0o7777, uid = st.st_uid
            if uid != 0 || (bits & 0o022 != 0 && bits & 0o1000 == 0) {
                out.append(Finding(.problem, "helper.directory", { l in
                    tr(l, "directory %s (above the helper) is owned by uid %s, mode %s: someone other than root can replace the helper",
                       dir, uid, octal(bits))
                }, fix: verbatim("chown root:root \(dir); chmod go-w \(dir)")))
            }
        }
        return out
    }

    // MARK: - The state directory

    static func stateDirectory(_ dir: String, _ account: Account, _ options: Options) -> [Finding] {
        let create = verbatim("install -d -m 0700 -o root -g root \(dir)")
        var st = stat()
        guard lstat(dir, &st) == 0 else {
            if errno == ENOENT {
                return [Finding(.warning, "state.missing",
                                { l in tr(l, "state directory %s: missing (created 0700 on first use)", dir) }, fix: create)]
            }
            let why = String(cString: strerror(errno))
            return [Finding(.problem, "state.unreadable", { l in tr(l, "state directory %s: %s", dir, why) })]
        }
        let bits = st.st_mode & 0o7777, mode = octal(bits), uid = st.st_uid
        if (st.st_mode & S_IFMT) == S_IFLNK {
            return [Finding(.problem, "state.symlink", { l in tr(l, "state directory %s: a symbolic link (refused)", dir) },
                            fix: verbatim("rm \(dir); install -d -m 0700 -o root -g root \(dir)"))]
        }
        if (st.st_mode & S_IFMT) != S_IFDIR {
            return [Finding(.problem, "state.not-directory", { l in tr(l, "state directory %s: not a directory", dir) })]
        }
        var out: [Finding] = []
        if uid != 0 {
            out.append(Finding(.problem, "state.owner", { l in
                tr(l, "state directory %s: owned by uid %s, not root (the helper refuses it: every fingerprint login falls back to the password)",
                   dir, uid)
            }, fix: verbatim("chown root:root \(dir)")))
        }
        if bits & 0o077 != 0 {
            out.append(Finding(.problem, "state.mode", { l in
                tr(l, "state directory %s: mode %s, expected 0700 (the helper refuses it: every fingerprint login falls back to the password)",
                   dir, mode)
            }, fix: verbatim("chmod 0700 \(dir)")))
        }
        guard out.isEmpty else { return out }
        out.append(Finding(.ok, "state.ok", { l in tr(l, "state directory %s: root's, mode %s", dir, mode) }))
        guard callerIsRoot else { return out }
        let rules = Rules(options)
        let name = account.name.value, reset = "localauthctl reset \(account.name)"
        switch try? FileStateStore(directory: dir).load(account.name) {
        case .damaged(let cause)?:
            out.append(Finding(.problem, "state.damaged", { l in tr(l, "state of %s cannot be trusted: %s", name, cause) },
                               fix: { l in tr(l, "the user's password rewrites it; or %s", reset) }))
        case .state(let s)? where rules.isLockedOut(s):
            out.append(Finding(.warning, "state.locked-out", { l in
                tr(l, "%s is %s", name, ruleText(.failedAttempts(rules.lockoutThreshold), rules.figures,
                                                 failures: s.consecutiveFailures, in: l))
            }, fix: { l in tr(l, "the user's password clears it; or %s", reset) }))
        default:
            break
        }
        return out
    }

    // MARK: - The configuration file

    /// The file and every drop-in after it.
    static func configFile(_ path: String) -> [Finding] {
        var out = configFileAlone(path)
        switch ConfigFile.dropIns(path) {
        case .success(let files): for file in files { out += configFileAlone(file) }
        case .failure(let problem):
            let dir = ConfigFile.dropInDirectory(path)
            out.append(Finding(.problem, "config.drop-ins-untrusted", untrusted(problem),
                               fix: ConfigRepair(path: dir, directory: true).fix()))
        }
        return out
    }

    /// What the module does while a file cannot be trusted (Options.untrustedConfiguration).
    static func untrusted(_ problem: ConfigFile.Problem) -> Text {
        { l in
            tr(l, "config %s: not read, and fingerprint sign-in is off until it is fixed (the password only)",
               problem.text(l))
        }
    }

    static func configFileAlone(_ path: String) -> [Finding] {
        switch ConfigFile.read(path) {
        case .failure(.missing):
            return [Finding(.ok, "config.missing", { l in tr(l, "config %s: not present, every option at its default", path) })]
        case .failure(let problem):
            guard case .unsafe = problem else { return [Finding(.problem, "config.unreadable", untrusted(problem))] }
            return [Finding(.problem, "config.untrusted", untrusted(problem),
                            fix: ConfigRepair(path: path, directory: false).fix())]
        case .success(let text):
            var scratch = Options()
            let issues = ConfigParser.apply(fileText: text, source: path, to: &scratch)
            if issues.isEmpty {
                return [Finding(.ok, "config.ok", { l in tr(l, "config %s: every line parses", path) })]
            }
            return issues.map { issue in
                Finding(.problem, "config.line", { l in issue.located(l) }, fix: { l in
                    tr(l, "edit line %s of %s (localauth.conf(5)); meanwhile the line is skipped and the option keeps the value it had before it",
                       issue.line, path)
                })
            }
        }
    }

    // MARK: - PAM service files

    /// The service files of `dir`, sorted; backups and package leftovers skipped.
    static func directoryEntries(_ dir: String) -> [String]? {
        guard let handle = opendir(dir) else { return nil }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name.hasPrefix(".") || name.hasSuffix("~") || name.contains(".dpkg-") || name.contains(".ucf-") {
                continue
            }
            names.append(name)
        }
        return names.sorted()
    }

    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
