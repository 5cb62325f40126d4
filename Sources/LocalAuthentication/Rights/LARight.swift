import Foundation

/// Apple's `LARight` (macOS 13, iOS 16): a right the user grants by authenticating. An
/// unsaved right is authorized by the evaluation `LAContext` runs (the root side's, as for
/// `sudo`); a saved one (`LAPersistedRight`, from `LARightStore`) by the root side's rights
/// store, which then lets this process load its secret and sign with its key.
///
/// `@unchecked Sendable`: `lock` guards `currentState`; `tag` is a plain property a program
/// sets before it hands the right on; `requirement` is a constant.
open class LARight: NSObject, @unchecked Sendable {
    /// Apple's `LARight.State`.
    public enum State: Int, Sendable {
        case unknown = 0
        case authorizing = 1
        case authorized = 2
        case notAuthorized = 3
    }

    let requirement: LAAuthenticationRequirement
    private let lock = NSLock()
    private var currentState: State = .unknown

    /// The application's own number for the right.
    open var tag: Int = 0

    public override init() {
        requirement = .default
        super.init()
    }

    public init(requirement: LAAuthenticationRequirement) {
        self.requirement = requirement
        super.init()
    }

    open var state: State { lock.withLock { currentState } }

    func setState(_ s: State) { lock.withLock { currentState = s } }

    // MARK: - Authorization

    /// Asks the user (the reason and the reader's prompts on the terminal); throws an
    /// `LAError` when the right is not granted.
    nonisolated(nonsending) open func authorize(localizedReason: String) async throws {
        guard !localizedReason.isEmpty else {
            throw LAError.make(.appCancel, debug: "localizedReason must not be empty")
        }
        setState(.authorizing)
        do {
            try await performAuthorization(localizedReason)
            setState(.authorized)
        } catch {
            setState(.notAuthorized)
            throw error
        }
    }

    @preconcurrency
    open func authorize(localizedReason: String, completion: @escaping @Sendable (Error?) -> Void) {
        RightsClient.complete({ try await self.authorize(localizedReason: localizedReason) }) { _, e in completion(e) }
    }

    /// Whether `authorize` can succeed now, without asking the user.
    nonisolated(nonsending) open func checkCanAuthorize() async throws {
        try await performCheck()
    }

    @preconcurrency
    open func checkCanAuthorize(completion: @escaping @Sendable (Error?) -> Void) {
        RightsClient.complete({ try await self.checkCanAuthorize() }) { _, e in completion(e) }
    }

    /// Gives the authorization back.
    nonisolated(nonsending) open func deauthorize() async {
        await performDeauthorization()
        setState(.notAuthorized)
    }

    @preconcurrency
    open func deauthorize(completion: @escaping @Sendable () -> Void) {
        Task.detached {
            await self.deauthorize()
            completion()
        }
    }

    // MARK: - What a saved right does differently (LAPersistedRight)

    var policy: LAPolicy { requirement.allowsPassword ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics }

    func performAuthorization(_ reason: String) async throws {
        let context = LAContext()
        context.localizedFallbackTitle = requirement.allowsPassword ? nil : ""
        _ = try await context.evaluatePolicy(policy, localizedReason: reason)
    }

    func performCheck() async throws {
        var error: NSError?
        if !LAContext().canEvaluatePolicy(policy, error: &error), let error {
            throw LAError(_nsError: error)
        }
    }

    func performDeauthorization() async {}

    /// The prompt of an authorization, as `evaluatePolicy` shows it.
    func prompt(_ reason: String) -> LAPrompt {
        LAPrompt(policy: policy, reason: reason,
                 fallbackTitle: requirement.allowsPassword ? "Enter Password" : nil, cancelTitle: "Cancel")
    }
}
