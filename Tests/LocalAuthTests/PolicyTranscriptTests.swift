import Testing
@testable import LocalAuth

/// The seeds' scenarios and DESIGN §2's rules, read as transcripts: an event, what the
/// user saw, what was recorded.
@Suite struct PolicyTranscriptTests {
    @Test func aMatchSucceedsAndResetsTheCount() throws {
        let h = Harness()
        h.passwordEntered()
        let r = h.evaluate(events: [.match])
        #expect(try r.get() == .fingerprint)
        #expect(h.state.consecutiveFailures == 0)
        #expect(h.state.lastFingerprintAt == h.clock.time)
        #expect(h.ui.texts.contains("Place your right index finger on the fingerprint reader"))
    }

    @Test func threeFailuresEndThePromptThenTwoMoreLockOutAndThePasswordUnlocks() throws {
        let h = Harness()
        h.passwordEntered()

        // Prompt 1: three wrong fingers.
        let first = h.evaluate(events: [.noMatch, .noMatch, .noMatch])
        #expect(first.error?.code == .authenticationFailed)
        #expect(h.state.consecutiveFailures == 3)
        #expect(h.ui.texts.contains("Fingerprint not recognized - 2 tries left"))
        #expect(h.ui.texts.contains("Fingerprint not recognized - 1 try left"))
        #expect(h.sensor.scansStarted == 3)

        // Prompt 2: two more reach the lockout, with one try left shown after the fourth.
        let second = h.evaluate(events: [.noMatch, .noMatch, .match])
        #expect(second.error?.code == .biometryLockout)
        #expect(second.error?.reason == .failedAttempts(5))
        #expect(h.state.consecutiveFailures == 5)
        #expect(h.ui.texts.contains("Fingerprint locked after 5 failed attempts - enter your password to unlock"))
        #expect(h.sensor.scansStarted == 5)

        // Locked: the preflight says so and no scan starts, even with the right finger ready.
        var error: EvaluationError?
        #expect(!h.evaluation().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == .biometryLockout)
        #expect(h.evaluate(events: [.match]).error?.code == .biometryLockout)
        #expect(h.sensor.scansStarted == 5)

        // The password clears it; the next finger works.
        h.passwordEntered()
        #expect(h.state.consecutiveFailures == 0)
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }

    @Test func retryResultsAreShownButNotCounted() throws {
        let h = Harness()
        h.passwordEntered()
        let events: [SensorEvent] = RetryKind.allCases.map { .retry($0) } + [.noMatch, .retry(.tooFast), .match]
        #expect(try h.evaluate(events: events).get() == .fingerprint)
        #expect(h.ui.texts.contains("Scan incomplete - try again"))
        #expect(h.ui.texts.contains("Swipe too short - try again"))
        #expect(h.ui.texts.contains("Fingerprint not recognized - 2 tries left"))
        #expect(h.sensor.scansStarted == 2)
        #expect(h.state.consecutiveFailures == 0)
    }

    @Test func aMatchResetsTheConsecutiveCount() throws {
        let h = Harness()
        h.passwordEntered()
        _ = h.evaluate(events: [.noMatch, .noMatch, .noMatch])
        #expect(try h.evaluate(events: [.noMatch, .match]).get() == .fingerprint)
        #expect(h.state.consecutiveFailures == 0)
        // Five more are needed now, not one.
        #expect(h.evaluate(events: [.noMatch, .noMatch, .noMatch]).error?.code == .authenticationFailed)
    }

    @Test func theOwnerPolicyFallsToThePassword() throws {
        let h = Harness()
        h.passwordEntered()
        let r = h.evaluate(.deviceOwnerAuthentication, events: [.noMatch, .noMatch, .noMatch],
                           verifier: FixedPassword())
        #expect(try r.get() == .password)
        #expect(h.ui.passwordPrompts == 1)
        #expect(h.state.consecutiveFailures == 0)  // the password cleared the three failures
    }

    @Test func theOwnerPolicyGoesStraightToThePasswordDuringLockout() throws {
        let h = Harness()
        h.passwordEntered()
        _ = h.evaluate(events: [.noMatch, .noMatch, .noMatch])
        _ = h.evaluate(events: [.noMatch, .noMatch])
        let scans = h.sensor.scansStarted
        let r = h.evaluate(.deviceOwnerAuthentication, events: [.match], verifier: FixedPassword())
        #expect(try r.get() == .password)
        #expect(h.sensor.scansStarted == scans)
        h.ui.password = "wrong"
        _ = h.evaluate(events: [.noMatch, .noMatch, .noMatch])
        _ = h.evaluate(events: [.noMatch, .noMatch])
        let wrong = h.evaluate(.deviceOwnerAuthentication, events: [], verifier: FixedPassword())
        #expect(wrong.error?.code == .authenticationFailed)
        #expect(h.state.consecutiveFailures == 5)  // a wrong password clears nothing
    }

    @Test func theOwnerPolicyWithoutAPasswordCheckLeavesThePasswordToTheStack() throws {
        let h = Harness()
        h.passwordEntered()
        let r = h.evaluate(.deviceOwnerAuthentication, events: [.noMatch, .noMatch, .noMatch])
        #expect(r.error?.code == .authenticationFailed)
        #expect(h.ui.passwordPrompts == 0)
    }

    @Test func eachTryIsCountedBeforeTheReaderStartsAndGivenBackWithoutAFinger() throws {
        let h = Harness()
        h.passwordEntered()
        var seen: [Int] = []
        h.sensor.whileWaiting = { seen.append(h.state.consecutiveFailures) }
        // While the reader waits the try already counts: a helper killed now leaves it counted.
        _ = h.evaluate(events: [.noMatch, .retry(.tooFast), .timeout])
        #expect(seen == [1, 2, 2])
        #expect(h.state.consecutiveFailures == 1)  // the timed-out try was given back
        seen = []
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
        #expect(seen == [2])
        #expect(h.state.consecutiveFailures == 0)
    }

    @Test func cancellingGivesTheTryBack() throws {
        let h = Harness()
        h.passwordEntered()
        _ = h.evaluate(events: [.noMatch, .failed(EvaluationError(.biometryNotAvailable, cause: "fprintd left"))])
        #expect(h.state.consecutiveFailures == 1)
        _ = h.evaluate(events: [.disconnected])
        #expect(h.state.consecutiveFailures == 1)
    }

    @Test func lockoutCountsAcrossContextsServicesAndRestarts() throws {
        let h = Harness()
        h.passwordEntered()
        for _ in 0..<4 {
            // A new context and a new store object each time: the count lives in the file.
            _ = h.evaluate(events: [.noMatch, .timeout])
        }
        #expect(try FileStateStore(directory: h.store.directory).load(h.user) == h.store.load(h.user))
        #expect(h.state.consecutiveFailures == 4)
        #expect(h.evaluate(events: [.noMatch]).error?.code == .biometryLockout)
    }
}
