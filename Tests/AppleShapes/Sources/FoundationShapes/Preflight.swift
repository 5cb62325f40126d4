// Only LocalAuthentication is imported: Date, Data, NSError, DispatchQueue and the error
// bridging come with it, as they do from Apple's module.
import LocalAuthentication

/// What the unlock screen offers after a preflight.
public enum UnlockOffer: Equatable {
    case finger
    case passwordOnly
    case nothing
}

/// One preflight as an application keeps it: when, what it offered, and the error as the
/// framework gave it (an `NSError`) and as the application reads it (an `LAError`).
public struct PreflightRecord {
    public let checkedAt: Date
    public let offer: UnlockOffer
    public let error: NSError?
    public let laError: LAError?
    public let domainState: Data?

    public init(context: LAContext, policy: LAPolicy) {
        var error: NSError?
        let ok = context.canEvaluatePolicy(policy, error: &error)
        checkedAt = Date()
        self.error = error
        laError = error as? LAError
        domainState = context.evaluatedPolicyDomainState
        if ok {
            offer = .finger
        } else if let laError {
            switch laError.code {
            case .biometryLockout, .biometryNotEnrolled: offer = .passwordOnly
            default: offer = .nothing
            }
        } else {
            offer = .nothing
        }
    }
}

/// The failure of an evaluation as an application sorts it, by `catch` patterns on the
/// error thrown, whether it is an `LAError` or the `NSError` it came as.
public enum EvaluationFailure: Equatable {
    case cancelled
    case fallback
    case lockedOut
    case unavailable
    case noCompanion
    case invalidated
    case other(Int)
}

public func sort(_ thrown: Error) -> EvaluationFailure {
    do {
        throw thrown
    } catch LAError.userCancel, LAError.systemCancel, LAError.appCancel {
        return .cancelled
    } catch LAError.userFallback {
        return .fallback
    } catch LAError.biometryLockout {
        return .lockedOut
    } catch LAError.biometryNotAvailable, LAError.biometryNotEnrolled {
        return .unavailable
    } catch LAError.companionNotAvailable {
        return .noCompanion
    } catch LAError.invalidContext {
        return .invalidated
    } catch {
        return .other((error as NSError).code)
    }
}

/// The reply form, its answer handed to a queue of the application's.
public func evaluate(_ context: LAContext, policy: LAPolicy, reason: String, on queue: DispatchQueue,
                     then done: @escaping (Bool, EvaluationFailure?) -> Void) {
    context.evaluatePolicy(policy, localizedReason: reason) { success, error in
        queue.async { done(success, error.map(sort)) }
    }
}
