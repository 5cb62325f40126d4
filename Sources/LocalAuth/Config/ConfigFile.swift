#if canImport(Glibc)
import Glibc
#endif

/// Reading `/etc/security/localauth.conf` safely: a regular file owned by root and
/// writable by nobody else, at most `ConfigParser.maxFileSize` bytes. A file that fails
/// these checks is ignored whole (the defaults apply) and the reason is logged.
public enum ConfigFile {
    public static let defaultPath = "/etc/security/localauth.conf"

    public enum Problem: Error, Equatable, CustomStringConvertible, Sendable {
        case missing
        case unsafe(String)
        case unreadable(String)

        public var description: String {
            switch self {
            case .missing: return "not found"
            case .unsafe(let why), .unreadable(let why): return why
            }
        }
    }

    public static func read(_ path: String) -> Result<String, Problem> {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return .failure(.missing) }
            if errno == ELOOP { return .failure(.unsafe("\(path) is a symlink")) }
            return .failure(.unreadable("\(path): \(errnoText(errno))"))
        }
        defer { close(fd) }
        guard let st = Posix.fileStat(fd), Posix.isRegular(st) else {
            return .failure(.unsafe("\(path) is not a regular file"))
        }
        guard st.st_uid == 0 else { return .failure(.unsafe("\(path) is owned by uid \(st.st_uid), not root")) }
        guard st.st_mode & 0o022 == 0 else {
            return .failure(.unsafe("\(path) has mode \(Posix.modeText(st)): writable by others"))
        }
        switch Posix.readAll(fd, limit: ConfigParser.maxFileSize) {
        case .failure(let e): return .failure(.unreadable("\(path): \(errnoText(e.code))"))
        case .success(let bytes):
            guard bytes.count <= ConfigParser.maxFileSize else {
                return .failure(.unsafe("\(path) is larger than \(ConfigParser.maxFileSize) bytes"))
            }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                return .failure(.unreadable("\(path) is not UTF-8"))
            }
            return .success(text)
        }
    }
}

extension Options {
    /// Defaults, then the config file, then module arguments. `allowing` decides which keys
    /// the arguments may set (all of them when they come from root's service files).
    /// Every problem is logged; none stops anything.
    public static func load(configPath defaultPath: String = ConfigFile.defaultPath, arguments: [String] = [],
                            allowingArgument: (String) -> Bool = { _ in true }, log: LogSink) -> Options {
        var o = Options()
        // A `config=` argument names the file to read instead (the last one wins).
        var chosen = Options()
        chosen.config = defaultPath  // a `config=` that is not allowed leaves the given path
        let configArgs = arguments.filter { $0.hasPrefix("config=") }
        _ = ConfigParser.apply(arguments: configArgs, to: &chosen, allowing: allowingArgument)
        let configPath = configArgs.isEmpty ? defaultPath : chosen.config
        switch ConfigFile.read(configPath) {
        case .success(let text):
            for issue in ConfigParser.apply(fileText: text, source: configPath, to: &o) {
                log.log(.warning, issue.description)
            }
        case .failure(.missing):
            break
        case .failure(let problem):
            log.log(.error, "configuration ignored, defaults used: \(problem)")
        }
        for issue in ConfigParser.apply(arguments: arguments, to: &o, allowing: allowingArgument) {
            log.log(.warning, issue.description)
        }
        return o
    }
}
