#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth
import LocalAuthProtocol

/// PolicyEvaluation's contract: the reason, invalidation, preflight without scanning.
@Suite struct PolicyEvaluationTests {
    @Test func anEmptyReasonIsAnErrorNotACrash() {
        let h = Harness()
        h.passwordEntered()
        let r = h.evaluation().evaluate(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "")
        #expect(r.error?.reason == .emptyReason)
        #expect(h.sensor.calls.isEmpty)
    }

    @Test func theReasonIsShownFirst() {
        let h = Harness()
        h.passwordEntered()
        _ = h.evaluate(events: [.match])
        #expect(h.ui.shown.first == .reason("run sudo"))
    }

    @Test func invalidateEndsAnEvaluationInFlightWithAppCancel() {
        let h = Harness()
        h.passwordEntered()
        h.sensor.events = [.woken(-1)]  // wait until something wakes the sensor
        let c = h.evaluation()
        let waiter = BackgroundEvaluation(c)
        while !h.sensor.calls.contains("nextEvent") { usleep(1000) }
        c.invalidate()
        let r = waiter.value()
        #expect(r.error?.code == .appCancel)
        #expect(h.sensor.calls.suffix(2) == ["stopVerify", "release"])
        // Later calls fail with invalidContext.
        #expect(c.evaluate(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "x").error?.code == .invalidContext)
        var error: EvaluationError?
        #expect(!c.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == .invalidContext)
    }

    /// invalidate() (like Ctrl-C or the caller going away) arriving while the reader waits,
    /// with `verdict` already reported by the reader (or none).
    private func cancelledWhileScanning(_ h: Harness, verdict: SensorEvent?)
        -> Result<EvaluationMachine.Outcome.Method, EvaluationError> {
        h.sensor.events = [.woken(-1)]
        h.sensor.verdictAtStop = verdict
        let c = h.evaluation()
        let before = h.sensor.calls.filter { $0 == "nextEvent" }.count
        let waiter = BackgroundEvaluation(c)
        while h.sensor.calls.filter({ $0 == "nextEvent" }).count == before { usleep(1000) }
        c.invalidate()
        return waiter.value()
    }

    @Test func aFailedMatchThatRacedTheCancelStillCounts() {
        let h = Harness()
        h.passwordEntered()
        #expect(cancelledWhileScanning(h, verdict: .noMatch).error?.code == .appCancel)
        #expect(h.state.consecutiveFailures == 1)
    }

    @Test func aFifthFailedMatchThatRacedTheCancelLocksOut() {
        let h = Harness()
        h.passwordEntered()
        for _ in 0..<4 { _ = h.evaluate(events: [.noMatch]) }
        #expect(h.state.consecutiveFailures == 4)
        #expect(cancelledWhileScanning(h, verdict: .noMatch).error?.code == .biometryLockout)
        #expect(h.state.consecutiveFailures == 5)
    }

    @Test func aMatchThatRacedTheCancelIsAMatch() {
        let h = Harness()
        h.passwordEntered()
        _ = h.evaluate(events: [.noMatch, .timeout])
        #expect(h.state.consecutiveFailures == 1)
        #expect(cancelledWhileScanning(h, verdict: .match).error == nil)
        #expect(h.state.consecutiveFailures == 0)
    }

    @Test func aCancelWithNoVerdictGivesTheTryBack() {
        let h = Harness()
        h.passwordEntered()
        #expect(cancelledWhileScanning(h, verdict: nil).error?.code == .appCancel)
        #expect(h.state.consecutiveFailures == 0)
    }

    @Test func thePreflightNeverStartsAScan() {
        let h = Harness()
        h.passwordEntered()
        var error: EvaluationError?
        #expect(h.evaluation().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error == nil)
        #expect(h.sensor.calls == ["enrolledSet"])
        #expect(h.ui.shown.isEmpty)
    }

    @Test func thePreflightReportsTheSensorsErrors() {
        let h = Harness()
        h.passwordEntered()
        var error: EvaluationError?
        h.sensor.enrolled = .failure(EvaluationError(.biometryNotEnrolled))
        #expect(!h.evaluation().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == .biometryNotEnrolled)
        h.sensor.enrolled = .failure(EvaluationError(.biometryNotAvailable, cause: "no reader"))
        #expect(!h.evaluation().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == .biometryNotAvailable)
        // With a password to fall back on, the owner policy stays available.
        #expect(h.evaluation(passwordVerifier: FixedPassword()).canEvaluatePolicy(.deviceOwnerAuthentication, error: &error))
    }

    @Test func aBusyReaderIsSaidInOneLineAndEndsAtOnce() {
        let h = Harness()
        h.passwordEntered()
        h.sensor.claimError = EvaluationError(.systemCancel, reason: .readerBusy, cause: "AlreadyInUse")
        let r = h.evaluate(events: [.match])
        #expect(r.error?.code == .systemCancel)
        #expect(h.ui.texts.contains("The fingerprint reader is in use by another session - use your password"))
        #expect(h.sensor.scansStarted == 0)
    }

    @Test func otherTransactionsTriesInFlightAtABusyReaderAreNoLockout() {
        // Four other prompts' tries are counted while fprintd answers this one's Claim: the
        // count reaches the threshold, but the reader is busy, and that is what is said.
        let h = Harness()
        h.passwordEntered()
        h.sensor.claimError = EvaluationError(.systemCancel, reason: .readerBusy, cause: "AlreadyInUse")
        failuresReachFiveWhileClaiming(h)
        let r = h.evaluate(events: [.match])
        #expect(r.error?.code == .systemCancel)
        #expect(r.error?.reason == .readerBusy)
        #expect(h.ui.texts.contains("The fingerprint reader is in use by another session - use your password"))
        #expect(h.sensor.scansStarted == 0)
        #expect(h.state.consecutiveFailures == 5)  // this try wrote nothing, gave nothing back
    }

    @Test func aLockoutReachedWhileClaimingAFreeReaderIsALockout() {
        let h = Harness()
        h.passwordEntered()
        failuresReachFiveWhileClaiming(h)
        let r = h.evaluate(events: [.match])
        #expect(r.error?.code == .biometryLockout)
        #expect(h.sensor.scansStarted == 0)
        #expect(h.sensor.calls.contains("awaitClaim"))
    }

    /// fprintd answers the Claim later, and meanwhile other prompts' counted tries bring
    /// the stored failures to the threshold.
    private func failuresReachFiveWhileClaiming(_ h: Harness) {
        h.sensor.answersLater = true
        h.sensor.whileClaiming = {
            try! h.store.update(h.user) { stored in
                var s = stored.userState
                s.consecutiveFailures = 5
                return s
            }
        }
    }

    @Test func aDisconnectedReaderEndsWithBiometryDisconnected() {
        let h = Harness()
        h.passwordEntered()
        let r = h.evaluate(events: [.disconnected])
        #expect(r.error?.code == .biometryDisconnected)
        #expect(h.sensor.calls.last == "release")
        #expect(h.state.consecutiveFailures == 0)
    }

    @Test func theDaemonLeavingEndsWithItsErrorAndReleases() {
        let h = Harness()
        h.passwordEntered()
        let r = h.evaluate(events: [.failed(EvaluationError(.biometryNotAvailable, cause: "fprintd left the bus"))])
        #expect(r.error?.code == .biometryNotAvailable)
        #expect(h.sensor.calls.suffix(2) == ["stopVerify", "release"])
    }

    /// The one table both sides use (ResultCode), written out here: every code of Apple's
    /// SDK with its raw value, and its name as the result frame and the log lines spell it.
    @Test func errorCodesKeepApplesRawValuesAndNames() {
        let expected: [(ResultCode, Int, String)] = [
            (.authenticationFailed, -1, "authenticationFailed"), (.userCancel, -2, "userCancel"),
            (.userFallback, -3, "userFallback"), (.systemCancel, -4, "systemCancel"),
            (.passcodeNotSet, -5, "passcodeNotSet"), (.biometryNotAvailable, -6, "biometryNotAvailable"),
            (.biometryNotEnrolled, -7, "biometryNotEnrolled"), (.biometryLockout, -8, "biometryLockout"),
            (.appCancel, -9, "appCancel"), (.invalidContext, -10, "invalidContext"),
            (.companionNotAvailable, -11, "companionNotAvailable"), (.biometryNotPaired, -12, "biometryNotPaired"),
            (.biometryDisconnected, -13, "biometryDisconnected"), (.invalidDimensions, -14, "invalidDimensions"),
            (.notInteractive, -1004, "notInteractive")]
        #expect(EvaluationError.Code.allCases.count == expected.count)
        for (code, raw, name) in expected {
            #expect(code.rawValue == raw)
            #expect(code.name == name)
        }
        #expect(ResultCode.successValue == 0 && ResultCode.notOptedInValue == 1)
        #expect(Set(expected.map(\.1)).isDisjoint(with: [ResultCode.successValue, ResultCode.notOptedInValue]))
        #expect(EvaluationPolicy.deviceOwnerAuthenticationWithBiometrics.rawValue == 1)
        #expect(EvaluationPolicy.deviceOwnerAuthentication.rawValue == 2)
    }

    @Test func everyErrorIsDescribedInEachLanguage() {
        #expect(Catalogues.ready)
        for code in EvaluationError.Code.allCases {
            let texts = Language.allCases.map { EvaluationError(code).localizedDescription($0) }
            #expect(texts.allSatisfy { !$0.isEmpty })
            #expect(Set(texts).count == 3, "\(code) has a missing translation")
        }
        #expect(EvaluationError(.biometryLockout).localizedDescription(.simplifiedChinese) == "指纹已锁定：请先输入密码。")
        #expect(EvaluationError(.biometryLockout).localizedDescription(.traditionalChinese) == "指紋已鎖定：請先輸入密碼。")
    }

    @Test func theLanguageIsPickedFromTheLocale() {
        #expect(Catalogues.ready)
        #expect(Language(localeIdentifier: "zh_CN.UTF-8") == .simplifiedChinese)
        #expect(Language(localeIdentifier: "zh_SG") == .simplifiedChinese)
        #expect(Language(localeIdentifier: "zh_TW.UTF-8") == .traditionalChinese)
        #expect(Language(localeIdentifier: "zh_HK") == .traditionalChinese)
        #expect(Language(localeIdentifier: "zh-Hant") == .traditionalChinese)
        #expect(Language(localeIdentifier: "en_US.UTF-8") == .english)
        #expect(Language(localeIdentifier: "C") == .english)
        #expect(Language(localeIdentifier: "") == .english)
        #expect(UserMessage.lockedOut(threshold: 5).text(.simplifiedChinese) == "连续 5 次失败，指纹已锁定——请输入密码解锁")
        #expect(UserMessage.placeFinger(finger: "right-index-finger", scanType: .swipe).text(.traditionalChinese)
                == "請在指紋讀取器上劃動右手食指")
    }

    @Test func languageIsChosenAsGettextChoosesIt() {
        #expect(Catalogues.ready)
        func pick(_ language: String?, _ all: String?, _ messages: String?, _ lang: String?) -> Language {
            Language(language: language, lcAll: all, lcMessages: messages, lang: lang)
        }
        #expect(pick("zh_TW", nil, nil, "en_US.UTF-8") == .traditionalChinese)   // LANGUAGE first
        #expect(pick("de:zh_TW:en", nil, nil, "de_DE.UTF-8") == .traditionalChinese)  // first we have
        #expect(pick("zh_TW", nil, nil, "C") == .english)          // C: LANGUAGE ignored
        #expect(pick("zh_TW", nil, nil, nil) == .english)          // no locale is C
        #expect(pick(nil, "zh_CN.UTF-8", "zh_TW.UTF-8", "en_US") == .simplifiedChinese)  // LC_ALL
        #expect(pick(nil, nil, "zh_TW.UTF-8", "en_US") == .traditionalChinese)            // LC_MESSAGES
        #expect(pick("", "", "", "zh_HK.UTF-8") == .traditionalChinese)
        // Plural forms come from the catalogue: English has two, Chinese one.
        #expect(UserMessage.notRecognized(triesLeft: 1).text(.english) == "Fingerprint not recognized - 1 try left")
        #expect(UserMessage.notRecognized(triesLeft: 2).text(.english) == "Fingerprint not recognized - 2 tries left")
        #expect(UserMessage.notRecognized(triesLeft: 2).text(.traditionalChinese) == "指紋未能識別——還可嘗試 2 次")
        // Languages can follow each other in one process.
        #expect(UserMessage.matched.text(.simplifiedChinese) == "指纹已识别")
        #expect(UserMessage.matched.text(.english) == "Fingerprint recognized")
        #expect(UserMessage.matched.text(.traditionalChinese) == "指紋已識別")
        #expect(Catalog.format("%1$s 必须是%2$s，而不是“%3$s”", ["a", "b", "c"]) == "a 必须是b，而不是“c”")
        #expect(Catalog.format("100%% of %s", ["x"]) == "100% of x")
    }
}
