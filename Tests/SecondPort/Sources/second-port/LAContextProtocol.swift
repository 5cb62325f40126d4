// The test seam: the app talks to this protocol, LAContext conforms as it is, and the unit
// tests hand in a fake. The requirements are copied from Apple's declarations.
import Foundation
import LocalAuthentication

protocol LAContextProtocol {
    var biometryType: LABiometryType { get }
    var evaluatedPolicyDomainState: Data? { get }
    var localizedFallbackTitle: String? { get set }
    func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool
    func evaluatePolicy(_ policy: LAPolicy, localizedReason: String,
                        reply: @escaping @Sendable (Bool, Error?) -> Void)
}

extension LAContext: LAContextProtocol {}

/// A context that answers what a test tells it to.
final class FakeContext: LAContextProtocol {
    var biometryType: LABiometryType = .touchID
    var evaluatedPolicyDomainState: Data?
    var localizedFallbackTitle: String?
    var preflightError: NSError?
    var evaluationError: Error?

    func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool {
        error?.pointee = preflightError
        return preflightError == nil
    }

    func evaluatePolicy(_ policy: LAPolicy, localizedReason: String,
                        reply: @escaping @Sendable (Bool, Error?) -> Void) {
        let failure = evaluationError
        DispatchQueue.global().async { reply(failure == nil, failure) }
    }
}
