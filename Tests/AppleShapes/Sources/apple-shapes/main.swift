// apple-shapes: runs what the shapes need no fingerprint reader for, and prints one line a
// check; exits 1 if any failed. No root side is reachable (LOCALAUTH_SERVICE points
// nowhere), so every answer is one the library gives before or without it, whatever is installed.
import LocalAuthentication
import FoundationShapes
import ActorShapes
import PreconcurrencyShapes
import CompletionShapes

var failures = 0
func check(_ ok: Bool, _ what: String) {
    print("\(ok ? "ok" : "FAILED"): \(what)")
    if !ok { failures += 1 }
}

setenv("LOCALAUTH_SERVICE", "/nonexistent-apple-shapes/socket", 1)

// A preflight that fails before the root side is asked: its NSError, cast and caught.
let companion = PreflightRecord(context: LAContext(), policy: .deviceOwnerAuthenticationWithCompanion)
check(companion.error?.domain == LAErrorDomain && companion.error?.code == -11,
      "canEvaluatePolicy gives an NSError of LAErrorDomain, code -11")
check(companion.laError?.code == .companionNotAvailable, "error as? LAError after a failed preflight")
check(companion.offer == .nothing, "nothing offered without a companion")
if let error = companion.error {
    check(sort(error) == .noCompanion, "catch LAError.companionNotAvailable matches the preflight's NSError")
}

// A preflight the root side would answer: none here.
let missing = PreflightRecord(context: LAContext(), policy: .deviceOwnerAuthenticationWithBiometrics)
check(missing.laError?.code == .biometryNotAvailable, "no root side: biometryNotAvailable, as an LAError")
check(missing.domainState == nil, "no domain state after a failed preflight")
let advising: Advising = AppleSwitch()
check(advising.advice(for: missing.laError?.code ?? .userCancel) == "no reader",
      "the switch over Apple's cases takes biometryNotAvailable as touchIDNotAvailable")
check(advising.advice(for: .biometryLockout) == "locked out: use the password"
      && advising.advice(for: .companionNotAvailable) == "no companion", "the other aliases too")
check(currentNamesAreAliases, "the current names keep Apple's raw values")

// NSErrors made by the program, thrown and cast.
check(sort(NSError(domain: LAErrorDomain, code: -2)) == .cancelled, "catch LAError.userCancel matches an NSError")
check(sort(NSError(domain: LAErrorDomain, code: -8)) == .lockedOut, "catch LAError.biometryLockout matches an NSError")
check((NSError(domain: "other", code: -2) as Error) as? LAError == nil, "an NSError of another domain is no LAError")
check(sort(LAError(.userFallback)) == .fallback, "catch LAError.userFallback matches an LAError")

// The reply form, answered on a queue of the program's.
let replied = DispatchSemaphore(value: 0)
let queue = DispatchQueue(label: "apple-shapes.replies")
nonisolated(unsafe) var replyFailure: EvaluationFailure?
evaluate(LAContext(), policy: .deviceOwnerAuthenticationWithWristDetection, reason: "Open the vault", on: queue) { ok, failure in
    replyFailure = ok ? nil : failure
    replied.signal()
}
check(replied.wait(timeout: .now() + 10) == .success && replyFailure == .noCompanion,
      "evaluatePolicy's reply: companionNotAvailable, sorted by catch")

// The main actor's view model (Swift 6 language mode).
let model = UnlockModel()
await model.unlock(.deviceOwnerAuthenticationWithCompanion, reason: "Open the vault")
check(!model.unlocked && model.lastCode == .companionNotAvailable, "await evaluatePolicy from @MainActor")
await model.unlock(.deviceOwnerAuthenticationWithBiometrics, reason: "Open the vault")
check(!model.unlocked && model.lastCode == .biometryNotAvailable, "await evaluatePolicy without a root side")
model.lock()
await model.unlock(.deviceOwnerAuthenticationWithBiometrics, reason: "Open the vault")
check(model.lastCode == .invalidContext, "after invalidate: invalidContext")
do {
    _ = try await model.secret("", reason: "Read the vault's key")
    check(false, "a right with an empty identifier")
} catch LAError.invalidContext {
    check(true, "the secret's path (rawData) fails where a right is asked for, before the root side")
} catch {
    check(false, "the secret's path: \(error)")
}

// @preconcurrency import: a context in a Sendable value, used in the reply.
let done = DispatchSemaphore(value: 0)
nonisolated(unsafe) var preconcurrencyCode: Int?
ContextHolder().evaluateOnce(.deviceOwnerAuthenticationWithCompanion, reason: "Open the vault") { _, code in
    preconcurrencyCode = code
    done.signal()
}
check(done.wait(timeout: .now() + 10) == .success && preconcurrencyCode == -11, "the holder's reply: -11")

// A lock screen's class that is not Sendable, captured in the reply (Swift 6 language mode,
// plain import: warnings, as with Apple's SDK). The reply still comes, on another queue.
let gate = LockGate()
let settled = DispatchSemaphore(value: 0)
nonisolated(unsafe) var gateCode: Int?
gate.unlock(LAContext(), policy: .deviceOwnerAuthenticationWithCompanion, reason: "Unlock") { _, error in
    gateCode = (error as NSError?)?.code
    settled.signal()
}
check(settled.wait(timeout: .now() + 10) == .success && gateCode == -11 && gate.isLocked,
      "a non-Sendable class captured in the reply: -11, still locked")
let rightStore = LARightStore.shared
gate.find(rightStore, "") { right in
    gateCode = right == nil ? (gate.lastError as NSError?)?.code : 0
    settled.signal()
}
check(settled.wait(timeout: .now() + 10) == .success && gateCode == LAError.invalidContext.rawValue,
      "a non-Sendable class captured in a rights completion: invalidContext before the root side")

print(failures == 0 ? "apple-shapes: all checks passed" : "apple-shapes: \(failures) checks failed")
exit(failures == 0 ? 0 : 1)
