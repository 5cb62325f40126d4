import FprintdClient
import LocalAuth

/// `localauthctl enrolled-set USER` (hidden): what the domain state would be computed from,
/// and a SHA-256 of its canonical bytes, to observe enrollment changes in tests.
enum EnrolledSetCommand {
    static func run(_ args: [String]) -> Int32 {
        var flags = Arguments.busFlags
        flags["--fprint-dir"] = "fprint_dir"
        let parsed: Arguments
        switch Arguments.parse(args, flags: flags) {
        case .success(let p): parsed = p
        case .failure(let e): warn("enrolled-set: \(e.message)"); return exitUsage
        }
        guard parsed.positional.count == 1, let user = parsed.positional.first else {
            warn("enrolled-set: expected one USER")
            return exitUsage
        }
        let o = parsed.options
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
        say("material=\(hex(set.printMaterial))")
        say("digest=\(hex(PrintDigest.sha256(set.canonicalBytes) ?? []))")
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
