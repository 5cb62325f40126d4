#if canImport(Glibc)
import Glibc
#endif

/// Reading `/etc/security/localauth.conf` safely: a regular file owned by root and
/// writable by nobody else, at most `ConfigParser.maxFileSize` bytes. A file that fails
/// these checks is not read, and the configuration is untrusted as a whole
/// (`Options.untrustedConfiguration`): no fingerprint until it is fixed, never the
/// defaults in place of what the file says. The reason is logged.
public enum ConfigFile {
    public static let defaultPath = "/etc/security/localauth.conf"

    public enum Problem: Error, Equatable, CustomStringConvertible, Sendable {
        case missing
        case unsafe(Reason)
        case unreadable(Reason)

        public var description: String { text(.english) }

        /// Why, in `language` (`localauthctl doctor` says it in the user's; logs in English).
        public func text(_ language: Language) -> String {
            switch self {
            case .missing: return tr(language, "not found")
            case .unsafe(let why), .unreadable(let why): return why.text(language)
            }
        }
    }

    /// What is wrong with a file or the drop-in directory, with the path and figures as
    /// they are (never translated).
    public enum Reason: Equatable, Sendable {
        case symlink(String)
        case notRegular(String)
        case notDirectory(String)
        case owner(String, uid: UInt32)
        case writable(String, mode: String, group: Bool, others: Bool)
        case tooLarge(String, limit: Int)
        case notUTF8(String)
        /// An error of the system call, as strerror words it.
        case error(String, String)

        public func text(_ l: Language) -> String {
            switch self {
            case .symlink(let p): return tr(l, "%s is a symlink", p)
            case .notRegular(let p): return tr(l, "%s is not a regular file", p)
            case .notDirectory(let p): return tr(l, "%s is not a directory", p)
            case .owner(let p, let uid): return tr(l, "%s is owned by uid %s, not root", p, uid)
            case .writable(let p, let mode, let group, let others):
                return tr(l, "%s has mode %s: %s", p, mode, ConfigFile.writers(group: group, others: others, l))
            case .tooLarge(let p, let limit): return tr(l, "%s is larger than %s bytes", p, limit)
            case .notUTF8(let p): return tr(l, "%s is not UTF-8", p)
            case .error(let p, let cause): return "\(p): \(cause)"
            }
        }
    }

    /// Who besides root can write a file of `mode`, in words: 0664 is its group, not others.
    static func writers(group: Bool, others: Bool, _ l: Language) -> String {
        switch (group, others) {
        case (true, true): return tr(l, "its group and every user can write it")
        case (true, false): return tr(l, "its group can write it")
        default: return tr(l, "every user can write it")
        }
    }

    static func writable(_ path: String, _ st: stat) -> Reason {
        .writable(path, mode: Posix.modeText(st), group: st.st_mode & 0o020 != 0, others: st.st_mode & 0o002 != 0)
    }

    public static func read(_ path: String) -> Result<String, Problem> {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return .failure(.missing) }
            if errno == ELOOP { return .failure(.unsafe(.symlink(path))) }
            return .failure(.unreadable(.error(path, errnoText(errno))))
        }
        defer { close(fd) }
        guard let st = Posix.fileStat(fd), Posix.isRegular(st) else {
            return .failure(.unsafe(.notRegular(path)))
        }
        guard st.st_uid == 0 else { return .failure(.unsafe(.owner(path, uid: st.st_uid))) }
        guard st.st_mode & 0o022 == 0 else {
            return .failure(.unsafe(writable(path, st)))
        }
        switch Posix.readAll(fd, limit: ConfigParser.maxFileSize) {
        case .failure(let e): return .failure(.unreadable(.error(path, errnoText(e.code))))
        case .success(let bytes):
            guard bytes.count <= ConfigParser.maxFileSize else {
                return .failure(.unsafe(.tooLarge(path, limit: ConfigParser.maxFileSize)))
            }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                return .failure(.unreadable(.notUTF8(path)))
            }
            return .success(text)
        }
    }
}

extension ConfigFile {
    /// The configuration of this installation: /etc/security/localauth.conf for a system
    /// install under /usr, PREFIX/etc/security/localauth.conf for one under another prefix
    /// (`scripts/install --prefix`), told from where the running program is
    /// (PREFIX/bin/localauthctl, PREFIX/libexec/localauth/localauth-helper).
    public static var installedPath: String { path(forExecutable: executablePath()) }

    static func path(forExecutable exe: String?) -> String {
        guard let exe else { return defaultPath }
        var parts = exe.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.suffix(2).first == "bin" {
            parts.removeLast(2)
        } else if parts.suffix(3).prefix(2) == ["libexec", "localauth"] {
            parts.removeLast(3)
        } else {
            return defaultPath
        }
        let prefix = parts.joined(separator: "/")
        return prefix.isEmpty || prefix == "/usr" ? defaultPath : prefix + "/etc/security/localauth.conf"
    }

    private static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The drop-in directory of a config file: `localauth.conf.d` beside it.
    public static func dropInDirectory(_ path: String) -> String { path + ".d" }

    /// The drop-ins to read, in order: `*.conf` files of the directory sorted by name (byte
    /// order), as systemd and faillock's admins expect. A directory that is not root's or
    /// that others can write is refused whole (every file in it could be someone else's).
    public static func dropIns(_ path: String) -> Result<[String], Problem> {
        let dir = dropInDirectory(path)
        var st = stat()
        guard lstat(dir, &st) == 0 else {
            return errno == ENOENT ? .success([]) : .failure(.unreadable(.error(dir, errnoText(errno))))
        }
        guard !Posix.isSymlink(st) else { return .failure(.unsafe(.symlink(dir))) }
        guard Posix.isDirectory(st) else { return .failure(.unsafe(.notDirectory(dir))) }
        guard st.st_uid == 0 else { return .failure(.unsafe(.owner(dir, uid: st.st_uid))) }
        guard st.st_mode & 0o022 == 0 else {
            return .failure(.unsafe(writable(dir, st)))
        }
        guard let handle = opendir(dir) else { return .failure(.unreadable(.error(dir, errnoText(errno)))) }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name.hasSuffix(".conf") && !name.hasPrefix(".") { names.append(name) }
        }
        return .success(names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            .map { dir + "/" + $0 })
    }
}

/// The effective configuration and where each value came from (`localauthctl config`).
public struct ConfigReport: Sendable {
    public var options = Options()
    /// Key → `file:line` or `module arguments`; keys not set anywhere are at their default.
    public var sources: [String: String] = [:]
    /// The files read, in order.
    public var files: [String] = []
    /// Everything worth a log line, with its level.
    public var problems: [(LogLevel, String)] = []
    /// The files (or the drop-in directory) that could not be trusted, with why.
    public var untrusted: [String] = []
}

extension Options {
    /// Defaults, then the config file, then its drop-ins in order, then module arguments.
    /// `allowing` decides which keys the arguments may set (all of them when they come from
    /// root's service files). Every problem is reported; none stops anything.
    public static func resolve(configPath defaultPath: String = ConfigFile.installedPath, arguments: [String] = [],
                               allowingArgument: (String) -> Bool = { _ in true }) -> ConfigReport {
        var report = ConfigReport()
        // A `config=` argument names the file to read instead (the last one wins).
        var chosen = Options()
        chosen.config = defaultPath  // a `config=` that is not allowed leaves the given path
        let configArgs = arguments.filter { $0.hasPrefix("config=") }
        _ = ConfigParser.apply(arguments: configArgs, to: &chosen, allowing: allowingArgument)
        let configPath = configArgs.isEmpty ? defaultPath : chosen.config
        readFile(configPath, into: &report)
        switch ConfigFile.dropIns(configPath) {
        case .success(let files): for file in files { readFile(file, into: &report) }
        case .failure(let problem): untrusted(problem.description, into: &report)
        }
        var sources = report.sources
        let issues = ConfigParser.apply(arguments: arguments, to: &report.options, allowing: allowingArgument,
                                        set: { key, _ in sources[key] = "module arguments" })
        report.sources = sources
        report.problems += issues.map { (.warning, $0.description) }
        report.options.untrustedConfiguration = report.untrusted.first
        return report
    }

    /// A file or directory that cannot be trusted: what it says is unknown, so fingerprint
    /// sign-in is off until it is fixed (Rules.refusal), and the log says why.
    private static func untrusted(_ why: String, into report: inout ConfigReport) {
        report.untrusted.append(why)
        report.problems.append((.error, "\(why): not read; fingerprint sign-in is off until it is fixed "
                                    + "(the password only)"))
    }

    private static func readFile(_ path: String, into report: inout ConfigReport) {
        switch ConfigFile.read(path) {
        case .success(let text):
            report.files.append(path)
            var sources = report.sources
            let issues = ConfigParser.apply(fileText: text, source: path, to: &report.options,
                                            set: { key, line in sources[key] = "\(path):\(line)" })
            report.sources = sources
            report.problems += issues.map { (.warning, $0.description) }
        case .failure(.missing):
            break
        case .failure(let problem):
            untrusted(problem.description, into: &report)
        }
    }

    /// `resolve`, with every problem logged.
    public static func load(configPath: String = ConfigFile.installedPath, arguments: [String] = [],
                            allowingArgument: (String) -> Bool = { _ in true }, log: LogSink) -> Options {
        let report = resolve(configPath: configPath, arguments: arguments, allowingArgument: allowingArgument)
        for (level, line) in report.problems { log.log(level, line) }
        return report.options
    }
}
