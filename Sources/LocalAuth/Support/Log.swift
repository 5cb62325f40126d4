#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// Where log lines go. The helper sends them to syslog (auth facility); tests collect them.
public protocol LogSink: AnyObject {
    func log(_ level: LogLevel, _ message: String)
}

public enum LogLevel: Int, Comparable, Sendable {
    case debug, info, notice, warning, error

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    var syslogPriority: Int32 {
        switch self {
        case .debug: return LOG_DEBUG
        case .info: return LOG_INFO
        case .notice: return LOG_NOTICE
        case .warning: return LOG_WARNING
        case .error: return LOG_ERR
        }
    }
}

/// syslog(3) with the auth facility, as PAM modules and their helpers log.
public final class SyslogSink: LogSink, Sendable {
    private let minimum: LogLevel

    public init(ident: String, minimum: LogLevel = .info) {
        self.minimum = minimum
        // openlog keeps the pointer: give it storage that lives as long as the process.
        let stored = strdup(ident)
        openlog(stored, LOG_PID, LOG_AUTHPRIV)
    }

    public func log(_ level: LogLevel, _ message: String) {
        guard level >= minimum else { return }
        message.withCString { text in
            syslogText(level.syslogPriority, text)
        }
    }
}

/// Collects lines in memory (tests, and `localauthctl` which prints them).
public final class MemoryLog: LogSink {
    public private(set) var lines: [(LogLevel, String)] = []
    public init() {}
    public func log(_ level: LogLevel, _ message: String) { lines.append((level, message)) }
    public func contains(_ text: String) -> Bool { lines.contains { $0.1.includes(text) } }
}

/// syslog is variadic: a C shim calls it with a fixed "%s" format (withVaList's boxing cast
/// every argument at run time, a tenth of a millisecond at the first line).
private func syslogText(_ priority: Int32, _ text: UnsafePointer<CChar>) {
    la_syslog_text(priority, text)
}
