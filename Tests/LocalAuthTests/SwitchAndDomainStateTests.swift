import Testing
@testable import LocalAuth

/// The seeds' domain-state detection and the settings switch.
@Suite struct SwitchAndDomainStateTests {
    static let one = EnrolledSet(deviceIdentity: "virtual_device/0", deviceName: "Virtual reader",
                                 fingers: ["right-index-finger"], printMaterial: [1])

    @Test func theDomainStateIsNilUntilAPreflightSucceeds() throws {
        let h = Harness()
        h.passwordEntered()
        let c = h.evaluation()
        #expect(c.evaluatedPolicyDomainState == nil)
        #expect(c.biometryType == .none)
        var error: EvaluationError?
        #expect(c.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(c.evaluatedPolicyDomainState != nil)
        #expect(c.biometryType == .touchID)
    }

    @Test func theDomainStateChangesOnEnrollDeleteAndReEnroll() throws {
        let h = Harness()
        func domain(_ set: EnrolledSet) throws -> String? { try DomainState.compute(set, store: h.store) }
        let base = try domain(Self.one)
        var added = Self.one
        added.fingers = ["left-thumb", "right-index-finger"]
        var reEnrolled = Self.one
        reEnrolled.printMaterial = [2]
        var otherReader = Self.one
        otherReader.deviceIdentity = "virtual_device/1"
        let none = EnrolledSet(deviceIdentity: "virtual_device/0", deviceName: "", fingers: [])

        #expect(base != nil)
        #expect(try domain(Self.one) == base)  // stable
        #expect(try domain(added) != base)
        #expect(try domain(reEnrolled) != base)
        #expect(try domain(otherReader) != base)
        #expect(try domain(none) == nil)  // nothing enrolled
        // Keyed per installation: another installation's secret gives another value.
        let other = Harness()
        #expect(try DomainState.compute(Self.one, store: other.store) != base)
    }

    @Test func aChangedEnrolledSetIsRefusedUntilThePassword() throws {
        let h = Harness()
        h.passwordEntered()
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
        h.sensor.enrolled = .success(EnrolledSet(deviceIdentity: "virtual_device/0", deviceName: "",
                                                 fingers: ["left-thumb", "right-index-finger"]))
        let r = h.evaluate(events: [.match])
        #expect(r.error?.reason == .enrollmentChanged)
        #expect(h.ui.texts.contains("Your enrolled fingerprints changed - enter your password to use them again"))
        #expect(h.sensor.scansStarted == 1)
        h.passwordEntered()
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }

    /// Apple's preflight after a finger is added: it still succeeds, and the domain state is
    /// the new set's, so the "did the fingers change?" comparison an application makes sees
    /// the change; the evaluation keeps this system's rule (no finger until the password).
    @Test func aChangedSetPassesThePreflightWithTheNewDomainStateButNotTheEvaluation() throws {
        let h = Harness()
        h.passwordEntered()
        let before = h.evaluation()
        var error: EvaluationError?
        #expect(before.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        let old = try #require(before.evaluatedPolicyDomainState)
        h.sensor.enrolled = .success(EnrolledSet(deviceIdentity: "virtual_device/0", deviceName: "",
                                                 fingers: ["left-thumb", "right-index-finger"]))
        let after = h.evaluation()
        #expect(after.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error == nil)
        let new = try #require(after.evaluatedPolicyDomainState)
        #expect(new != old)
        #expect(new == Array(try #require(try DomainState.compute(h.sensor.enrolled.get(), store: h.store)).utf8))
        #expect(h.sensor.scansStarted == 0)   // a preflight never scans
        #expect(h.evaluate(events: [.match]).error?.reason == .enrollmentChanged)
    }

    @Test func withTheSwitchRequiredTheUserMustTurnItOnWithAMatch() throws {
        let h = Harness()
        h.options.optIn = .required
        h.passwordEntered()
        let off = h.evaluation().run(.deviceOwnerAuthenticationWithBiometrics)
        #expect(off == .notOptedIn)
        #expect(h.sensor.scansStarted == 0)

        // Turning it on needs a live match: a wrong finger leaves it off.
        h.sensor.events = [.noMatch, .noMatch, .noMatch]
        #expect(SettingsSwitch.enable(h.environment()).error?.code == .authenticationFailed)
        #expect(!h.state.optedIn)
        h.passwordEntered()
        h.sensor.events = [.match]
        #expect(throws: Never.self) { try SettingsSwitch.enable(h.environment()).get() }
        #expect(h.state.optedIn)
        #expect(h.state.trustedDomainState != nil)
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }

    @Test func withTheSwitchAChangedSetNeedsThePasswordAndTheSwitchAgain() throws {
        let h = Harness()
        h.options.optIn = .required
        h.passwordEntered()
        h.sensor.events = [.match]
        try SettingsSwitch.enable(h.environment()).get()
        h.sensor.enrolled = .success(EnrolledSet(deviceIdentity: "virtual_device/0", deviceName: "",
                                                 fingers: ["left-thumb", "right-index-finger"]))
        #expect(h.evaluate(events: [.match]).error?.reason == .enrollmentChanged)
        #expect(h.ui.texts.contains("Your enrolled fingerprints changed - enter your password, then run `localauthctl enable`"))
        h.passwordEntered()  // the password alone does not trust the new set when a switch is required
        #expect(h.evaluate(events: [.match]).error?.reason == .enrollmentChanged)

        // Turning it on again needs the password (the set changed) and a match.
        h.ui.password = "wrong"
        h.sensor.events = [.match]
        #expect(SettingsSwitch.enable(h.environment(passwordVerifier: FixedPassword())).error?.reason == .enrollmentChanged)
        h.ui.password = "secret"
        h.sensor.events = [.match]
        try SettingsSwitch.enable(h.environment(passwordVerifier: FixedPassword())).get()
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }

    @Test func withTheSwitchOffTheOwnerPolicyThatChecksThePasswordAsksForIt() throws {
        let h = Harness()
        h.options.optIn = .required
        h.passwordEntered()
        h.ui.password = "wrong"
        let wrong = h.evaluate(.deviceOwnerAuthentication, events: [], verifier: FixedPassword())
        #expect(wrong.error?.code == .authenticationFailed)
        h.ui.password = "secret"
        #expect(try h.evaluate(.deviceOwnerAuthentication, events: [], verifier: FixedPassword()).get() == .password)
        #expect(h.sensor.scansStarted == 0)
        // Without a password check of its own (a PAM stack), the module still steps aside.
        #expect(h.evaluation().run(.deviceOwnerAuthentication) == .notOptedIn)
    }

    @Test func turningItOffNeedsAMatchOrThePassword() throws {
        let h = Harness()
        h.options.optIn = .required
        h.passwordEntered()
        h.sensor.events = [.match]
        try SettingsSwitch.enable(h.environment()).get()

        h.ui.password = "wrong"
        h.sensor.events = [.noMatch, .noMatch, .noMatch]
        #expect(SettingsSwitch.disable(h.environment(passwordVerifier: FixedPassword())).error != nil)
        #expect(h.state.optedIn)
        h.ui.password = "secret"
        h.sensor.events = [.timeout]
        try SettingsSwitch.disable(h.environment(passwordVerifier: FixedPassword())).get()
        #expect(!h.state.optedIn)
        #expect(h.evaluation().run(.deviceOwnerAuthenticationWithBiometrics) == .notOptedIn)
    }
}
