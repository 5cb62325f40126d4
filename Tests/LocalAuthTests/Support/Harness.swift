import Dispatch
@testable import LocalAuth
import Synchronization

/// One user's world for a test: a scripted reader, a real file store in a temp directory,
/// a clock the test moves, and a UI that records what the user saw.
final class Harness {
    let dir = TempDir()
    let sensor = ScriptedSensor()
    let clock = FixedClock(1_800_000_000)
    let system = FakeSystem()
    let ui = RecordingUI()
    let log = MemoryLog()
    let user = try! UserName("alice")
    var options = Options()
    lazy var store = FileStateStore(directory: dir.path + "/state")

    deinit { dir.remove() }

    func environment(passwordVerifier: PasswordVerifier? = nil, terminal: String = "/dev/pts/1") -> EvaluationEnvironment {
        EvaluationEnvironment(user: user, terminal: terminal, sensor: sensor, store: store, clock: clock,
                              system: system, options: options, ui: ui,
                              passwordVerifier: passwordVerifier, log: log)
    }

    func evaluation(passwordVerifier: PasswordVerifier? = nil, terminal: String = "/dev/pts/1") -> PolicyEvaluation {
        PolicyEvaluation(environment: environment(passwordVerifier: passwordVerifier, terminal: terminal))
    }

    /// The user types the password at the stack's password module (the `authsucc` line).
    func passwordEntered() {
        let set = try! sensor.enrolled.get()
        let domain = try! DomainState.compute(set, store: store)
        try! PasswordRecord.record(env: environment(), rules: Rules(options), domainState: domain)
    }

    /// One biometrics evaluation with the given sensor events.
    func evaluate(_ policy: EvaluationPolicy = .deviceOwnerAuthenticationWithBiometrics,
                  events: [SensorEvent], verifier: PasswordVerifier? = nil,
                  terminal: String = "/dev/pts/1") -> Result<EvaluationMachine.Outcome.Method, EvaluationError> {
        sensor.events = events
        return evaluation(passwordVerifier: verifier, terminal: terminal)
            .evaluate(policy, localizedReason: "run sudo")
    }

    var state: UserState { try! store.load(user).userState }

    func hours(_ h: Double) { clock.time += Int64(h * 3600) }
}

/// An evaluation on a thread of its own (not the test runner's cooperative pool, which the
/// tests' waiting loops would otherwise starve when suites run in parallel).
final class BackgroundEvaluation: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let result = Mutex<Result<EvaluationMachine.Outcome.Method, EvaluationError>?>(nil)

    init(_ evaluation: PolicyEvaluation, _ policy: EvaluationPolicy = .deviceOwnerAuthenticationWithBiometrics) {
        DispatchQueue.global().async {
            let outcome = evaluation.evaluate(policy, localizedReason: "x")
            self.result.withLock { $0 = outcome }
            self.done.signal()
        }
    }

    func value() -> Result<EvaluationMachine.Outcome.Method, EvaluationError> {
        done.wait()
        return result.withLock { $0! }
    }
}

extension Result {
    var error: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
