// "Did the fingers change?": the most-copied domain-state check. The app stores the domain
// state when the user turns biometric unlock on; later a preflight's state that differs
// means a finger was added or removed, and the app asks for the password again.
import Foundation
import LocalAuthentication

final class FingerprintChange {
    private let defaults: UserDefaults
    private let key = "biometricDomainState"
    private let makeContext: () -> LAContextProtocol

    init(defaults: UserDefaults = .standard, makeContext: @escaping () -> LAContextProtocol = { LAContext() }) {
        self.defaults = defaults
        self.makeContext = makeContext
    }

    private func currentState() -> Data? {
        let context = makeContext()
        var error: NSError?
        guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) else {
            return nil
        }
        return context.evaluatedPolicyDomainState
    }

    /// Called when the user turns biometric unlock on.
    @discardableResult
    func remember() -> Bool {
        guard let state = currentState() else { return false }
        defaults.set(state, forKey: key)
        return true
    }

    func didFingersChange() -> Bool {
        guard let old = defaults.data(forKey: key) else { return false }
        guard let new = currentState() else { return false }
        return old != new
    }
}
