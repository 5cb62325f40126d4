/// The seeds' settings switch: a user turns fingerprint login on or off for themselves.
/// Turning it on needs a live match and records the enrolled set's domain state; if the set
/// changed since it was last trusted, the password is needed first as well. Turning it off
/// needs a match or the password.
public enum SettingsSwitch {
    public static func enable(_ env: EvaluationEnvironment) -> Result<Void, EvaluationError> {
        let rules = Rules(env.options)
        let stored: StoredState
        let domain: String?
        do {
            stored = try env.store.load(env.user)
            domain = try DomainState.compute(try env.sensor.enrolledSet(for: env.user.value), store: env.store)
        } catch let e as EvaluationError {
            return .failure(e)
        } catch {
            return .failure(EvaluationError(.biometryNotAvailable, cause: "state store: \(error)"))
        }
        // A changed set is trusted again only with the password (someone else's finger may
        // have been added).
        if rules.enrollmentRefusal(stored.userState, current: domain) != nil {
            guard passwordConfirmed(env) else {
                return .failure(EvaluationError(.biometryNotAvailable, reason: .enrollmentChanged,
                                        cause: "the enrolled set changed and the password was not confirmed"))
            }
        }
        return liveMatch(env).flatMap { matched in
            record(env) { s in
                s.optedIn = true
                s.trustedDomainState = matched ?? domain
            }
        }
    }

    public static func disable(_ env: EvaluationEnvironment) -> Result<Void, EvaluationError> {
        let confirmed: Result<Void, EvaluationError>
        switch liveMatch(env) {
        case .success: confirmed = .success(())
        case .failure(let e):
            confirmed = passwordConfirmed(env) ? .success(()) : .failure(e)
        }
        return confirmed.flatMap {
            record(env) { s in
                s.optedIn = false
                s.trustedDomainState = nil
            }
        }
    }

    /// A biometrics evaluation that skips the switch and the trusted-set check (they are
    /// what is being changed) but keeps the lockout and every password precondition.
    /// Returns the domain state it matched against.
    static func liveMatch(_ env: EvaluationEnvironment) -> Result<String?, EvaluationError> {
        var e = env
        e.options.optIn = .optional
        e.passwordVerifier = nil
        let runner = EvaluationRunner(env: e)
        var machine = EvaluationMachine(
            policy: .deviceOwnerAuthenticationWithBiometrics, rules: Rules(e.options),
            now: e.clock.now(), bootID: e.system.bootID(), terminal: "",
            passcodeSet: e.system.hasUsablePassword(e.user) != false,
            canAskPassword: false, fallbackTitle: "", checkTrust: false)
        switch runner.run(&machine) {
        case .success: return .success(runner.domainState)
        case .failure(let error): return .failure(error)
        case .notOptedIn: return .failure(EvaluationError(.invalidContext, cause: "switch check skipped"))
        }
    }

    private static func passwordConfirmed(_ env: EvaluationEnvironment) -> Bool {
        guard let ui = env.ui, let verifier = env.passwordVerifier,
              var password = ui.askPassword(prompt: UserMessage.passwordPrompt.text(env.language)) else { return false }
        defer { Crypto.wipe(&password) }
        return verifier.verify(user: env.user, password: password)
    }

    private static func record(_ env: EvaluationEnvironment, _ change: @escaping (inout UserState) -> Void)
        -> Result<Void, EvaluationError> {
        var damage: String?
        do {
            try env.store.update(env.user) { stored in
                if case .damaged(let cause) = stored {
                    damage = cause  // only the password rewrites a damaged file
                    return nil
                }
                var s = stored.userState
                change(&s)
                return s
            }
            if let damage {
                return .failure(EvaluationError(.biometryLockout, reason: .stateUnreadable, cause: damage))
            }
            return .success(())
        } catch {
            return .failure(EvaluationError(.biometryNotAvailable, cause: "state store: \(error)"))
        }
    }
}
