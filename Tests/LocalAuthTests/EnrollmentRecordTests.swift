#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// The enrolled set's record localauthd answers preflights from: kept whole, used only
/// while fprintd's storage is unchanged and the reading young, never trusted when damaged.
@Suite struct EnrollmentRecordTests {
    let dir = TempDir()
    var store: FileStateStore { FileStateStore(directory: dir.path + "/state") }
    let alice = try! UserName("alice")
    let set = EnrolledSet(deviceIdentity: "virtual_image/0", deviceName: "Virtual image device",
                          fingers: ["right-index-finger", "left-thumb"], printMaterial: [1, 2, 3], scanType: .swipe)

    @Test func aRecordRoundTrips() {
        for record in [EnrollmentRecord(set: set, storage: "0:1:2.3:4.5", readAt: 42, bootID: "b"),
                       EnrollmentRecord(set: nil, storage: "0:missing:2", readAt: 7, bootID: "b")] {
            #expect(EnrollmentRecord.decode(record.encoded()) == record)
        }
    }

    @Test func damagedRecordsAreNothing() {
        let good = String(decoding: EnrollmentRecord(set: set, storage: "s", readAt: 1, bootID: "b").encoded(), as: UTF8.self)
        for bad in ["", "version=2\n", good.replacingFirst("fingers=", "fingers=,"), good + "read_at=2\n",
                    good.replacingFirst("scan_type=swipe", "scan_type=tap"), good.replacingFirst("read_at=1", "read_at=x")] {
            #expect(EnrollmentRecord.decode(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    @Test func aRecordIsCurrentOnlyInItsBootWhileYoung() {
        let record = EnrollmentRecord(set: set, storage: "s1", readAt: 1_000, bootID: "b")
        #expect(record.isCurrent(at: 1_000 + EnrollmentRecord.maxAgeNanos, bootID: "b"))
        #expect(!record.isCurrent(at: 1_001 + EnrollmentRecord.maxAgeNanos, bootID: "b"))
        #expect(!record.isCurrent(at: 1_000, bootID: "c"))
        #expect(!record.isCurrent(at: 999, bootID: "b"))
    }

    @Test func theStampChangesWithEveryPrintWrittenOrRemoved() throws {
        let prints = dir.path + "/fprint"
        let device = prints + "/alice/virtual_image/0"
        for p in [prints, prints + "/alice", prints + "/alice/virtual_image", device] { mkdir(p, 0o700) }
        func matches(_ stamp: String) -> Bool { StorageStamp.stillMatches(stamp, fprintDir: prints, user: "alice") }
        let empty = StorageStamp.of(fprintDir: prints, user: "alice")
        #expect(matches(empty))
        #expect(empty.split(separator: "\n").count == 3)   // the user's, the driver's and the device's
        try StoreFixtures.write(device + "/7", "print")
        #expect(!matches(empty))
        let one = StorageStamp.of(fprintDir: prints, user: "alice")
        #expect(matches(one))
        // Re-enrolled: a new file renamed over the old one.
        try StoreFixtures.write(device + "/.7.tmp", "print again")
        rename(device + "/.7.tmp", device + "/7")
        #expect(!matches(one))
        let again = StorageStamp.of(fprintDir: prints, user: "alice")
        unlink(device + "/7")
        #expect(!matches(again))
        // A second reader's directory appears beside the first.
        let removed = StorageStamp.of(fprintDir: prints, user: "alice")
        mkdir(prints + "/alice/other_driver", 0o700)
        #expect(!matches(removed))
        // Another user's storage, a missing one, and names that are not one path element.
        #expect(!StorageStamp.stillMatches(StorageStamp.of(fprintDir: prints, user: "bob"), fprintDir: prints, user: "alice"))
        #expect(StorageStamp.stillMatches(StorageStamp.of(fprintDir: prints, user: "bob"), fprintDir: prints, user: "bob"))
        #expect(StorageStamp.of(fprintDir: prints, user: "../alice") == "invalid-user")
        #expect(!StorageStamp.stillMatches("invalid-user", fprintDir: prints, user: "alice"))
        #expect(!StorageStamp.stillMatches(".\tmissing\n../x\tmissing", fprintDir: prints, user: "bob"))
    }

    @Test func theStoreKeepsTheRecordAndRefusesAForeignOne() throws {
        let record = EnrollmentRecord(set: set, storage: "s", readAt: BootClock.nanos(), bootID: "b")
        try store.saveEnrollmentRecord(record, for: alice)
        #expect(store.enrollmentRecord(alice) == record)
        chmod(dir.path + "/state/alice.enrolled", 0o644)
        #expect(store.enrollmentRecord(alice) == nil)
    }

    @Test func theRecordedSensorAnswersOnlyFromACurrentRecord() throws {
        let prints = dir.path + "/fprint"
        mkdir(prints, 0o700)
        let stamp = StorageStamp.of(fprintDir: prints, user: "alice")
        let sensor = RecordedEnrollment(store: store, fprintDir: prints, bootID: "b")
        #expect(throws: EvaluationError.self) { try sensor.enrolledSet(for: "alice") }
        #expect(sensor.missed)
        try store.saveEnrollmentRecord(EnrollmentRecord(set: set, storage: stamp, readAt: BootClock.nanos(), bootID: "b"),
                                       for: alice)
        let fresh = RecordedEnrollment(store: store, fprintDir: prints, bootID: "b")
        #expect(try fresh.enrolledSet(for: "alice") == set)
        #expect(!fresh.missed)
        mkdir(prints + "/alice", 0o700)   // fprintd stored something since
        let stale = RecordedEnrollment(store: store, fprintDir: prints, bootID: "b")
        #expect(throws: EvaluationError.self) { try stale.enrolledSet(for: "alice") }
        #expect(stale.missed)
    }
}

private extension String {
    func replacingFirst(_ a: String, _ b: String) -> String {
        guard let r = range(of: a) else { return self }
        return replacingCharacters(in: r, with: b)
    }
}
