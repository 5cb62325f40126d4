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
                             "the helper to check (default: beside this program); the launcher "
                             + "is looked for in its directory")
    static let module = Flag("--module", .value("PATH"), "the PAM module to check (default: where libpam finds it)")

    static let spec = CommandSpec(
        name: "doctor", synopsis: "doctor [USER]",
        summary: "check fprintd, the reader, prints, helper, state, config and PAM lines",
        help: """
        Checks, and for each problem prints the line to fix: fprintd answers and has a
        reader; USER (default: you) has enrolled prints; the module, the helper and the
        setuid launcher are root's and nobody else can write them; the state directory is
        root's and 0700 (and USER is not locked out); the config file is root's and every
        line parses (file:line for each issue); /etc/pam.d/localauthctl takes the password of
        every password module the other services use; sudo and sudo -i both ask for the finger; and every PAM service that uses
        pam_localauth.so, run as libpam runs it (@include, include, substack, jumps): the
        module line before the password modules (pam_unix, pam_sss, pam_krb5, pam_winbind,
        pam_ldap, pam_systemd_home), no pam_fprintd beside it, and a lockout cleared after
        the password of every module that lets users in: by an `account` line (every
        account), or by the `authsucc` line reached after pam_unix (it checks local
        passwords only); and no line of the module that fails its stack once the module
        is missing (the package removed: "Module is unknown"). A fix is printed only when
        it keeps every user getting in as before. Exit 0 when nothing is a problem
        (warnings allowed), 1 when something is. --json prints one object for fleet
        scripts: user, findings (each with severity ok, warning or problem, message, and
        fix or null), problems and warnings.
        """,
        flags: Flag.common + [pamDir, helper, module, .json], run: run)

    enum Severity: String { case ok, warning, problem }

    struct Finding {
        let severity: Severity
        let message: String
        var fix: String?
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
        findings += DoctorPam(directory: inv.value(pamDir) ?? "/etc/pam.d").check()

        let problems = findings.filter { $0.severity == .problem }.count
        let warnings = findings.filter { $0.severity == .warning }.count
        if inv.has(.json) {
            say(JSON.object([
                ("user", .string(account.name.value)),
                ("findings", .array(findings.map { f in
                    .object([("severity", .string(f.severity.rawValue)), ("message", .string(f.message)),
                             ("fix", .string(f.fix))])
                })),
                ("problems", .int(Int64(problems))),
                ("warnings", .int(Int64(warnings))),
            ]).encoded())
            return problems > 0 ? Exit.failed : Exit.ok
        }
        for f in findings {
            say(f.severity.rawValue.padding(9) + f.message)
            if let fix = f.fix { say(String(repeating: " ", count: 9) + "fix: " + fix) }
        }
        say("doctor: " + trn(cliLanguage, "%s problem", "%s problems", problems, problems) + ", "
            + trn(cliLanguage, "%s warning", "%s warnings", warnings, warnings))
        return problems > 0 ? Exit.failed : Exit.ok
    }

    // MARK: - fprintd, the reader, the prints

    static func fprintd(_ account: Account, _ options: Options) -> [Finding] {
        let sensor = makeSensor(options, log: ToolLog.shared)
        let user = account.name.value
        do {
            let set = try sensor.enrolledSet(for: user)
            return [Finding(severity: .ok, message: "fprintd answers; reader \"\(set.deviceName)\""),
                    Finding(severity: .ok, message: "prints of \(user): \(set.fingers.joined(separator: ", "))")]
        } catch {
            switch error.code {
            case .biometryNotEnrolled where account.uid == 0:
                // Root signs in with its password; the users are the ones to check.
                return [Finding(severity: .ok, message: "fprintd answers; a reader is present"),
                        Finding(severity: .ok, message: "no fingerprints enrolled for root (name a user to "
                                    + "check theirs: localauthctl doctor USER)")]
            case .biometryNotEnrolled:
                return [Finding(severity: .ok, message: "fprintd answers; a reader is present"),
                        Finding(severity: .problem, message: "no fingerprints enrolled for \(user)",
                                fix: "fprintd-enroll -f right-index-finger \(user)")]
            case _ where error.cause.contains("no fingerprint reader"):
                return [Finding(severity: .ok, message: "fprintd answers"),
                        Finding(severity: .problem, message: "fprintd has no fingerprint reader",
                                fix: "connect a reader libfprint supports (lsusb; fprintd's log: journalctl -u fprintd)")]
            default:
                return [Finding(severity: .problem,
                                message: "fprintd is not reachable on \(options.dbusAddress): \(error.cause)",
                                fix: fprintdFix(error.cause))]
            }
        }
    }

    /// What to do when fprintd does not answer: nothing to install when it is installed.
    static func fprintdFix(_ cause: String) -> String {
        let paths: [String] = ["/usr/libexec/fprintd", "/usr/lib/fprintd/fprintd"]
        let installed = paths.contains { path in access(path, X_OK) == 0 }
        if cause.contains("system bus") || cause.contains("no bus connection") {
            return "start the system bus (systemctl start dbus)"
                + (installed ? "; fprintd is installed and is started by it on demand" : ", and apt-get install fprintd")
        }
        return installed
            ? "fprintd is installed but did not answer: its log (journalctl -u fprintd) says why"
            : "apt-get install fprintd (it is started by D-Bus on demand)"
    }

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
        let what = "helper \(path)"
        guard path.hasPrefix("/") else {
            return [Finding(severity: .problem, message: "\(what): not an absolute path", fix: nil)]
        }
        var st = stat()
        guard stat(path, &st) == 0 else {
            return [Finding(severity: .problem, message: "\(what): \(String(cString: strerror(errno)))",
                            fix: "install it (the localauth package, or scripts/install)")]
        }
        var out: [Finding] = []
        let mode = st.st_mode & 0o7777
        if (st.st_mode & S_IFMT) != S_IFREG {
            out.append(Finding(severity: .problem, message: "\(what): not a regular file", fix: "reinstall it"))
        }
        if st.st_uid != 0 {
            out.append(Finding(severity: .problem,
                               message: "\(what): owned by uid \(st.st_uid), not root (the module refuses it)",
                               fix: "chown root:root \(path)"))
        }
        if mode & 0o022 != 0 {
            out.append(Finding(severity: .problem,
                               message: "\(what): mode \(octal(mode)), writable by group or others (the module refuses it)",
                               fix: "chmod go-w \(path)"))
        }
        if mode & 0o111 == 0 {
            out.append(Finding(severity: .problem, message: "\(what): mode \(octal(mode)), not executable",
                               fix: "chmod 0755 \(path)"))
        } else if mode & 0o001 == 0 {
            out.append(Finding(severity: .warning,
                               message: "\(what): mode \(octal(mode)), not executable by others "
                                   + "(a screen locker running as the user cannot start it)",
                               fix: "chmod 0755 \(path)"))
        }
        out += parentDirectories(path)
        if out.isEmpty {
            out.append(Finding(severity: .ok, message: "\(what): root's, mode \(octal(mode))"))
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
            let mode = st.st_mode & 0o7777
            if st.st_uid != 0 || (mode & 0o022 != 0 && mode & 0o1000 == 0) {
                out.append(Finding(severity: .problem,
                                   message: "directory \(dir) (above the helper) is owned by uid \(st.st_uid), "
                                       + "mode \(octal(mode)): someone other than root can replace the helper",
                                   fix: "chown root:root \(dir); chmod go-w \(dir)"))
            }
        }
        return out
    }

    // MARK: - The state directory

    static func stateDirectory(_ dir: String, _ account: Account, _ options: Options) -> [Finding] {
        let what = "state directory \(dir)"
        var st = stat()
        guard lstat(dir, &st) == 0 else {
            if errno == ENOENT {
                return [Finding(severity: .warning, message: "\(what): missing (created 0700 on first use)",
                                fix: "install -d -m 0700 -o root -g root \(dir)")]
            }
            return [Finding(severity: .problem, message: "\(what): \(String(cString: strerror(errno)))",
                            fix: nil)]
        }
        let mode = st.st_mode & 0o7777
        if (st.st_mode & S_IFMT) == S_IFLNK {
            return [Finding(severity: .problem, message: "\(what): a symbolic link (refused)",
                            fix: "rm \(dir); install -d -m 0700 -o root -g root \(dir)")]
        }
        if (st.st_mode & S_IFMT) != S_IFDIR {
            return [Finding(severity: .problem, message: "\(what): not a directory", fix: nil)]
        }
        var out: [Finding] = []
        if st.st_uid != 0 {
            out.append(Finding(severity: .problem,
                               message: "\(what): owned by uid \(st.st_uid), not root (the helper refuses it: "
                                   + "every fingerprint login falls back to the password)",
                               fix: "chown root:root \(dir)"))
        }
        if mode & 0o077 != 0 {
            out.append(Finding(severity: .problem,
                               message: "\(what): mode \(octal(mode)), expected 0700 (the helper refuses it: "
                                   + "every fingerprint login falls back to the password)",
                               fix: "chmod 0700 \(dir)"))
        }
        guard out.isEmpty else { return out }
        out.append(Finding(severity: .ok, message: "\(what): root's, mode \(octal(mode))"))
        guard callerIsRoot else { return out }
        let rules = Rules(options)
        switch try? FileStateStore(directory: dir).load(account.name) {
        case .damaged(let cause)?:
            out.append(Finding(severity: .problem, message: "state of \(account.name) cannot be trusted: \(cause)",
                               fix: "the user's password rewrites it; or localauthctl reset \(account.name)"))
        case .state(let s)? where rules.isLockedOut(s):
            out.append(Finding(severity: .warning,
                               message: "\(account.name) is " + ruleText(.failedAttempts(rules.lockoutThreshold),
                                                                         rules.figures, failures: s.consecutiveFailures),
                               fix: "the user's password clears it; or localauthctl reset \(account.name)"))
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
            out.append(Finding(severity: .problem, message: "config \(problem): \(untrustedEffect)",
                               fix: ConfigRepair(path: dir, directory: true).fix()))
        }
        return out
    }

    /// What the module does while a file cannot be trusted (Options.untrustedConfiguration).
    static let untrustedEffect = "not read, and fingerprint sign-in is off until it is fixed (the password only)"

    static func configFileAlone(_ path: String) -> [Finding] {
        switch ConfigFile.read(path) {
        case .failure(.missing):
            return [Finding(severity: .ok, message: "config \(path): not present, every option at its default")]
        case .failure(.unsafe(let why)):
            return [Finding(severity: .problem, message: "config \(why.text(.english)): \(untrustedEffect)",
                            fix: ConfigRepair(path: path, directory: false).fix())]
        case .failure(.unreadable(let why)):
            return [Finding(severity: .problem, message: "config \(why.text(.english)): \(untrustedEffect)", fix: nil)]
        case .success(let text):
            var scratch = Options()
            let issues = ConfigParser.apply(fileText: text, source: path, to: &scratch)
            if issues.isEmpty {
                return [Finding(severity: .ok, message: "config \(path): every line parses")]
            }
            return issues.map {
                Finding(severity: .problem, message: $0.description,
                        fix: "edit line \($0.line) of \(path) (localauth.conf(5)); meanwhile the line is skipped "
                            + "and the option keeps the value it had before it")
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
