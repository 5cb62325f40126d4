import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Apple's `LAContext` for Swift programs on Linux, source-compatible with Apple's:
///
///     let context = LAContext()
///     var error: NSError?
///     if context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) {
///         context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics,
///                                localizedReason: "Unlock your notes") { success, error in … }
///     }
///
/// The policy is the system's, not the program's: every preflight and evaluation runs in
/// the root side (localauthd and its `localauth-helper`), with the lockout, the rules
/// and the state files that `sudo` and the lock screen use, so a program can neither see
/// nor reset them. `evaluatePolicy` returns at once and replies on a private queue.
/// Where Apple draws a system dialog, the prompts appear in `userInterface` (by default the
/// controlling terminal). docs/API.md lists, symbol by symbol, what differs.
///
/// Not `Sendable`, as Apple's is not: code that hands a context to another thread or task
/// must say so itself (a box, an actor), or it would compile here and fail on Apple's
/// platforms. What the context's own queues change while evaluations run (the
/// invalidation, the evaluations in flight, the last domain state and biometry type, the
/// reuse duration, the credentials) is in `shared`, behind its lock; `invalidate()` may
/// still be called from any thread, as on Apple's. The settable titles,
/// `localizedReason`, `interactionNotAllowed` and `userInterface` are plain properties the
/// calls read on the caller's thread when they start.
open class LAContext: NSObject {
    private let shared = ContextState()

    public override init() {
        super.init()
    }

    // MARK: - Properties

    /// The fallback button's title: nil gives the default ("Use Password…", or "Enter
    /// Password" for `deviceOwnerAuthentication`); `""` offers no fallback.
    open var localizedFallbackTitle: String?

    /// The cancel button's title: nil or `""` gives "Cancel".
    open var localizedCancelTitle: String?

    /// Apple uses it for prompts the system raises on the context's behalf (keychain items);
    /// kept here, as nothing else raises prompts.
    open var localizedReason: String = ""

    /// Kept and bounded as Apple bounds it (0…300 s). No success is reused for an
    /// application here: the root side cannot tell which session it runs in.
    open var touchIDAuthenticationAllowableReuseDuration: TimeInterval {
        get { shared.withLock { $0.reuseDuration } }
        set {
            let bounded = newValue.isFinite ? min(max(newValue, 0), LATouchIDAuthenticationMaximumAllowableReuseDuration) : 0
            shared.withLock { $0.reuseDuration = bounded }
        }
    }

    /// True: an evaluation that would need the user (every one here) fails at once with
    /// `notInteractive`.
    open var interactionNotAllowed = false

    /// `.touchID` after a `canEvaluatePolicy` that found a reader, else `.none`.
    open var biometryType: LABiometryType { shared.withLock { $0.lastBiometryType } }

    /// The enrolled set's opaque hash, after the context's last `canEvaluatePolicy` or
    /// evaluation succeeded with a finger's policy (a preflight) or a finger (a match); nil
    /// before that, and again after a later preflight or evaluation that failed or succeeded
    /// with the password, as on Apple's ("nil otherwise"): a program that reuses one context
    /// and compares this with a stored value stops offering the finger after the enrolled
    /// fingers changed and a preflight failed.
    open var evaluatedPolicyDomainState: Data? { shared.withLock { $0.lastDomainState } }

    /// Apple's newer form of the same (iOS 18, macOS 15).
    open var domainState: LADomainState {
        shared.withLock {
            LADomainState(biometry: LADomainStateBiometry(biometryType: $0.lastBiometryType, stateHash: $0.lastDomainState))
        }
    }

    /// Where prompts appear (a Linux addition): nil is the controlling terminal.
    open var userInterface: LAUserInterface?

    // MARK: - Preflight

    /// Whether `policy` can be evaluated now, without asking the user anything and without
    /// starting the reader. On `false`, `error` (if given) holds an `NSError` in
    /// `LAErrorDomain` with Apple's code. The answer is the root side's at the call
    /// (docs/API.md, "How fresh a preflight is"): nothing is kept in the process.
    @discardableResult
    open func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool {
        let failure: LAError?
        if let refused = refusal(policy, reason: nil) {
            failure = refused
            shared.record(AppResult(error: refused), biometry: false)
        } else {
            // The root side's answer now, for every call: localauthd answers a preflight
            // itself in microseconds (docs/SERVICE.md, "Preflight"), so nothing is kept here
            // and a lockout, a changed finger or a password reached elsewhere shows at once.
            let result = askRootSide(policy)
            shared.record(result, biometry: true)
            failure = result.error
        }
        error?.pointee = failure.map { $0 as NSError }
        return failure == nil
    }

    // MARK: - Evaluation

    /// Evaluates `policy`: returns at once; `reply` comes on a private queue with `true`, or
    /// `false` and an `LAError`.
    @preconcurrency
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String,
                             reply: @escaping @Sendable (Bool, Error?) -> Void) {
        start(policy, localizedReason: localizedReason, reply: reply)
    }

    /// The same as `async throws`: `true`, or an `LAError` thrown. Cancelling the task ends
    /// the evaluation with `appCancel`, as `invalidate()` does (the context stays usable).
    nonisolated(nonsending) open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        let handle = Handle()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, Error>) in
                start(policy, localizedReason: localizedReason, handle: handle) { success, error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: success) }
                }
            }
        } onCancel: {
            handle.cancel()
        }
    }

    /// Ends every evaluation in flight with `appCancel`; later calls fail with `invalidContext`.
    open func invalidate() {
        let inFlight: [Evaluation] = shared.withLock {
            $0.invalidated = true
            return Array($0.running.values)
        }
        for evaluation in inFlight { evaluation.cancel() }
    }

    // MARK: - Credentials

    /// Kept for `isCredentialSet`; no policy here uses an application credential.
    @discardableResult
    open func setCredential(_ credential: Data?, type: LACredentialType) -> Bool {
        shared.withLock { $0.credentials[type] = credential }
        return true
    }

    open func isCredentialSet(_ type: LACredentialType) -> Bool {
        shared.withLock { $0.credentials[type] != nil }
    }

    // MARK: - Internals

    /// `handle`: the async form's, told about the evaluation before it starts, so that a
    /// cancellation that came first ends it before it reaches the root side.
    private func start(_ policy: LAPolicy, localizedReason: String, handle: Handle? = nil,
                       reply: @escaping @Sendable (Bool, Error?) -> Void) {
        let queue = DispatchQueue(label: "localauth.LAContext.evaluatePolicy")
        if let refused = refusal(policy, reason: localizedReason) {
            shared.record(AppResult(error: refused), biometry: false)
            queue.async { reply(false, refused) }
            return
        }
        if interactionNotAllowed {
            let refused = LAError.make(.notInteractive, debug: "interactionNotAllowed is set")
            shared.record(AppResult(error: refused), biometry: false)
            queue.async { reply(false, refused) }
            return
        }
        let ui = userInterface ?? LATerminalInterface()
        let fallback = fallbackTitle(policy)
        let prompt = LAPrompt(policy: policy, reason: localizedReason, fallbackTitle: fallback,
                              cancelTitle: (localizedCancelTitle ?? "").isEmpty ? "Cancel" : localizedCancelTitle!)
        var request = request(.evaluate, policy)
        request.canInteract = ui.canInteract
        let evaluation = Evaluation(request: request, prompt: prompt, ui: ui)
        let id = ObjectIdentifier(evaluation)
        shared.withLock { $0.running[id] = evaluation }
        handle?.set(evaluation)
        queue.async { [shared] in
            let result = evaluation.run()
            shared.withLock { $0.running[id] = nil }
            shared.record(result, biometry: false)
            reply(result.error == nil, result.error)
        }
    }

    /// What fails before the root side is asked: an invalidated context, an empty reason,
    /// a policy that needs a companion device.
    private func refusal(_ policy: LAPolicy, reason: String?) -> LAError? {
        if shared.withLock({ $0.invalidated }) {
            return .make(.invalidContext, debug: "the context was invalidated")
        }
        if let reason, reason.isEmpty {
            return .make(.appCancel, debug: "localizedReason must not be empty")
        }
        switch policy {
        case .deviceOwnerAuthenticationWithCompanion, .deviceOwnerAuthenticationWithWristDetection:
            return .make(.companionNotAvailable, debug: "there are no companion devices on this system")
        default:
            return nil
        }
    }

    /// An answer as if the root side had given it (for the tests: the domain state's rule).
    func record(_ result: AppResult, biometry: Bool) {
        shared.record(result, biometry: biometry)
    }

    private func request(_ operation: AppRequest.Operation, _ policy: LAPolicy) -> AppRequest {
        AppRequest(operation: operation, policy: policy == .deviceOwnerAuthentication ? "owner" : "biometrics",
                   fallbackTitle: localizedFallbackTitle, canInteract: false)
    }

    /// One `op=preflight` of the root side. The fallback title plays no part in it.
    private func askRootSide(_ policy: LAPolicy) -> AppResult {
        let question = AppRequest(operation: .preflight, policy: request(.preflight, policy).policy,
                                  fallbackTitle: nil, canInteract: false)
        if let answer = PreflightChannel.ask(question) { return answer }
        // Kept alive until it returns, as any caller's evaluation is (the optimizer otherwise
        // sees its [weak self] callback outlive it, though without a user interface none is made).
        return withExtendedLifetime(Evaluation(request: question, prompt: nil, ui: nil)) { $0.run() }
    }

    private func fallbackTitle(_ policy: LAPolicy) -> String? {
        switch localizedFallbackTitle {
        case ""?: return nil
        case let title?: return title
        case nil: return policy == .deviceOwnerAuthentication ? "Enter Password" : "Use Password…"
        }
    }
}

/// What an `LAContext` shares with its evaluations' queues. `@unchecked Sendable`: every
/// field is read and written under `lock` (`withLock`).
private final class ContextState: @unchecked Sendable {
    struct Fields {
        var invalidated = false
        var running: [ObjectIdentifier: Evaluation] = [:]
        var lastDomainState: Data?
        var lastBiometryType: LABiometryType = .none
        var reuseDuration: TimeInterval = 0
        var credentials: [LACredentialType: Data] = [:]
    }

    private let lock = NSLock()
    private var fields = Fields()

    func withLock<T>(_ body: (inout Fields) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&fields)
    }

    /// A preflight's or evaluation's answer: the domain state it gave, which is nil unless it
    /// succeeded with a finger's policy or a finger, and the biometry type a preflight reports.
    func record(_ result: AppResult, biometry: Bool) {
        withLock {
            $0.lastDomainState = result.error == nil ? result.domainState : nil
            if biometry, let type = result.biometry { $0.lastBiometryType = type }
        }
    }
}

/// The evaluation an async call started, for its task's cancellation handler (which may
/// run before the evaluation exists). `@unchecked Sendable`: `lock` guards both properties.
private final class Handle: @unchecked Sendable {
    private let lock = NSLock()
    private var evaluation: Evaluation?
    private var cancelled = false

    func set(_ e: Evaluation) {
        let cancelNow: Bool = lock.withLock {
            evaluation = e
            return cancelled
        }
        if cancelNow { e.cancel() }
    }

    func cancel() {
        let e: Evaluation? = lock.withLock {
            cancelled = true
            return evaluation
        }
        e?.cancel()
    }
}
