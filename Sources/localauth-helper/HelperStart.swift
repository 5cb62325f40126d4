import LocalAuth

/// When this helper started, on CLOCK_BOOTTIME: under localauthd, right after its
/// connection was accepted, so a right's grant written before it was written before the
/// connection too (RightsMode.isThisProcess). Read first thing in main.swift, so the value
/// is the start and not the first use.
enum HelperStart {
    static let bootNanos = BootClock.nanos()
}
