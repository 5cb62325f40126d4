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

/// A moment on CLOCK_BOOTTIME with the boot it belongs to: two of one boot are ordered
/// whatever the wall clock did between them (state files: rule 5's records).
public struct BootStamp: Equatable, Sendable {
    public var bootID: String
    public var millis: Int64

    public init(bootID: String, millis: Int64) {
        self.bootID = bootID
        self.millis = millis
    }

    /// Now, in the boot `bootID` (nil: no boot id, no stamp).
    public static func now(bootID: String?) -> BootStamp? {
        bootID.map { BootStamp(bootID: $0, millis: Int64(BootClock.nanos() / 1_000_000)) }
    }

    /// `ID MILLIS`, as the state file stores it.
    public var text: String { "\(bootID) \(millis)" }

    public init?(text: String) {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let ms = Int64(parts[1]), ms >= 0 else { return nil }
        self.init(bootID: String(parts[0]), millis: ms)
    }
}
