// Only LocalAuthentication (and the test library): Foundation's names come with it, as
// they come with Apple's module.
import Testing
import LocalAuthentication

@Suite struct AppleModuleTests {
    @Test func foundationComesWithTheModule() {
        let started = Date()
        let bytes = Data([1, 2, 3])
        let error = NSError(domain: LAErrorDomain, code: LAError.userCancel.rawValue)
        let queue = DispatchQueue(label: "apple-module-tests")
        let done: Bool = queue.sync { true }
        #expect(done && bytes.count == 3 && error.code == -2 && Date() >= started)
    }

    /// The async calls run on the caller's actor (`nonisolated(nonsending)`, as Swift 6.2
    /// imports Apple's): a main-actor type awaits them with its own non-Sendable context in
    /// the Swift 6 language mode. That this compiles is the test; the run checks the answer.
    @Test @MainActor func aMainActorTypeAwaitsItsOwnContext() async {
        let model = Model()
        #expect(await model.evaluate() == .companionNotAvailable)
    }
}

@MainActor
private final class Model {
    let context = LAContext()

    func evaluate() async -> LAError.Code? {
        do {
            _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithCompanion, localizedReason: "test")
            return nil
        } catch let error as LAError {
            return error.code
        } catch {
            return nil
        }
    }
}
