// The authenticator most apps carry: a context from a factory (the seam), a preflight, an
// evaluation, and the error codes mapped to what the app shows.
import Foundation
import LocalAuthentication

enum BiometricError: Error, Equatable {
    case cancelled, fallback, failed, lockedOut, notEnrolled, notAvailable, passcodeNotSet, other(Int)
}

final class BiometricAuth {
    private let makeContext: () -> LAContextProtocol

    init(makeContext: @escaping () -> LAContextProtocol = { LAContext() }) {
        self.makeContext = makeContext
    }

    func canUseBiometrics() -> Result<LABiometryType, BiometricError> {
        let context = makeContext()
        var error: NSError?
        guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) else {
            return .failure(Self.map(error))
        }
        return .success(context.biometryType)
    }

    func authenticate(reason: String, completion: @escaping (Result<Void, BiometricError>) -> Void) {
        var context = makeContext()
        context.localizedFallbackTitle = ""
        context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: reason) { success, error in
            DispatchQueue.main.async {
                completion(success ? .success(()) : .failure(Self.map(error as NSError?)))
            }
        }
    }

    /// The Objective-C codes, as the app's Objective-C half names them.
    static func map(_ error: NSError?) -> BiometricError {
        guard let error else { return .other(0) }
        switch Int32(error.code) {
        case kLAErrorUserCancel, kLAErrorSystemCancel, kLAErrorAppCancel: return .cancelled
        case kLAErrorUserFallback: return .fallback
        case kLAErrorAuthenticationFailed: return .failed
        case kLAErrorBiometryLockout: return .lockedOut
        case kLAErrorBiometryNotEnrolled: return .notEnrolled
        case kLAErrorBiometryNotAvailable: return .notAvailable
        case kLAErrorPasscodeNotSet: return .passcodeNotSet
        default: return .other(error.code)
        }
    }
}
