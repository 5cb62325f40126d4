import Testing
@testable import SystemBus

/// DropTally: dropped signals said at most once per interval, each line with the count since
/// the one before (NameOwner.sent).
@Suite struct DropTallyTests {
    let interval = DropTally.intervalMicros

    @Test func theFirstDropIsSaidAtOnce() {
        var tally = DropTally()
        #expect(tally.note(now: 5) == 1)
    }

    @Test func aFloodWithinTheIntervalIsOneLine() {
        var tally = DropTally()
        #expect(tally.note(now: 0) == 1)
        for t in stride(from: Int64(1), to: interval, by: Int(interval / 1000)) {
            #expect(tally.note(now: t) == nil)
        }
    }

    @Test func theNextLineCountsEverythingSinceTheLastOne() {
        var tally = DropTally()
        _ = tally.note(now: 0)
        for i in 1...41 { _ = tally.note(now: Int64(i)) }
        // The 41 held back and this one.
        #expect(tally.note(now: interval) == 42)
        #expect(tally.note(now: interval + 1) == nil)
        #expect(tally.note(now: 2 * interval) == 2)
    }
}
