// la-probe: drives LocalAuthentication the way an application does, for the integration
// tests (Tests/integration/test_app_api.py). One line per result on stdout:
//   RESULT op=can|eval success=1|0 code=N domain=D state=HEX|- biometry=N desc=TEXT
// and before it, when the error says what happened here (NSDebugDescription):
//   DEBUG TEXT
//
//   la-probe can biometrics|owner|POLICY-RAW
//   la-probe eval biometrics|owner [--async] [--fallback TITLE] [--reason TEXT]
//            [--invalidate-after S] [--cancel-after S] [--repeat N]
import Foundation
import LocalAuthentication

func policy(_ word: String) -> LAPolicy {
    switch word {
    case "biometrics": return .deviceOwnerAuthenticationWithBiometrics
    case "owner": return .deviceOwnerAuthentication
    default:
        guard let raw = Int(word), let p = LAPolicy(rawValue: raw) else {
            FileHandle.standardError.write("la-probe: unknown policy \(word)\n".data(using: .utf8)!)
            exit(64)
        }
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
    fflush(stdout)
}

var args = Array(CommandLine.arguments.dropFirst())
guard args.count >= 2 else {
    FileHandle.standardError.write("usage: la-probe can|eval POLICY [options]\n".data(using: .utf8)!)
    exit(64)
}
let op = args.removeFirst()
let chosen = policy(args.removeFirst())
var useAsync = false, fallback: String?, reason = "unlock the test", invalidateAfter: Double?, cancelAfter: Double?
var repeatCount = 1
while !args.isEmpty {
    let flag = args.removeFirst()
    switch flag {
    case "--async": useAsync = true
    case "--fallback": fallback = args.removeFirst()
    case "--reason": reason = args.removeFirst()
    case "--invalidate-after": invalidateAfter = Double(args.removeFirst())
    case "--cancel-after": cancelAfter = Double(args.removeFirst())
    case "--repeat": repeatCount = Int(args.removeFirst()) ?? 1
    default:
        FileHandle.standardError.write("la-probe: unknown option \(flag)\n".data(using: .utf8)!)
        exit(64)
    }
}

switch op {
case "can":
    let context = LAContext()
    var error: NSError?
    let ok = context.canEvaluatePolicy(chosen, error: &error)
    report("can", ok, error, context)
case "eval":
    // A new context each time, as an application makes one per evaluation.
    for _ in 0..<repeatCount {
        let context = LAContext()
        context.localizedFallbackTitle = fallback
        let done = DispatchSemaphore(value: 0)
        if useAsync {
            let task = Task {
                do {
                    let ok = try await context.evaluatePolicy(chosen, localizedReason: reason)
                    report("eval", ok, nil, context)
                } catch {
                    report("eval", false, error, context)
                }
                done.signal()
            }
            if let cancelAfter {
                DispatchQueue.global().asyncAfter(deadline: .now() + cancelAfter) { task.cancel() }
            }
        } else {
            context.evaluatePolicy(chosen, localizedReason: reason) { ok, error in
                report("eval", ok, error, context)
                done.signal()
            }
        }
        if let invalidateAfter {
            DispatchQueue.global().asyncAfter(deadline: .now() + invalidateAfter) { context.invalidate() }
        }
        done.wait()
    }
default:
    FileHandle.standardError.write("la-probe: unknown operation \(op)\n".data(using: .utf8)!)
    exit(64)
}
