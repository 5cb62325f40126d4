#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import SystemEvents

/// `localauthctl enable` / `disable`: the settings switch (`SettingsSwitch`) for the
/// calling user, or for `--user` when root runs it. Turning it on needs a live match, and
/// the password as well when the enrolled set changed since it was trusted — or when a
/// rule (lockout, reboot, idle, stale, never used) requires the password before any finger,
/// which the password then lifts as a login would. Turning it off needs a match or the
/// password. The password is checked through libpam (service `localauthctl`).
enum SwitchCommand {
    static let enableSpec = CommandSpec(
        name: "enable", synopsis: "enable [USER]",
        summary: "turn fingerprint login on (a live match; the password when needed)",
        help: """
        Turns fingerprint login on for you (with opt_in = required in localauth.conf, the
        module steps aside for users who have not). Needs a live match of one of your
        enrolled fingers ("Waiting for your finger..." while the reader is on), and your
        password as well when the enrolled fingers changed since they were trusted, or when
        the password is required first (locked out, after a reboot, idle, stale, never
        used): the password, checked through PAM service `localauthctl`, then lifts that as
        a login would. Records the enrolled set as trusted.
        Needs root for now, because the switch is kept in the root-only state directory:
        `sudo localauthctl enable NAME`. localauthctl itself is never setuid.
        With opt_in = optional every user's fingerprints are used anyway: enable then
        changes nothing, says so and exits 2.
        """,
        flags: Flag.common + [.scanTimeout], run: { run($0, on: true) })

    static let disableSpec = CommandSpec(
        name: "disable", synopsis: "disable [USER]",
        summary: "turn fingerprint login off (a live match or the password)",
        help: """
        Turns fingerprint login off for you: with opt_in = required the module then steps
        aside for you, and the trusted enrolled set is forgotten. Needs a live match or,
        when that fails or is refused, your password (PAM service `localauthctl`).
        Needs root for now, like enable: `sudo localauthctl disable NAME`. With
        opt_in = optional the module scans every enrolled user whatever the switch says:
        disable then changes nothing, says so and exits 2.
        """,
        flags: Flag.common + [.scanTimeout], run: { run($0, on: false) })

    static func run(_ inv: Invocation, on: Bool) -> Int32 {
        let spec = on ? enableSpec : disableSpec
        let named: String?
        switch inv.userArgument() {
        case .success(let n): named = n
        case .failure(let e): return fail(spec, e)
        }
        let account: Account
        switch targetAccount(named, what: "changing another user's fingerprint login") {
        case .success(let a): account = a
        case .failure(let e): return fail(spec, e)
        }
        guard callerIsRoot else {
            return fail(spec, .permission(tr(cliLanguage, "needs root for now: the switch is kept in the root-only state directory (sudo localauthctl %s %s)", spec.name, account.name)))
        }
        let options: Options
        switch inv.options(log: StderrLog()) {
        case .success(let o): options = o
        case .failure(let e): return fail(spec, e)
        }
        if options.optIn == .optional {
            // The switch only matters with opt_in = required: saying "off" here while the
            // module keeps scanning would be a lie.
            let config = inv.value(.config) ?? ConfigFile.installedPath
            warn("\(spec.name): " + (on
                ? tr(cliLanguage, "nothing to change: opt_in = optional in %s, so fingerprint login is on for every user with enrolled fingers, %s included, whatever the switch says (set opt_in = required to let users turn it on)", config, account.name)
                : tr(cliLanguage, "nothing to change: opt_in = optional in %s, so fingerprint login is on for every user with enrolled fingers, %s included, whatever the switch says (set opt_in = required to let users turn it off)", config, account.name)))
            return Exit.refused
        }
        let language = messageLanguage()
        let ui = TerminalUI(language: language)
        let verifier = ConfirmedOnce(PamPasswordVerifier())
        let interrupt = interruptDescriptor()
        let env = EvaluationEnvironment(
            user: account.name, sensor: makeSensor(options, log: ToolLog.shared),
            store: FileStateStore(directory: options.stateDir), options: options, ui: ui,
            passwordVerifier: verifier, log: ToolLog.shared,
            wakeSources: interrupt >= 0 ? [InterruptSource(fd: interrupt)] : [], language: language)

        say(on ? tr(cliLanguage, "Turning fingerprint login on for %s.", account.name)
               : tr(cliLanguage, "Turning fingerprint login off for %s.", account.name))
        var result: Result<Void, EvaluationError>
        if on, let blocked = passwordFirst(env, ui: ui, verifier: verifier) {
            result = .failure(blocked)
        } else {
            result = on ? SettingsSwitch.enable(env) : SettingsSwitch.disable(env)
        }
        ui.finish()

        let who = "by uid \(getuidValue())"
        switch result {
        case .success:
            ToolLog.shared.log(.notice, "fingerprint login turned \(on ? "on" : "off") for \(account.name) \(who)")
            say(on ? tr(cliLanguage, "Fingerprint login is on for %s.", account.name)
                   : tr(cliLanguage, "Fingerprint login is off for %s.", account.name))
            return Exit.ok
        case .failure(let error):
            ToolLog.shared.log(.info, "\(spec.name) user=\(account.name) uid=\(getuidValue()) failed: \(error.logText)")
            if verifier.rejected {
                warn("\(spec.name): " + tr(cliLanguage, "the password was not accepted (%s); fingerprint login is unchanged",
                                             verifier.pam.lastFailure ?? "refused"))
                return Exit.failed
            }
            warn("\(spec.name): " + tr(cliLanguage, "%s; fingerprint login is unchanged",
                                         describe(error, language, figures: Rules(options).figures)))
            return Exit.of(error)
        }
    }

    /// Before enabling: a lockout or a password rule refuses every finger until the
    /// password is entered. Asks for it, checks it, and records it as a login's `authsucc`
    /// line would. nil when nothing stood in the way or the password lifted it.
    static func passwordFirst(_ env: EvaluationEnvironment, ui: TerminalUI, verifier: ConfirmedOnce) -> EvaluationError? {
        let rules = Rules(env.options)
        let stored: StoredState
        do {
            stored = try env.store.load(env.user)
        } catch {
            return EvaluationError(.biometryNotAvailable, cause: "state store: \(error)")
        }
        guard case .error(let refusal)? = rules.refusal(stored, now: env.clock.now(), bootID: env.system.bootID())
        else { return nil }
        if case .failedAttempts(let n) = refusal.reason {
            ui.show(.lockedOut(threshold: n), error: true)
        } else {
            ui.show(.passwordRequired(refusal.reason, rules.figures), error: true)
        }
        guard var password = ui.askPassword(prompt: UserMessage.passwordPrompt.text(env.language)) else {
            return EvaluationError(.userCancel, cause: "no password entered")
        }
        defer { Crypto.wipe(&password) }
        guard verifier.verify(user: env.user, password: password) else { return refusal }
        do {
            try PasswordRecord.record(env: env, rules: rules, domainState: nil)
        } catch {
            return EvaluationError(.biometryNotAvailable, cause: "could not record the password: \(error)")
        }
        ui.passwordConfirmed = true
        if case .failedAttempts = refusal.reason, case .state(let s) = stored {
            SecurityRecord(program: "localauthctl", log: ToolLog.shared)
                .lockoutCleared(env.user, failures: s.consecutiveFailures, by: .password,
                                context: EventContext(service: "localauthctl enable", actorUID: getuidValue()))
        }
        return nil
    }
}

/// The password is checked once per run: after one success, later checks for the same
/// user in this run pass without asking again (enable may need it for two reasons).
final class ConfirmedOnce: PasswordVerifier {
    let pam: PamPasswordVerifier
    private var confirmed: UserName?
    /// A password was entered and refused in this run.
    private(set) var rejected = false

    init(_ pam: PamPasswordVerifier) { self.pam = pam }

    func verify(user: UserName, password: [UInt8]) -> Bool {
        if confirmed == user { return true }
        guard pam.verify(user: user, password: password) else {
            rejected = true
            return false
        }
        confirmed = user
        return true
    }
}
