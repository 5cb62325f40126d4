import FprintdClient
import LocalAuth
import LocalAuthProtocol
import SystemEvents

/// `mode=authenticate`: the first line of the stack. Runs the policy with the fprintd
/// sensor and the file store; the password itself is left to the stack's next module.
enum Authenticate {
    static func run(_ request: HelperRequest, options configured: Options, channel: FrameChannel,
                    log: LogSink) -> EvaluationMachine.Outcome {
        let started = MonotonicClock.millis()
        guard let locker = ScreenLockerCaller.of(request) else {
            return evaluate(request, options: configured, channel: channel, log: log)
        }
        // Plasma's lock screen: its password stack stands aside at once, its fingerprint
        // stack's answers are shaped for its worker (ScreenLockerAnswers).
        if let aside = ScreenLockerAnswers.standAside(locker, service: request.service) { return .failure(aside) }
        let outcome = evaluate(request, options: configured, channel: channel, log: log)
        return ScreenLockerCaller.shape(outcome, locker: locker, service: request.service, started: started, log: log)
    }

    private static func evaluate(_ request: HelperRequest, options configured: Options, channel: FrameChannel,
                                 log: LogSink) -> EvaluationMachine.Outcome {
        let presence = Presence.judge(request, options: configured, log: log)
        Catalog.load(request.language)  // before the start-up's thread exists
        if let refusal = presence.refusal { return refused(refusal, request, channel: channel, log: log) }
        // localauthd's word that came before the scan (its user's lock screen asks): no claim.
        if let stop = SleepSignal.pendingStop() { return refused(stop, request, channel: channel, log: log) }
        // Someone may be at the reader: the bus start-up runs from here, alongside the local
        // work (the terminal, the boot id, the shadow entry, the state file).
        let sensor = FprintdSensor(address: configured.dbusAddress, busTimeout: configured.busTimeout,
                                   fprintDir: configured.fprintDir, log: log)
        sensor.prepare(user: request.user.value)
        defer { sensor.close() }
        var options = configured
        if !ctrlCSkips(request) { options.fallbackTitle = "" }
        let ui = FrameUI(channel: channel, language: request.language,
                         style: promptStyle(request, options), silent: request.silent,
                         announcesMatch: PolkitAgent.of(request) == nil, isOwner: { request.callerIsTheUser }, log: log)
        if !options.reason.isEmpty { ui.show(.reason(options.reason), error: false) }
        var env = EvaluationEnvironment(
            user: request.user, terminal: ReuseScope.of(request),
            sensor: sensor,
            store: FileStateStore(directory: options.stateDir),
            options: options, ui: ui, log: log,
            wakeSources: [ModuleWakeSource(channel: channel, ui: ui,
                                           fallbackOffered: options.fallbackTitle != "")]
                + (presence.watch.map { [$0] } ?? []) + (SleepSignal.wakeSource().map { [$0] } ?? []),
            language: request.language)
        // What the evaluation does beyond itself, as the machine's actions: a lockout that
        // begins is audited, a success at the machine itself is a local unlock
        // (RemoteLogins), a finger in polkit's stack goes into a rights dialog's ticket.
        env.events = SecurityRecord(program: "localauth-helper", log: log)
        env.eventContext = request.eventContext
        env.localUnlock = presence.place?.atTheMachine == true
        env.dialogMatch = DialogMatch.recorder(request, options: options, log: log)
        let policy: EvaluationPolicy = options.policy == .biometrics
            ? .deviceOwnerAuthenticationWithBiometrics : .deviceOwnerAuthentication
        let outcome = PolicyEvaluation(environment: env).run(policy)
        return settle(outcome, ui: ui)
    }

    /// No scan. The person at the machine is told only why their own remote login stops the
    /// finger (they can end it, or unlock here); every other refusal is in the log line alone.
    private static func refused(_ refusal: EvaluationError, _ request: HelperRequest, channel: FrameChannel,
                                log: LogSink) -> EvaluationMachine.Outcome {
        let message: UserMessage? = switch refusal.reason {
        case .remoteSessionOpen: .signedInRemotely
        case .remoteLoginSinceUnlock: .signedInRemotelySinceUnlock
        default: nil
        }
        // Not chatter: it says what to do, so PAM_SILENT (sudo's default) does not drop it.
        if let message, request.callerIsTheUser {
            FrameUI(channel: channel, language: request.language, style: .messages, silent: request.silent,
                    isOwner: { true }, log: log).show(message, error: true)
        }
        return .failure(refusal)
    }

    /// Without a terminal prompt, skipping to the password is Ctrl-C, which reaches the
    /// module only through the caller's controlling terminal. A greeter or a dialog's agent
    /// helper has none, and Ctrl-C at pkttyagent ends pkexec itself: there the hint would
    /// promise what does not happen, so no skip is offered (the finger, the tries or
    /// scan_timeout, then the password).
    static func ctrlCSkips(_ request: HelperRequest) -> Bool {
        if PolkitAgent.of(request) != nil { return false }
        guard let pid = request.callerPID, pid > 0, let caller = ProcStat(pid: pid) else { return true }
        return caller.terminal != 0
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
            return .failure(EvaluationError(.appCancel, cause: "the conversation failed at the prompt"))
        }
        return outcome
    }
}
