import FprintdClient
import LocalAuth

/// `localauthctl enrolled-set USER` (hidden): what the domain state would be computed from,
/// and a SHA-256 of its canonical bytes, to observe enrollment changes in tests.
enum EnrolledSetCommand {
    static let spec = CommandSpec(
        name: "enrolled-set", synopsis: "enrolled-set USER",
        summary: "show the reader and prints used for USER, and a digest of them",
        help: """
        Prints the reader, the finger names, the scan type, the digests of the stored prints
        and a SHA-256 of all of it: what the enrolled set's domain state is computed from.
        For tests and diagnosis.
        """,
        flags: [.dbusAddress, .busTimeout, .fprintDir], hidden: true, run: run)

    static func run(_ inv: Invocation) -> Int32 {
        guard inv.positional.count == 1, let user = inv.positional.first else {
            return usageError(spec, "expected one USER")
        }
        let o: Options
        switch inv.options(log: StderrLog()) {
        case .success(let options): o = options
        case .failure(let e): return fail(spec, e)
        }
        let sensor = FprintdSensor(address: o.dbusAddress, busTimeout: o.busTimeout,
                                   fprintDir: o.fprintDir, log: StderrLog())
        do {
            show(try sensor.enrolledSet(for: user))
            return 0
        } catch {
            if !error.cause.isEmpty { warn(error.cause) }
            say(error.code.name)
            return 1
        }
    }

    private static func show(_ set: EnrolledSet) {
        say("device=\(set.deviceIdentity)")
        say("name=\(set.deviceName)")
        say("fingers=\(set.fingers.joined(separator: ","))")
        say("scan-type=\(set.scanType.rawValue)")
        say("material=\(Crypto.hex(set.printMaterial))")
        say("digest=\(Crypto.hex(Crypto.sha256(set.canonicalBytes)))")
    }
}
