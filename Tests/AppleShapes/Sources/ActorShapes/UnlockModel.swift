import LocalAuthentication

/// A view model on the main actor that owns its context and awaits the framework's async
/// calls, in the Swift 6 language mode: the calls run on the caller's actor, so the
/// non-Sendable context never leaves it.
@MainActor
public final class UnlockModel {
    private let context = LAContext()
    public private(set) var unlocked = false
    public private(set) var lastCode: LAError.Code?

    public init() {}

    public func unlock(_ policy: LAPolicy, reason: String) async {
        do {
            unlocked = try await context.evaluatePolicy(policy, localizedReason: reason)
            lastCode = nil
        } catch let error as LAError {
            unlocked = false
            lastCode = error.code
        } catch {
            unlocked = false
        }
    }

    public func lock() {
        context.invalidate()
        unlocked = false
    }

    /// A saved right's secret: the right, its authorization, then the bytes (Apple's
    /// `rawData`, the async form of `loadData(completion:)`).
    public func secret(_ identifier: String, reason: String) async throws -> Data {
        let right = try await LARightStore.shared.right(forIdentifier: identifier)
        try await right.authorize(localizedReason: reason)
        defer { Task { await right.deauthorize() } }
        return try await right.secret.rawData
    }
}
