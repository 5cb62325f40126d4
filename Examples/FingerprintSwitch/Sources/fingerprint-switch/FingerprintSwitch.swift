import Foundation
import LocalAuthentication

/// Seed 004's settings switch and seed 003's domain-state check, with Apple's API: the code
/// would be the same on iOS or macOS.
struct FingerprintSwitch {
    var settings: Settings
    let path: String

    // MARK: - Seed 004: the switch

    /// On needs a matching finger. After a lockout (or when the system asks for the password
    /// first), the password unlocks fingerprints, and the finger is asked again.
    mutating func turnOn(afterPassword: Bool = false) async -> Bool {
        let context = LAContext()
        context.localizedFallbackTitle = ""  // no fallback button: the switch needs the finger
        do {
            _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics,
                                                 localizedReason: "Turn on fingerprint login")
            settings.fingerprintLogin = true
            settings.domainState = context.evaluatedPolicyDomainState
            return save("Fingerprint login is on.")
        } catch LAError.userCancel {
            print("Cancelled: fingerprint login stays off.")
        } catch LAError.authenticationFailed {
            print("Fingerprint not recognized: fingerprint login stays off.")
        } catch LAError.biometryLockout where !afterPassword {
            print("Fingerprints are locked: enter your password to unlock them.")
            if await passwordUnlocks() { return await turnOn(afterPassword: true) }
        } catch {
            print("Fingerprint login is not available: \(error.localizedDescription) (\((error as NSError).code))")
        }
        return false
    }

    /// Off needs the owner: a finger or the password.
    mutating func turnOff() async -> Bool {
        do {
            _ = try await LAContext().evaluatePolicy(.deviceOwnerAuthentication,
                                                     localizedReason: "Turn off fingerprint login")
            settings = Settings()
            return save("Fingerprint login is off.")
        } catch {
            print("Fingerprint login stays on: \(error.localizedDescription)")
            return false
        }
    }

    // MARK: - Seed 003: did the fingers change?

    /// The enrolled set's domain state now (after a finger was added, the new set's, as on
    /// Apple's platforms): nil when fingerprints cannot be used (no finger, no reader) — and,
    /// with it, whether they are only locked out.
    func currentDomainState() -> (state: Data?, lockedOut: Bool) {
        let context = LAContext()
        var error: NSError?
        if context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) {
            return (context.evaluatedPolicyDomainState, false)
        }
        return (nil, error?.code == LAError.biometryLockout.rawValue)
    }

    /// Seed 003's rule: a lockout says nothing about the fingers; otherwise any difference
    /// from the value stored when the switch was turned on is a change.
    func fingersChanged() -> Bool {
        guard let stored = settings.domainState else { return false }
        let now = currentDomainState()
        if now.state == nil && now.lockedOut { return false }
        return now.state != stored
    }

    func status() -> Bool {
        print("fingerprint login: \(settings.fingerprintLogin ? "on" : "off")")
        if settings.fingerprintLogin {
            print("enrolled fingers: \(fingersChanged() ? "changed since it was turned on" : "unchanged")")
        }
        return true
    }

    // MARK: - The login screen

    /// With the switch on and the same fingers: the finger, as seed 004's login screen.
    /// Changed fingers turn the switch off (someone may have added theirs): the password,
    /// then `on` again.
    mutating func login() async -> Bool {
        guard settings.fingerprintLogin else {
            print("Fingerprint login is off: sign in with your password.")
            return false
        }
        if fingersChanged() {
            settings = Settings()
            _ = save("The enrolled fingers changed: fingerprint login is off until you turn it on again.")
            return false
        }
        let context = LAContext()
        do {
            _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics,
                                                 localizedReason: "Sign in")
            print("Signed in with your fingerprint.")
            return true
        } catch LAError.biometryLockout {
            print("Fingerprints are locked: sign in with your password.")
            return await passwordUnlocks()
        } catch {
            print("Not signed in: \(error.localizedDescription)")
            return false
        }
    }

    // MARK: - Helpers

    /// deviceOwnerAuthentication goes straight to the password when fingerprints are locked;
    /// the system checks it and lifts the lockout.
    private func passwordUnlocks() async -> Bool {
        do {
            _ = try await LAContext().evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Unlock fingerprints")
            print("Password accepted.")
            return true
        } catch {
            print("Password not accepted: \(error.localizedDescription)")
            return false
        }
    }

    private func save(_ message: String) -> Bool {
        do {
            try settings.save(path)
            print(message)
            return true
        } catch {
            print("Could not save the setting to \(path): \(error.localizedDescription)")
            return false
        }
    }
}
