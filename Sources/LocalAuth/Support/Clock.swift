#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock seconds since the epoch, as stored in state files.
public typealias Timestamp = Int64

/// Time as the engine sees it, injected so tests never sleep.
public protocol Clock: AnyObject {
    /// Wall-clock seconds (state timestamps, the 48 h / 156 h / 4 h rules).
    func now() -> Timestamp
}

public final class SystemClock: Clock {
    public init() {}
    public func now() -> Timestamp { Timestamp(time(nil)) }
}

/// Milliseconds on CLOCK_MONOTONIC, for deadlines that must not jump with the wall clock.
public enum MonotonicClock {
    public static func millis() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

/// Nanoseconds on CLOCK_BOOTTIME: never set back and counting suspend, so an order between
/// two events of one boot (a dialog's ticket and a match) holds across a wall-clock change.
public enum BootClock {
    public static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
