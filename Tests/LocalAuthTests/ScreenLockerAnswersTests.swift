import Testing
@testable import LocalAuth

/// Plasma's lock screen's answers (ScreenLockerAnswers): every outcome of a `kde-fingerprint`
/// request, the `kde` stack standing aside, and every other service left as it is.
@Suite struct ScreenLockerAnswersTests {
    typealias Outcome = EvaluationMachine.Outcome

    static func answer(_ outcome: Outcome, _ locker: ScreenLocker = .plasmaWorker,
                       service: String = "kde-fingerprint") -> ScreenLockerAnswers.Answer? {
        ScreenLockerAnswers.answer(outcome, locker: locker, service: service)
    }

    static func failure(_ code: EvaluationError.Code, _ reason: EvaluationError.Reason = .none) -> Outcome {
        .failure(EvaluationError(code, reason: reason, cause: "test"))
    }

    // MARK: kde stands aside

    @Test(arguments: ScreenLocker.allCases)
    func thePasswordStackStandsAsideAtOnce(_ locker: ScreenLocker) {
        let aside = ScreenLockerAnswers.standAside(locker, service: "kde")
        #expect(aside?.code == .notInteractive)  // PAM_AUTHINFO_UNAVAIL: common-auth goes on to the password
        #expect(aside?.reason == .besideFingerStack)
        #expect(aside?.reason.key == "finger-stack-beside")
    }

    @Test(arguments: ["kde-fingerprint", "kde-smartcard", "sudo", "KDE", ""])
    func noOtherServiceStandsAside(_ service: String) {
        #expect(ScreenLockerAnswers.standAside(.plasmaWorker, service: service) == nil)
    }

    // MARK: kde-fingerprint

    @Test(arguments: ScreenLocker.allCases)
    func aMatchIsAMatchAtOnce(_ locker: ScreenLocker) {
        let a = Self.answer(.success(.fingerprint), locker)
        #expect(a?.outcome == .success(.fingerprint))
        #expect(a?.notBeforeMillis == 0)
    }

    @Test func wrongFingersAreAFailureAsTheyCame() {
        let a = Self.answer(Self.failure(.authenticationFailed, .none))
        #expect(a?.outcome == Self.failure(.authenticationFailed))
        #expect(a?.notBeforeMillis == 0)
        #expect(a?.rule == "wrong-finger")
    }

    static let holding: [Outcome] = [
        .notOptedIn,
        failure(.biometryLockout, .failedAttempts(5)),
        failure(.biometryLockout, .passwordRequiredAfterReboot),
        failure(.biometryLockout, .passwordRequiredAfterIdle),
        failure(.biometryLockout, .passwordRequiredStale),
        failure(.biometryLockout, .passwordNeverUsed),
        failure(.biometryLockout, .stateUnreadable),
        failure(.biometryLockout, .enrollmentChanged),
        failure(.biometryNotEnrolled),
        failure(.biometryNotAvailable, .readerUnreachable),
        failure(.biometryNotAvailable, .disabledByConfiguration),
        failure(.biometryNotAvailable, .configurationUntrusted),
        failure(.biometryNotAvailable, .lidClosed),
        failure(.passcodeNotSet),
        failure(.notInteractive, .remoteSessionOpen),
        failure(.notInteractive, .remoteLoginSinceUnlock),
        failure(.notInteractive, .notActive),
        failure(.notInteractive, .noSession),
        failure(.invalidContext),
    ]

    /// Said once: PAM_AUTHINFO_UNAVAIL with no wait, which both 6.3 and 6.4's worker (within
    /// 250 ms) take as "unavailable until this lock ends".
    @Test(arguments: holding)
    func aRefusalThatHoldsUntilThePasswordIsSaidAtOnceAsUnavailable(_ outcome: Outcome) {
        let a = Self.answer(outcome)
        #expect(a?.outcome == outcome)
        #expect(a?.notBeforeMillis == 0)
        #expect(a?.rule == "holds")
        if case .failure(let e) = outcome {
            #expect(Self.moduleAnswersUnavailable(e.code))
        }
    }

    static let transient: [Outcome] = [
        failure(.systemCancel, .scanTimeout),
        failure(.systemCancel, .readerBusy),
        failure(.systemCancel, .sessionLocked),
        failure(.systemCancel),
        failure(.biometryDisconnected),
        failure(.userCancel),
        failure(.appCancel),
        failure(.userFallback),
    ]

    /// Not before 250 ms (6.4 would turn the finger off for the lock) and a failure (6.3
    /// would too, on PAM_AUTHINFO_UNAVAIL): the worker asks again.
    @Test(arguments: transient)
    func noFingerNowThatDoesNotHoldIsAFailureNotBeforeTheThreshold(_ outcome: Outcome) {
        let a = Self.answer(outcome)
        guard case .failure(let original) = outcome, case .failure(let given)? = a?.outcome else {
            Issue.record("not a failure")
            return
        }
        #expect(given.code == .authenticationFailed)
        #expect(given.reason == original.reason)
        #expect((a?.notBeforeMillis ?? 0) > 250)
        #expect(a?.rule == "again")
    }

    @Test func everyCodeIsEitherHoldingOrNot() {
        for code in EvaluationError.Code.allCases where code != .authenticationFailed {
            let a = Self.answer(Self.failure(code))
            #expect(a?.rule == "holds" || a?.rule == "again")
            #expect(a?.rule != "holds" || Self.moduleAnswersUnavailable(code))
        }
    }

    @Test(arguments: ["kde", "kde-smartcard", "sudo", ""])
    func otherServicesOfTheLockerAreLeftAsTheyAre(_ service: String) {
        #expect(Self.answer(Self.failure(.systemCancel, .scanTimeout), service: service) == nil)
    }

    /// The module's table (`result_map.c`): the codes it answers with PAM_AUTHINFO_UNAVAIL.
    static func moduleAnswersUnavailable(_ code: EvaluationError.Code) -> Bool {
        ![EvaluationError.Code.authenticationFailed, .userCancel, .appCancel].contains(code)
    }
}
