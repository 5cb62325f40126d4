import LocalAuth
import SystemEvents

/// `localauthctl verify [USER]`: one fingerprint check exactly as the module makes it — a
/// biometrics evaluation with the real state store, so a failed match counts toward the
/// lockout like any other (a check that did not count would let anyone try fingers for
/// free), and a lockout or a password rule refuses it as it would refuse a login. Prints
/// each message as it comes and the outcome last: `match` or a code's name.
enum VerifyCommand {
    static let spec = CommandSpec(
        name: "verify", synopsis: "verify [USER]",
        summary: "check a finger as a login would (failed matches count toward the lockout)",
        help: """
        Scans a finger of USER (default: you) with the rules of a login: up to max_tries
        failed matches, each counted toward the lockout; refused while locked out, when the
        password is required first (reboot, idle, stale, never used), when the enrolled set
        changed, or when fingerprint login is off. Prints each message as it comes and the
        outcome on the last line: `match`, or the LAError name and the rule that applied
        (authenticationFailed, biometryLockout lockout, biometryLockout never-used: the
        password was never entered, which is no lockout). Ctrl-C cancels. Needs root for now: the state directory is
        root's.
        """,
        flags: Flag.common + [.scanTimeout], run: run)

    static func run(_ inv: Invocation) -> Int32 {
        let named: String?
        switch inv.userArgument() {
        case .success(let n): named = n
        case .failure(let e): return fail(spec, e)
        }
        let account: Account
        switch targetAccount(named, what: "checking another user's finger") {
        case .success(let a): account = a
        case .failure(let e): return fail(spec, e)
        }
        guard callerIsRoot else {
            return fail(spec, .permission(
                tr(cliLanguage, "needs root for now: a failed match is counted in the state directory, which is root's")))
        }
        let options: Options
        switch inv.options(log: StderrLog()) {
        case .success(let o): options = o
        case .failure(let e): return fail(spec, e)
        }
        let language = messageLanguage()
        let ui = TerminalUI(language: language)
        let interrupt = interruptDescriptor()
        var env = EvaluationEnvironment(
            user: account.name, terminal: "", sensor: makeSensor(options, log: ToolLog.shared),
            store: FileStateStore(directory: options.stateDir), options: options, ui: ui,
            log: ToolLog.shared, wakeSources: interrupt >= 0 ? [InterruptSource(fd: interrupt)] : [],
            language: language)
        // A lockout that begins here is audited (the evaluation's `lockoutBegan` action).
        env.events = SecurityRecord(program: "localauthctl", log: ToolLog.shared)
        env.eventContext = EventContext(service: "localauthctl verify", actorUID: getuidValue())
        let evaluation = PolicyEvaluation(environment: env)
        evaluation.localizedFallbackTitle = ""  // no password here: Ctrl-C cancels
        let outcome = evaluation.run(.deviceOwnerAuthenticationWithBiometrics)
        ui.finish()
        ToolLog.shared.log(.info, "verify user=\(account.name) uid=\(getuidValue()) \(outcome.logText)")
        switch outcome {
        case .success:
            say("match")
            return Exit.ok
        case .notOptedIn:
            say("notOptedIn")
            warn("verify: " + tr(cliLanguage, "fingerprint login is off for %s (localauthctl enable)", account.name))
            return Exit.refused
        case .failure(let error):
            // biometryLockout is Apple's one code for the lockout and every "password first"
            // rule: the reason names which (`biometryLockout never-used` is no lockout, and
            // status says "locked out: no").
            say(error.reason.key.isEmpty ? error.code.name : "\(error.code.name) \(error.reason.key)")
            warn("verify: \(describe(error, language, figures: Rules(options).figures))")
            return Exit.of(error)
        }
    }
}
