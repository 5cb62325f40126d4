// la-probe: drives LocalAuthentication the way an application does, for the integration
// tests (Tests/integration/test_app_api.py) and scripts/bench. One line per result on stdout:
//   RESULT op=can|eval success=1|0 code=N domain=D state=HEX|- biometry=N desc=TEXT
// and before it, when the error says what happened here (NSDebugDescription):
//   DEBUG TEXT
//
//   la-probe STEP [--then STEP ...]      the steps in turn, in one process
//   STEP: can biometrics|owner|POLICY-RAW [--repeat N] [--every S] [--until CODE] [--quiet]
//         eval biometrics|owner [--async] [--fallback TITLE] [--reason TEXT]
//              [--invalidate-after S] [--cancel-after S] [--repeat N]
//         pause          prints PAUSED pid=PID, then waits for a line on stdin
//         sleep S
//
// `can --repeat N` asks N times, a new context each time (as code that makes one per
// screen does), S seconds apart (default 0), stopping early at a call that gives CODE;
// `--quiet` prints only the last call's RESULT. Then one line:
//   STATS calls=N first_us=F median_us=M p10_us=A p90_us=B max_us=X span_s=T
// F is the first call's time; M, A, B, X are over the calls after it; T runs from the end
// of the first call to the end of the last.
import Foundation
import CLinux
import LocalAuthentication

func fail(_ text: String) -> Never {
    FileHandle.standardError.write("la-probe: \(text)\n".data(using: .utf8)!)
    exit(64)
}

func policy(_ word: String) -> LAPolicy {
    switch word {
    case "biometrics": return .deviceOwnerAuthenticationWithBiometrics
    case "owner": return .deviceOwnerAuthentication
    default:
        guard let raw = Int(word), let p = LAPolicy(rawValue: raw) else { fail("unknown policy \(word)") }
        return p
    }
}

func hex(_ data: Data?) -> String {
    guard let data else { return "-" }
    return data.map { String(format: "%02x", $0) }.joined()
}

func report(_ op: String, _ success: Bool, _ error: Error?, _ context: LAContext) {
    let ns = error.map { $0 as NSError }
    if let debug = ns?.userInfo["NSDebugDescription"] as? String {
        print("DEBUG " + debug.replacingOccurrences(of: "\n", with: " "))
    }
    let line = "RESULT op=\(op) success=\(success ? 1 : 0) code=\(ns?.code ?? 0) domain=\(ns?.domain ?? "-")"
        + " state=\(hex(context.evaluatedPolicyDomainState)) biometry=\(context.biometryType.rawValue)"
        + " desc=\(ns?.localizedDescription ?? "-")"
    print(line)
    fflush(la_stdout())
}

func microseconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1000 }

struct Options {
    var useAsync = false, fallback: String?, reason = "unlock the test"
    var invalidateAfter: Double?, cancelAfter: Double?
    var repeatCount = 1, every: Double = 0, until: Int?, quiet = false

    init(_ args: [String]) {
        var args = args
        func value() -> String {
            guard !args.isEmpty else { fail("an option lacks its value") }
            return args.removeFirst()
        }
        while !args.isEmpty {
            switch args.removeFirst() {
            case "--async": useAsync = true
            case "--fallback": fallback = value()
            case "--reason": reason = value()
            case "--invalidate-after": invalidateAfter = Double(value())
            case "--cancel-after": cancelAfter = Double(value())
            case "--repeat": repeatCount = Int(value()) ?? 1
            case "--every": every = Double(value()) ?? 0
            case "--until": until = Int(value())
            case "--quiet": quiet = true
            case let flag: fail("unknown option \(flag)")
            }
        }
    }
}

func can(_ chosen: LAPolicy, _ o: Options) {
    var times: [Double] = []
    var firstEnd = 0.0, lastEnd = 0.0
    for i in 0..<max(o.repeatCount, 1) {
        if i > 0 && o.every > 0 { Thread.sleep(forTimeInterval: o.every) }
        let context = LAContext()
        var error: NSError?
        let start = microseconds()
        let ok = context.canEvaluatePolicy(chosen, error: &error)
        lastEnd = microseconds()
        if i == 0 { firstEnd = lastEnd }
        times.append(lastEnd - start)
        let code = error?.code ?? 0
        let last = i == o.repeatCount - 1 || o.until == code
        if !o.quiet || last { report("can", ok, error, context) }
        if o.until == code { break }
    }
    guard o.repeatCount > 1 else { return }
    let rest = times.dropFirst().sorted()
    func at(_ q: Double) -> String {
        rest.isEmpty ? "-" : String(format: "%.1f", rest[min(rest.count - 1, Int(Double(rest.count) * q))])
    }
    print("STATS calls=\(times.count) first_us=\(String(format: "%.1f", times[0])) median_us=\(at(0.5))"
          + " p10_us=\(at(0.1)) p90_us=\(at(0.9)) max_us=\(at(1.0))"
          + " span_s=\(String(format: "%.6f", (lastEnd - firstEnd) / 1e6))")
    fflush(la_stdout())
}

func eval(_ chosen: LAPolicy, _ o: Options) {
    // A new context each time, as an application makes one per evaluation.
    for _ in 0..<o.repeatCount {
        let context = LAContext()
        context.localizedFallbackTitle = o.fallback
        let done = DispatchSemaphore(value: 0)
        let shared = SharedContext(context)
        if o.useAsync {
            let task = Task {
                do {
                    let ok = try await shared.context.evaluatePolicy(chosen, localizedReason: o.reason)
                    report("eval", ok, nil, shared.context)
                } catch {
                    report("eval", false, error, shared.context)
                }
                done.signal()
            }
            if let after = o.cancelAfter {
                DispatchQueue.global().asyncAfter(deadline: .now() + after) { task.cancel() }
            }
        } else {
            context.evaluatePolicy(chosen, localizedReason: o.reason) { ok, error in
                report("eval", ok, error, shared.context)
                done.signal()
            }
        }
        if let after = o.invalidateAfter {
            DispatchQueue.global().asyncAfter(deadline: .now() + after) { shared.context.invalidate() }
        }
        done.wait()
    }
}

/// LAContext is not Sendable (nor is Apple's): the reply and the timer reach it through this
/// box, as an application on Apple's platforms must too. Sound here: the reply only reads
/// what the evaluation left (its domain state, biometry type), and `invalidate()` may come
/// from any thread.
final class SharedContext: @unchecked Sendable {
    let context: LAContext
    init(_ context: LAContext) { self.context = context }
}

func run(_ step: [String]) {
    guard let op = step.first else { fail("an empty step") }
    switch op {
    case "can", "eval":
        guard step.count >= 2 else { fail("\(op) needs a policy") }
        let o = Options(Array(step.dropFirst(2)))
        op == "can" ? can(policy(step[1]), o) : eval(policy(step[1]), o)
    case "pause":
        print("PAUSED pid=\(getpid())")
        fflush(la_stdout())
        _ = readLine()
    case "sleep":
        guard step.count == 2, let s = Double(step[1]) else { fail("sleep needs seconds") }
        Thread.sleep(forTimeInterval: s)
    default:
        fail("unknown operation \(op)")
    }
}

let args = Array(CommandLine.arguments.dropFirst())
guard !args.isEmpty else {
    FileHandle.standardError.write("usage: la-probe STEP [--then STEP ...]\n".data(using: .utf8)!)
    exit(64)
}
for step in args.split(separator: "--then", omittingEmptySubsequences: false) {
    run(Array(step))
}
