// The Swift 6 language mode with a plain `import` (no `@preconcurrency`): a lock screen's
// model, a class that is not Sendable, captured (with a completion closure that is not
// Sendable either) in the closures the completion-handler forms call. Apple's SDK imports
// those forms from Objective-C as `@preconcurrency`, so that this compiles there with
// warnings at most ("capture of 'self' with non-Sendable type ... in a '@Sendable'
// closure"); it must here too. Built without warnings-as-errors: the warnings are Apple's.
import LocalAuthentication

/// What a lock screen keeps: whether it is locked, and who to tell.
public final class LockGate {
    public private(set) var isLocked = true
    public private(set) var lastError: Error?
    private var listeners: [(Bool) -> Void] = []

    public init() {}

    public func onChange(_ listener: @escaping (Bool) -> Void) {
        listeners.append(listener)
    }

    private func settle(_ unlocked: Bool, _ error: Error?) {
        isLocked = !unlocked
        lastError = error
        for listener in listeners { listener(unlocked) }
    }

    /// The reply form of `evaluatePolicy`, its closure using `self` and `completion`.
    public func unlock(_ context: LAContext, policy: LAPolicy, reason: String,
                       completion: @escaping (Bool, Error?) -> Void) {
        context.evaluatePolicy(policy, localizedReason: reason) { success, error in
            self.settle(success, error)
            completion(success, error)
        }
    }

    // The rights API's completion forms, the same way.

    public func authorize(_ right: LARight, completion: @escaping (Error?) -> Void) {
        right.authorize(localizedReason: "Unlock the vault") { error in
            self.settle(error == nil, error)
            completion(error)
        }
    }

    public func check(_ right: LARight, completion: @escaping (Error?) -> Void) {
        right.checkCanAuthorize { error in
            self.lastError = error
            completion(error)
        }
    }

    public func relock(_ right: LARight, completion: @escaping () -> Void) {
        right.deauthorize {
            self.settle(false, nil)
            completion()
        }
    }

    public func find(_ store: LARightStore, _ identifier: String,
                     completion: @escaping (LAPersistedRight?) -> Void) {
        store.right(forIdentifier: identifier) { right, error in
            self.lastError = error
            completion(right)
        }
    }

    public func save(_ store: LARightStore, _ right: LARight, _ identifier: String, secret: Data?,
                     completion: @escaping (LAPersistedRight?) -> Void) {
        if let secret {
            store.saveRight(right, identifier: identifier, secret: secret) { saved, error in
                self.lastError = error
                completion(saved)
            }
        } else {
            store.saveRight(right, identifier: identifier) { saved, error in
                self.lastError = error
                completion(saved)
            }
        }
    }

    public func remove(_ store: LARightStore, _ right: LAPersistedRight?, identifier: String?,
                       completion: @escaping () -> Void) {
        if let right {
            store.removeRight(right) { error in
                self.lastError = error
                completion()
            }
        } else if let identifier {
            store.removeRight(forIdentifier: identifier) { error in
                self.lastError = error
                completion()
            }
        } else {
            store.removeAllRights { error in
                self.lastError = error
                completion()
            }
        }
    }

    public func read(_ secret: LASecret, completion: @escaping (Data?) -> Void) {
        secret.loadData { data, error in
            self.lastError = error
            completion(data)
        }
    }

    public func sign(_ key: LAPrivateKey, _ data: Data, completion: @escaping (Data?) -> Void) {
        key.sign(data, secKeyAlgorithm: .ecdsaSignatureMessageX962SHA256) { signature, error in
            self.lastError = error
            completion(signature)
        }
    }

    public func export(_ key: LAPublicKey, completion: @escaping (Data?) -> Void) {
        key.export { bytes, error in
            self.lastError = error
            completion(bytes)
        }
    }
}
