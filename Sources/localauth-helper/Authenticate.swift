import FprintdClient
import LocalAuth
import LocalAuthProtocol

/// `mode=authenticate`: the first line of the stack. Runs the policy with the fprintd
/// sensor and the file store; the password itself is left to the stack's next module.
enum Authenticate {
    static func run(_ request: HelperRequest, options: Options, channel: FrameChannel,
                    log: LogSink) -> EvaluationMachine.Outcome {
        if let refusal = Presence.refusal(request, options: options) { return .failure(refusal) }
        let ui = FrameUI(channel: channel, language: request.language,
                         style: promptStyle(request, options), silent: request.silent, log: log)
        if !options.reason.isEmpty { ui.show(.reason(options.reason), error: false) }
        let env = LAEnvironment(
            user: request.user, terminal: ReuseScope.of(request),
            sensor: FprintdSensor(address: options.dbusAddress, busTimeout: options.busTimeout,
                                  fprintDir: options.fprintDir, log: log),
            store: FileStateStore(directory: options.stateDir),
            options: options, ui: ui, log: log,
            wakeSources: [ModuleWakeSource(channel: channel, ui: ui,
                                           fallbackOffered: options.fallbackTitle != "")],
            language: request.language)
        let policy: LAPolicy = options.policy == .biometrics
            ? .deviceOwnerAuthenticationWithBiometrics : .deviceOwnerAuthentication
        let outcome = LAContext(environment: env).run(policy)
        return settle(outcome, ui: ui)
    }

    /// A prompt on a terminal we can end ourselves gets Enter-to-skip (or the concurrent
    /// prompt when configured); anything else gets messages, or the concurrent prompt that
    /// needs Enter after the touch.
    static func promptStyle(_ request: HelperRequest, _ options: Options) -> PromptStyle {
        let terminal = request.stdinTTY
            ? TerminalInput(path: request.ttyDevicePath ?? TerminalInput.standardInput(of: request.callerPID),
                            callerPID: request.callerPID, owner: request.terminalOwner) : nil
        switch (options.prompt, terminal) {
        case (.concurrent, let t): return .concurrent(t)
        case (.sequential, let t?): return options.fallbackTitle == "" ? .messages : .enterToSkip(t)
        case (.sequential, nil): return .messages
        }
    }

    /// The prompt still open is ended before the result goes back. A password typed at
    /// the concurrent prompt while the finger failed is the next module's to check.
    private static func settle(_ outcome: EvaluationMachine.Outcome, ui: FrameUI) -> EvaluationMachine.Outcome {
        var matched = false
        if case .success = outcome { matched = true }
        let answer = ui.settle(matched: matched)
        if !matched, answer == .noAnswer {
            return .failure(LAError(.appCancel, cause: "the conversation failed at the prompt"))
        }
        return outcome
    }
}

/// `mode=authsucc`: the line after the password module. The password succeeded in this
/// PAM handle, so the lockout is cleared and the password time and boot recorded.
enum AuthSucc {
    static func run(_ request: HelperRequest, options: Options, log: LogSink) -> Frame {
        guard request.firstLine else {
            return HelperResult.frame(code: LAError.Code.invalidContext.rawValue, name: "invalidContext",
                                      cause: "authsucc without the first line in this handle: nothing changed")
        }
        let store = FileStateStore(directory: options.stateDir)
        let env = LAEnvironment(
            user: request.user,
            sensor: FprintdSensor(address: options.dbusAddress, busTimeout: options.busTimeout,
                                  fprintDir: options.fprintDir, log: log),
            store: store, options: options, log: log)
        do {
            try PasswordRecord.record(env: env, rules: Rules(options), domainState: currentDomain(env, options))
            return HelperResult.frame(code: 0, name: "success", cause: "password recorded, lockout cleared")
        } catch {
            return HelperResult.frame(code: LAError.Code.biometryNotAvailable.rawValue,
                                      name: "biometryNotAvailable", cause: "could not record the password: \(error)")
        }
    }

    /// Without a required switch, the password re-trusts the enrolled set seen now; when it
    /// cannot be read, the trusted set stays as it was.
    private static func currentDomain(_ env: LAEnvironment, _ options: Options) -> String? {
        guard options.optIn == .optional else { return nil }
        do {
            return try DomainState.compute(try env.sensor.enrolledSet(for: env.user.value), store: env.store)
        } catch {
            env.log.log(.info, "enrolled set not read after the password: \(error)")
            return nil
        }
    }
}
