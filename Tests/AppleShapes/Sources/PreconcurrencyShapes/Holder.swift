// Apple's module is not built for strict concurrency: `@preconcurrency import` silences
// what the Swift 6 language mode would say about its non-Sendable classes.
@preconcurrency import LocalAuthentication

/// A context kept in a Sendable value and used from the reply's closure.
public struct ContextHolder: Sendable {
    public let context: LAContext

    public init(_ context: LAContext = LAContext()) {
        self.context = context
    }

    /// The reply form; the closure uses the context again (to invalidate it).
    public func evaluateOnce(_ policy: LAPolicy, reason: String, done: @escaping @Sendable (Bool, Int?) -> Void) {
        context.evaluatePolicy(policy, localizedReason: reason) { success, error in
            self.context.invalidate()
            done(success, (error as NSError?)?.code)
        }
    }
}
