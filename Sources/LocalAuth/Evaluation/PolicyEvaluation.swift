#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Synchronization

/// The evaluation of a policy for one user, on the root side: what `sudo` runs (through
/// the PAM module and the helper), `localauthctl verify`, and the helper's answer to an
/// application's `LAContext` (the LocalAuthentication library, which has no policy of its
/// own). It holds what Apple's context holds between calls (the reuse duration, the
/// fallback title, the domain state, `invalidate()`); the rules are in `Rules`, the steps
/// in `EvaluationMachine`, and everything from outside comes in the environment.
///
///     let evaluation = PolicyEvaluation(environment: env)
///     if case .success = evaluation.preflight(.deviceOwnerAuthenticationWithBiometrics) {
///         switch evaluation.evaluate(.deviceOwnerAuthenticationWithBiometrics,
///                                    localizedReason: "run sudo") { … }
///     }
///
/// `@unchecked Sendable`, for Apple's one cross-thread call: `invalidate()` may come from
/// any thread while another evaluates, and touches only an atomic flag and a pipe made in
/// `init`. Everything else (the settable properties, a preflight, an evaluation) is for
/// one thread at a time, as the helper and localauthctl use it; a thread that waited for
/// an evaluation's end (a semaphore, a join) sees what it wrote.
public final class PolicyEvaluation: @unchecked Sendable {
    /// The fallback button's title: nil → the default ("Use Password"), `""` → not offered.
    public var localizedFallbackTitle: String?
    /// The cancel button's title: nil → the default.
    public var localizedCancelTitle: String?
    /// Seconds a fingerprint success on the same terminal is reused (at most 300).
    public var touchIDAuthenticationAllowableReuseDuration: Double {
        get { reuseDuration }
        set { reuseDuration = newValue.isFinite ? min(max(newValue, 0), Options.maxReuseDuration) : 0 }
    }
    /// The enrolled set's opaque hash: nil until a preflight or an evaluation succeeded with
    /// biometrics, nil when nothing is enrolled.
    public private(set) var evaluatedPolicyDomainState: [UInt8]?
    /// `.touchID` once a reader was found by a preflight or evaluation.
    public private(set) var biometryType: BiometryType = .none

    private var env: EvaluationEnvironment
    private var reuseDuration: Double
    /// Set once by `invalidate()`; read from the evaluating thread.
    private let invalidated = Atomic<Bool>(false)
    /// Written by `invalidate()` to wake an evaluation waiting for a finger. Made by the
    /// first evaluation that may wait (a preflight never does, and localauthd answers
    /// many); `invalidate()` writes to it only once it is there, and one made after an
    /// invalidation is written to as it is made.
    private let wakePipe = Mutex<(read: Int32, write: Int32)?>(nil)

    public init(environment: EvaluationEnvironment) {
        env = environment
        reuseDuration = min(max(environment.options.reuseDuration, 0), Options.maxReuseDuration)
        localizedFallbackTitle = environment.options.fallbackTitle
    }

    deinit {
        wakePipe.withLock { pipe in
            guard let pipe else { return }
            close(pipe.read)
            close(pipe.write)
        }
    }

    // MARK: - Preflight

    /// Whether `policy` can be evaluated now. Never prompts and never starts a scan.
    public func canEvaluatePolicy(_ policy: EvaluationPolicy, error: inout EvaluationError?) -> Bool {
        switch preflight(policy) {
        case .success: error = nil; return true
        case .failure(let e): error = e; return false
        }
    }

    /// The same preflight as a Swift result.
    public func preflight(_ policy: EvaluationPolicy) -> Result<Void, EvaluationError> {
        if invalidated.load(ordering: .acquiring) {
            return .failure(EvaluationError(.invalidContext, cause: "the context was invalidated"))
        }
        if env.system.hasUsablePassword(env.user) == false {
            return .failure(EvaluationError(.passcodeNotSet, cause: "the account has no usable password"))
        }
        // With a password to fall back on, the owner policy can always be evaluated.
        if policy == .deviceOwnerAuthentication && env.passwordVerifier != nil { return .success(()) }
        return biometricPreflight()
    }

    private func biometricPreflight() -> Result<Void, EvaluationError> {
        let rules = Rules(options)
        do {
            let stored = try env.store.load(env.user)
            switch rules.refusal(stored, now: env.clock.now(), bootID: env.system.bootID()) {
            case .error(let e)?: return .failure(e)
            case .notOptedIn?:
                return .failure(EvaluationError(.biometryNotAvailable, reason: .disabledByConfiguration,
                                        cause: "fingerprint login is turned off for this user"))
            case nil: break
            }
            let set = try env.sensor.enrolledSet(for: env.user.value)
            biometryType = .touchID
            let domain = try DomainState.compute(set, store: env.store)
            // A changed enrolled set does not fail the preflight, as on Apple's platforms:
            // the reader and a finger are there, and the domain state is the new set's, so
            // that an application comparing it with the one it stored sees the change
            // ("did the fingers change?"). The evaluation still refuses fingerprints until
            // the password (Rules.enrollmentRefusal): that is this system's rule, and a
            // preflight never decides a login.
            evaluatedPolicyDomainState = domain.map { Array($0.utf8) }
            return .success(())
        } catch let e as EvaluationError {
            return .failure(e)
        } catch {
            return .failure(EvaluationError(.biometryNotAvailable, cause: "state store: \(error)"))
        }
    }

    // MARK: - Evaluation

    /// Evaluates `policy`, blocking the calling thread until it ends.
    public func evaluate(_ policy: EvaluationPolicy, localizedReason: String)
        -> Result<EvaluationMachine.Outcome.Method, EvaluationError> {
        if invalidated.load(ordering: .acquiring) {
            return .failure(EvaluationError(.invalidContext, cause: "the context was invalidated"))
        }
        guard !localizedReason.isEmpty else {
            return .failure(EvaluationError(.appCancel, reason: .emptyReason,
                                    cause: "localizedReason must not be empty"))
        }
        env.ui?.show(.reason(localizedReason), error: false)
        switch run(policy) {
        case .success(let method): return .success(method)
        case .failure(let e): return .failure(e)
        case .notOptedIn:
            return .failure(EvaluationError(.biometryNotAvailable, reason: .disabledByConfiguration,
                                    cause: "fingerprint login is turned off for this user"))
        }
    }

    /// The outcome as the machine gives it, including `.notOptedIn` (for the PAM helper).
    public func run(_ policy: EvaluationPolicy) -> EvaluationMachine.Outcome {
        let runner = EvaluationRunner(env: runEnvironment())
        var machine = EvaluationMachine(
            policy: policy, rules: Rules(options), now: env.clock.now(), bootID: env.system.bootID(),
            terminal: env.terminal, passcodeSet: env.system.hasUsablePassword(env.user) != false,
            canAskPassword: env.passwordVerifier != nil && env.ui != nil,
            fallbackTitle: localizedFallbackTitle, localUnlock: env.localUnlock,
            dialogMatches: env.dialogMatch != nil)
        let outcome = runner.run(&machine)
        if case .success(let method) = outcome, method != .password {
            biometryType = .touchID
            evaluatedPolicyDomainState = runner.domainState.map { Array($0.utf8) }
        }
        return outcome
    }

    /// Apple's form: the reply gets `true` or the error.
    public func evaluatePolicy(_ policy: EvaluationPolicy, localizedReason: String,
                               reply: (Bool, EvaluationError?) -> Void) {
        switch evaluate(policy, localizedReason: localizedReason) {
        case .success: reply(true, nil)
        case .failure(let e): reply(false, e)
        }
    }

    /// Apple's async form.
    public func evaluatePolicy(_ policy: EvaluationPolicy, localizedReason: String) async throws(EvaluationError) -> Bool {
        switch evaluate(policy, localizedReason: localizedReason) {
        case .success: return true
        case .failure(let e): throw e
        }
    }

    /// Ends an evaluation in flight with `appCancel`; later calls fail with `invalidContext`.
    public func invalidate() {
        invalidated.store(true, ordering: .releasing)
        wakePipe.withLock { pipe in
            guard let pipe else { return }
            var byte: UInt8 = 1
            _ = write(pipe.write, &byte, 1)
        }
    }

    /// The wake pipe's read end, made now if it was not (-1 if it cannot be).
    private func wakeReadEnd() -> Int32 {
        wakePipe.withLock { pipe in
            if let pipe { return pipe.read }
            var fds: [Int32] = [-1, -1]
            guard la_pipe_cloexec_nonblock(&fds) == 0 else { return -1 }
            pipe = (fds[0], fds[1])
            if invalidated.load(ordering: .acquiring) {
                var byte: UInt8 = 1
                _ = write(fds[1], &byte, 1)
            }
            return fds[0]
        }
    }

    // MARK: - Helpers

    private var options: Options {
        var o = env.options
        o.reuseDuration = reuseDuration
        return o
    }

    /// The environment with the reuse duration set on this context and the invalidation pipe
    /// added to what may end a wait.
    private func runEnvironment() -> EvaluationEnvironment {
        var e = env
        e.options = options
        e.wakeSources.append(InvalidationSource(fd: wakeReadEnd()))
        return e
    }
}

/// Wakes a waiting evaluation when the context is invalidated.
private final class InvalidationSource: WakeSource {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    func interruption() -> EvaluationError? {
        EvaluationError(.appCancel, cause: "the context was invalidated during the evaluation")
    }
}
