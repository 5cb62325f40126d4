import Foundation
import Testing
@testable import LocalAuthentication

/// LAContext's behaviour that needs no root side: the reply on a private queue, invalidate,
/// task cancellation, the refusals that come before the root side is asked. Everything the
/// root side decides is tested for real in Tests/integration/test_app_api.py.
@Suite(.serialized) struct LAContextTests {
    init() {
        // No root side here: an evaluation that got that far would fail as not available.
        setenv("LOCALAUTH_SERVICE", "/nonexistent-localauth-prefix/socket", 1)
    }

    /// Apple's reply comes later, on another queue: the call returns first.
    @Test func evaluatePolicyReturnsBeforeItRepliesOnAPrivateQueue() {
        let context = LAContext()
        let returned = DispatchSemaphore(value: 0)
        let replied = DispatchSemaphore(value: 0)
        let outcome = Box()
        context.evaluatePolicy(.deviceOwnerAuthenticationWithCompanion, localizedReason: "test") { ok, error in
            // Called inside evaluatePolicy, this would wait for ever for the signal below.
            outcome.set(returned.wait(timeout: .now() + 5) == .success, ok, error)
            replied.signal()
        }
        returned.signal()
        #expect(replied.wait(timeout: .now() + 10) == .success)
        #expect(outcome.afterReturn)
        #expect(outcome.ok == false)
        #expect((outcome.error as NSError?)?.code == LAError.companionNotAvailable.rawValue)
    }

    @Test func theRootSideMissingIsBiometryNotAvailableNeverSuccess() {
        var error: NSError?
        #expect(!LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.domain == LAErrorDomain && error?.code == LAError.biometryNotAvailable.rawValue)
        #expect(!LAContext().canEvaluatePolicy(.deviceOwnerAuthentication, error: nil))
    }

    /// localauthd is the only way to the root side, for root too (these tests run as root):
    /// with no socket the evaluation says so, and starts no helper of its own.
    @Test func withoutTheServiceAnEvaluationSaysSoAndStartsNothing() async {
        do {
            _ = try await LAContext().evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "x")
            Issue.record("no error")
        } catch {
            let ns = error as NSError
            #expect(ns.code == LAError.biometryNotAvailable.rawValue)
            let debug = ns.userInfo["NSDebugDescription"] as? String ?? ""
            #expect(debug.hasPrefix("localauthd is not running (no socket at /nonexistent-localauth-prefix/socket)"),
                    "\(debug)")
        }
    }

    @Test func anInvalidatedContextRefusesEverything() async {
        let context = LAContext()
        context.invalidate()
        var error: NSError?
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == LAError.invalidContext.rawValue)
        do {
            _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "x")
            Issue.record("no error")
        } catch LAError.invalidContext {
        } catch {
            Issue.record("wrong error \(error)")
        }
    }

    @Test func aCancelledTaskEndsWithAppCancel() async {
        let context = LAContext()
        // LAContext is not Sendable (as on Apple's): the task reaches it through a box.
        let shared = SharedContext(context)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await shared.context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "x")
        }
        do {
            _ = try await task.value
            Issue.record("no error")
        } catch {
            #expect((error as? LAError)?.code == .appCancel)
        }
        // The context itself stays usable (unlike invalidate).
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        var error: NSError?
        _ = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
        #expect(error?.code == LAError.biometryNotAvailable.rawValue)
    }

    @Test func whatFailsBeforeTheRootSideIsAsked() async {
        let context = LAContext()
        await #expect {
            try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "")
        } throws: { ($0 as? LAError)?.code == .appCancel }
        context.interactionNotAllowed = true
        await #expect {
            try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "x")
        } throws: { ($0 as? LAError)?.code == .notInteractive }
        var error: NSError?
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithWristDetection, error: &error))
        #expect(error?.code == LAError.companionNotAvailable.rawValue)
    }

    @Test func propertiesKeepApplesBoundsAndDefaults() {
        let context = LAContext()
        #expect(context.biometryType == .none)
        #expect(context.evaluatedPolicyDomainState == nil)
        #expect(context.domainState.biometry.stateHash == nil && context.domainState.stateHash == nil)
        #expect(context.domainState.companion.availableCompanionTypes.isEmpty)
        context.touchIDAuthenticationAllowableReuseDuration = 1000
        #expect(context.touchIDAuthenticationAllowableReuseDuration == LATouchIDAuthenticationMaximumAllowableReuseDuration)
        context.touchIDAuthenticationAllowableReuseDuration = -1
        #expect(context.touchIDAuthenticationAllowableReuseDuration == 0)
        #expect(!context.isCredentialSet(.applicationPassword))
        #expect(context.setCredential(Data([1]), type: .applicationPassword))
        #expect(context.isCredentialSet(.applicationPassword))
    }

    /// The preflight's NSError casts to LAError, as on Apple's.
    @Test func aFailedPreflightsErrorIsAnLAError() {
        var error: NSError?
        #expect(!LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithCompanion, error: &error))
        #expect((error as? LAError)?.code == .companionNotAvailable)
        #expect(!LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect((error as? LAError)?.code == .biometryNotAvailable)
    }

    /// Apple: the domain state is there after a success with a finger's policy, "nil
    /// otherwise": a later failed preflight or a password's success clears it.
    @Test func theDomainStateIsNilAgainAfterAFailureOrThePassword() async {
        let state = Data(repeating: 7, count: 32)
        let context = LAContext()
        context.record(AppResult(error: nil, domainState: state, biometry: .touchID), biometry: true)
        #expect(context.evaluatedPolicyDomainState == state)
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        #expect(context.evaluatedPolicyDomainState == nil)

        context.record(AppResult(error: nil, domainState: state), biometry: false)
        context.record(AppResult(error: nil, domainState: nil), biometry: false)  // the password
        #expect(context.evaluatedPolicyDomainState == nil)

        context.record(AppResult(error: nil, domainState: state), biometry: false)
        await #expect(throws: LAError.self) {
            try await context.evaluatePolicy(.deviceOwnerAuthenticationWithCompanion, localizedReason: "x")
        }
        #expect(context.evaluatedPolicyDomainState == nil)
    }

    /// Seed 001 subclasses LAContext.
    @Test func aSubclassIsAnLAContext() {
        final class Wrapper: LAContext { let label = "wrapper" }
        let w = Wrapper()
        w.localizedFallbackTitle = ""
        let asContext: LAContext = w
        #expect(asContext.localizedFallbackTitle == "")
        #expect(!w.canEvaluatePolicy(.deviceOwnerAuthenticationWithCompanion, error: nil))
    }
}

/// A context handed to a task the test then keeps using. `@unchecked Sendable`: the task
/// runs one evaluation and ends before the test touches the context again.
private final class SharedContext: @unchecked Sendable {
    let context: LAContext
    init(_ context: LAContext) { self.context = context }
}

/// A reply's arguments. `@unchecked Sendable`: written under `lock`, read after the test
/// waited for the reply.
private final class Box: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var afterReturn = false
    private(set) var ok = true
    private(set) var error: Error?

    func set(_ afterReturn: Bool, _ ok: Bool, _ error: Error?) {
        lock.withLock {
            self.afterReturn = afterReturn
            self.ok = ok
            self.error = error
        }
    }
}
