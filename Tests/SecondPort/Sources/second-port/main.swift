// second-port selftest | remember | changed | unlock [SECONDS]
//   selftest: the app's own unit tests, with the fake context (no reader)
//   remember / changed: the domain-state check against the system (UserDefaults in $HOME)
//   unlock: one evaluation through the authenticator
import Foundation
import LocalAuthentication

func check(_ ok: Bool, _ what: String) {
    print("\(ok ? "ok" : "FAILED"): \(what)")
    if !ok { exit(1) }
}

func selftest() {
    let fake = FakeContext()
    let auth = BiometricAuth(makeContext: { fake })
    check(auth.canUseBiometrics() == .success(.touchID), "preflight through the seam")
    fake.preflightError = NSError(domain: kLAErrorDomain, code: Int(kLAErrorBiometryLockout))
    check(auth.canUseBiometrics() == .failure(.lockedOut), "kLAErrorBiometryLockout maps")
    check(BiometricAuth.map(LAError(.userCancel) as NSError) == .cancelled, "LAError bridges to kLAErrorUserCancel")
    check(BiometricAuth.map(LAError(.notInteractive) as NSError) == .other(Int(kLAErrorNotInteractive)),
          "kLAErrorNotInteractive is -1004")
    fake.preflightError = nil
    let defaults = UserDefaults(suiteName: "second-port-selftest")!
    defaults.removeObject(forKey: "biometricDomainState")
    fake.evaluatedPolicyDomainState = Data([1])
    let change = FingerprintChange(defaults: defaults, makeContext: { fake })
    check(change.remember() && !change.didFingersChange(), "same state: not changed")
    fake.evaluatedPolicyDomainState = Data([2])
    check(change.didFingersChange(), "new state: changed")
}

let arguments = CommandLine.arguments
let seconds = arguments.count > 2 ? Double(arguments[2]) ?? 30 : 30
switch arguments.count > 1 ? arguments[1] : "" {
case "selftest":
    selftest()
    exit(0)
case "remember":
    print("remembered: \(FingerprintChange().remember())")
    UserDefaults.standard.synchronize()  // an app keeps running; this one exits at once
    exit(0)
case "changed":
    print("changed: \(FingerprintChange().didFingersChange())")
    exit(0)
case "unlock":
    BiometricAuth().authenticate(reason: "Unlock the second port") { result in
        switch result {
        case .success: print("unlocked")
        case .failure(let e): print("not unlocked: \(e)")
        }
        exit(0)
    }
    RunLoop.main.run(until: Date(timeIntervalSinceNow: seconds))
default:
    print("usage: second-port selftest|remember|changed|unlock [SECONDS]")
    exit(64)
}
