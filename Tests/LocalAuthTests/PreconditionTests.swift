import Testing
@testable import LocalAuth

/// Apple's Platform Security rules: when the password must come before any fingerprint.
@Suite struct PreconditionTests {
    @Test func aUserNeverSeenEntersThePasswordFirst() throws {
        let h = Harness()
        let r = h.evaluate(events: [.match])
        #expect(r.error?.code == .biometryLockout)
        #expect(r.error?.reason == .passwordNeverUsed)
        #expect(h.sensor.scansStarted == 0)
        #expect(h.ui.texts.contains("Your password is required before fingerprints can be used"))
        h.passwordEntered()
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }

    @Test func aConfigurationThatCannotBeTrustedMeansNoFingerAtAll() throws {
        // Not the defaults in place of the site's policy: no scan, whatever the state.
        let h = Harness()
        h.passwordEntered()
        h.options.untrustedConfiguration = "/etc/security/localauth.conf has mode 0664: its group can write it"
        let r = h.evaluate(events: [.match])
        #expect(r.error?.code == .biometryNotAvailable)
        #expect(r.error?.reason == .configurationUntrusted)
        #expect(r.error?.cause.hasSuffix("its group can write it") == true)
        #expect(h.sensor.scansStarted == 0)
        #expect(h.ui.texts.contains { $0.hasPrefix("Fingerprint sign-in is off: its configuration file cannot be trusted") })
        // It comes before every rule of the account's (nothing about the account is said).
        var lockedOut = UserState()
        lockedOut.consecutiveFailures = 9
        let locked = Rules(h.options).refusal(.state(lockedOut), now: 0, bootID: nil)
        guard case .error(let e)? = locked else { Issue.record("no refusal"); return }
        #expect(e.reason == .configurationUntrusted)
        h.options.untrustedConfiguration = nil
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }

    @Test func thePasswordIsRequiredAfterARestart() throws {
        let h = Harness()
        h.passwordEntered()
        h.system.boot = "boot-2"
        let r = h.evaluate(events: [.match])
        #expect(r.error?.code == .biometryLockout)
        #expect(r.error?.reason == .passwordRequiredAfterReboot)
        #expect(h.ui.texts.contains("Your password is required after a restart"))
        h.passwordEntered()
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }

    @Test func theRestartRuleCanBeTurnedOff() throws {
        let h = Harness()
        h.options.passwordAfterReboot = false
        h.passwordEntered()
        h.system.boot = "boot-2"
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }

    @Test func thePasswordIsRequiredAfter48HoursWithoutAnySuccess() throws {
        let h = Harness()
        h.passwordEntered()
        h.hours(3)
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
        h.hours(47.9)  // 47.9 h after the fingerprint: still fine
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
        h.hours(48.1)
        let r = h.evaluate(events: [.match])
        #expect(r.error?.reason == .passwordRequiredAfterIdle)
    }

    @Test func theMessagesStateTheConfiguredHours() throws {
        #expect(Catalogues.ready)
        let h = Harness()
        h.options.passwordAfterIdleHours = 24
        h.passwordEntered()
        h.hours(25)
        let r = h.evaluate(events: [.match])
        #expect(r.error?.reason == .passwordRequiredAfterIdle)
        #expect(h.ui.texts.contains("Your password is required after 24 hours without signing in"))
        let figures = Rules(h.options).figures
        let idle = UserMessage.passwordRequired(.passwordRequiredAfterIdle, figures)
        #expect(idle.text(.simplifiedChinese) == "24 小时未登录，需要输入密码")
        #expect(idle.text(.traditionalChinese) == "24 小時未登入，需要輸入密碼")
        var o = Options()
        o.passwordStaleHours = 100
        o.fingerprintStaleHours = 2.5
        let stale = UserMessage.passwordRequired(.passwordRequiredStale, Rules(o).figures)
        #expect(stale.text(.english).contains("100 hours") && stale.text(.english).contains("2.5 hours"))
        for language in Language.allCases {
            for text in [idle.text(language), stale.text(language)] {
                #expect(!text.contains("48") && !text.contains("156"), "\(language): \(text)")
            }
        }
    }

    @Test func thePasswordIsRequiredAfter156HoursWithoutItAndFourWithoutAFinger() throws {
        let h = Harness()
        h.passwordEntered()
        // Daily fingerprint use keeps the 48 h rule happy…
        for _ in 0..<6 {
            h.hours(24)
            #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
        }
        h.hours(3)  // 147 h since the password, 3 h since the finger
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
        h.hours(10)  // 157 h since the password, 10 h since the finger
        #expect(h.evaluate(events: [.match]).error?.reason == .passwordRequiredStale)
        h.passwordEntered()
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }

    @Test func theStaleRuleSparesARecentFinger() throws {
        let h = Harness()
        h.passwordEntered()
        for _ in 0..<40 {  // every 4 hours for 160 hours
            h.hours(4)
            #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
        }
    }

    @Test func anAccountWithoutAUsablePasswordGetsNoFingerprint() {
        let h = Harness()
        h.passwordEntered()
        h.system.usablePassword = false
        #expect(h.evaluate(events: [.match]).error?.code == .passcodeNotSet)
        var error: EvaluationError?
        #expect(!h.evaluation().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == .passcodeNotSet)
        #expect(h.sensor.scansStarted == 0)
    }

    @Test func aFingerprintIsReusedOnlyOnTheSameTerminalWithinTheWindow() throws {
        let h = Harness()
        h.options.reuseDuration = 60
        h.passwordEntered()
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
        h.clock.time += 30
        #expect(try h.evaluate(events: []).get() == .reused)
        #expect(h.evaluate(events: [], terminal: "/dev/pts/9").error?.code == .systemCancel)  // new scan timed out
        h.clock.time += 31
        #expect(h.evaluate(events: []).error?.reason == .scanTimeout)
        #expect(h.sensor.scansStarted == 3)
    }

    @Test func theReuseWindowIsOffByDefaultAndClampedTo300Seconds() throws {
        let h = Harness()
        h.passwordEntered()
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
        #expect(h.evaluate(events: []).error?.reason == .scanTimeout)

        let c = h.evaluation()
        #expect(c.touchIDAuthenticationAllowableReuseDuration == 0)
        c.touchIDAuthenticationAllowableReuseDuration = 10_000
        #expect(c.touchIDAuthenticationAllowableReuseDuration == 300)
        c.touchIDAuthenticationAllowableReuseDuration = -5
        #expect(c.touchIDAuthenticationAllowableReuseDuration == 0)
    }

    @Test func aDamagedStateFileIsALockoutUntilThePassword() throws {
        let h = Harness()
        h.passwordEntered()
        try StoreFixtures.write(h.store.path(h.user, ".state"), "garbage\n")
        let r = h.evaluate(events: [.match])
        #expect(r.error?.code == .biometryLockout)
        #expect(r.error?.reason == .stateUnreadable)
        #expect(h.log.contains("cannot be trusted"))
        #expect(h.sensor.scansStarted == 0)
        h.passwordEntered()
        #expect(try h.evaluate(events: [.match]).get() == .fingerprint)
    }
}
