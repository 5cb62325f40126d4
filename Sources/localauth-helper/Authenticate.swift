import FprintdClient
import LocalAuth
import LocalAuthProtocol

/// `mode=authenticate`: the first line of the stack. Runs the policy with the fprintd
/// sensor and the file store; the password itself is left to the stack's next module.
enum Authenticate {
    static func run(_ request: HelperRequest, options: Options, channel: FrameChannel,
                    log: LogSink) -> EvaluationMachine.Outcome {
        if let refusal = Presence.refusal(request) { return .failure(refusal) }
        let ui = FrameUI(channel: channel, language: request.language)
        if !options.reason.isEmpty { ui.show(.reason(options.reason), error: false) }
        let env = LAEnvironment(
            user: request.user, terminal: request.tty,
            sensor: FprintdSensor(address: options.dbusAddress, busTimeout: options.busTimeout,
                                  fprintDir: options.fprintDir, log: log),
            store: FileStateStore(directory: options.stateDir),
            options: options, ui: ui, log: log,
            wakeSources: [ModuleWakeSource(channel: channel, fallbackOffered: options.fallbackTitle != "")],
            language: request.language)
        let policy: LAPolicy = options.policy == .biometrics
            ? .deviceOwnerAuthenticationWithBiometrics : .deviceOwnerAuthentication
        return LAContext(environment: env).run(policy)
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
