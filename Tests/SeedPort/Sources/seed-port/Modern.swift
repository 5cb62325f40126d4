// What the seeds predate but a port to today's Swift uses: the async form in a Task,
// catching LAError codes, matching an Error against them.
import Foundation
import LocalAuthentication

func unlockWithAsync() {
    Task {
        let context = LAContext()
        do {
            let ok = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics,
                                                      localizedReason: "Unlock your notes")
            print("unlocked: \(ok), domain state \(context.evaluatedPolicyDomainState?.count ?? 0) bytes")
        } catch LAError.userCancel {
            print("cancelled")
        } catch let error as LAError where error.code == .biometryLockout {
            print("locked out: \(error.localizedDescription)")
        } catch {
            switch error {
            case LAError.userFallback: print("fallback")
            case LAError.authenticationFailed: print("failed")
            case LAError.touchIDNotEnrolled: print("no finger")
            default: print("error \((error as NSError).domain) \((error as NSError).code)")
            }
        }
    }
}

func preflight() -> Bool {
    let context = LAContext()
    guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil) else { return false }
    return context.biometryType == .touchID
}
