#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The service's lines about what a caller did wrong (a connection over its limit, empty
/// or malformed, too slow, too many helper starts, a remote host named by a peer that is
/// not root), at most one per uid and kind per interval: the first is written at once with
/// its details, the others counted and said in one line when the interval ends
/// ("uid 1000: 312 connections closed in the last 10 s: …"). Any uid can cause these as
/// fast as it can connect; one line each would flood the journal (journald drops a
/// service's lines past its rate limit, the service's own important lines among them).
struct QuietLog {
    struct Key: Hashable {
        let uid: uid_t
        let kind: String
    }

    struct Window {
        let level: LogLevel
        let opened: Int64
        var more: Int
    }

    static let intervalMillis: Int64 = 10_000

    private var windows: [Key: Window] = [:]

    /// `kind` names what happened in a count's line ("connections closed: no request");
    /// `first` is the line written when no window of the uid and kind is open.
    mutating func note(_ level: LogLevel, uid: uid_t, kind: String, first: @autoclosure () -> String,
                       log: LogSink, now: Int64 = MonotonicClock.millis()) {
        let key = Key(uid: uid, kind: kind)
        if var window = windows[key] {
            window.more += 1
            windows[key] = window
            return
        }
        windows[key] = Window(level: level, opened: now, more: 0)
        log.log(level, first())
    }

    /// When the first open window ends (the loop's wait is bounded by it); nil when none.
    var nextDeadline: Int64? {
        windows.values.map { $0.opened + Self.intervalMillis }.min()
    }

    /// Closes the windows that ended, with one line for each that counted more.
    mutating func flush(log: LogSink, now: Int64 = MonotonicClock.millis()) {
        for (key, window) in windows where now - window.opened >= Self.intervalMillis {
            windows[key] = nil
            if window.more > 0 {
                log.log(window.level, "uid \(key.uid): \(window.more) more \(key.kind) in the last \(Self.intervalMillis / 1000) s")
            }
        }
    }
}
