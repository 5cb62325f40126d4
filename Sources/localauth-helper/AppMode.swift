#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth
import LocalAuthProtocol

/// `mode=app`: an application's `LAContext` (the `LocalAuthentication` library), started
/// through localauthd like a screen locker's module, so that an ordinary program
/// is held to the lockout, the enrolled-set check and every rule `sudo` obeys, in root's
/// state files, and cannot change them except by a match or the password (docs/PROTOCOL.md,
/// "Applications").
///
/// Two steps, named by the request's `op`:
/// * `preflight` (`canEvaluatePolicy`): the rules and the enrolled set, never a scan;
/// * `evaluate` (`evaluatePolicy`): the policy with the application as the user interface:
///   messages go out as `I`/`E`, the password (`policy=owner`) is asked with `P` and checked
///   here by the check `authsucc` uses (`PacedPasswordCheck` from a peer that is not root).
///
/// The result frame adds `domain_state` (the enrolled set's hash, after a match or a
/// successful preflight) and `biometry` (`touchID` when a reader answers, after a preflight).
enum AppMode {
    typealias Policy = Request.Policy

    /// How long the helper waits for the application to answer a password prompt: a root
    /// process must not wait for ever on a program the user controls.
    static let answerTimeoutMillis: Int32 = 120_000

    /// `unprivileged`: started by localauthd for a peer that is not root (an ordinary program), so the password check
    /// is the paced one.
    static func run(_ request: HelperRequest, unprivileged: Bool, options: Options, channel: FrameChannel,
                    log: LogSink) -> Frame {
        guard case .app(_, let app) = request.wire else {
            return HelperResult.frame(code: EvaluationError.Code.biometryNotAvailable.rawValue, name: "biometryNotAvailable",
                                      cause: "mode=app needs op=preflight|evaluate and policy=biometrics|owner")
        }
        let who = "user \(LogWords.word(request.user.value)) application \(LogWords.word(request.service))"
            + " (pid \(request.callerPID.map(String.init) ?? "?"))"
        let frame: Frame
        switch app {
        case .preflight(let policy, _):
            frame = preflight(request, policy: policy, unprivileged: unprivileged, options: options, log: log)
        case .evaluate(let policy):
            frame = evaluate(request, policy: policy, unprivileged: unprivileged, options: options,
                             channel: channel, log: log)
        }
        let approves = app.op == "evaluate" ? " \(CallerPurpose.app(request).logField)" : ""
        log.log(.info, "\(who) \(app.op) \(app.policy.rawValue): \(summary(frame))\(approves)")
        return frame
    }

    // MARK: - canEvaluatePolicy

    /// Also a right's `checkCanAuthorize` (RightsMode). The enrolled set read from fprintd
    /// is kept in root's state (EnrollmentRecord), so that localauthd answers the next
    /// preflights itself while the print storage is unchanged.
    static func preflight(_ request: HelperRequest, policy: Policy, unprivileged: Bool,
                          options: Options, log: LogSink) -> Frame {
        let env = environment(request, policy: policy, unprivileged: unprivileged, options: options, ui: nil,
                              wake: [], log: log)
        // The storage's stamp before fprintd is asked: an enrolment in between leaves a
        // record whose stamp is already old, never a new stamp over the old set.
        let storage = StorageStamp.of(fprintDir: options.fprintDir, user: request.user.value)
        let answer = AppPreflight.run(env, policy: policy.evaluationPolicy)
        if let enrolled = answer.enrolled, let boot = env.system.bootID() {
            let record = EnrollmentRecord(set: enrolled, storage: storage, readAt: BootClock.nanos(), bootID: boot)
            do { try FileStateStore(directory: options.stateDir).saveEnrollmentRecord(record, for: request.user) } catch {
                log.log(.notice, "the enrolled set of \(request.user) not recorded for localauthd: \(error)")
            }
        }
        return Frame(.result, answer.keys.encoded())
    }

    // MARK: - evaluatePolicy

    private static func evaluate(_ request: HelperRequest, policy: Policy, unprivileged: Bool,
                                 options: Options, channel: FrameChannel, log: LogSink) -> Frame {
        switch authenticate(request, policy: policy, unprivileged: unprivileged, options: options,
                            channel: channel, log: log) {
        case .refused(let frame):
            return frame
        case .matched(let method, let domainState):
            let extra = domainState.map { [("domain_state", $0)] } ?? []
            return HelperResult.frame(code: ResultCode.successValue, name: "success", cause: "matched (\(method.rawValue))", extra: extra)
        }
    }

    /// What an evaluation ended with: who was authenticated, and how, or the result frame
    /// that says why not.
    enum Authentication {
        /// `domainState`: the enrolled set's hash after a fingerprint match (nil after the password).
        case matched(EvaluationMachine.Outcome.Method, domainState: String?)
        case refused(Frame)
    }

    /// The evaluation an application's `evaluatePolicy` runs, and a right's authorization
    /// (RightsMode): the presence rules, then the policy with the application as the user
    /// interface (its terminal, through the library's frames).
    static func authenticate(_ request: HelperRequest, policy: Policy, unprivileged: Bool, options: Options,
                             channel: FrameChannel, log: LogSink) -> Authentication {
        let presence = Presence.judge(request, options: options, log: log)
        if let refusal = presence.refusal { return .refused(HelperResult.frame(.failure(refusal))) }
        let ui = AppFrameUI(channel: channel, language: request.language, purpose: CallerPurpose.app(request), log: log)
        let wake = AppWakeSource(channel: channel, fallbackOffered: options.fallbackTitle != "")
        let env = environment(request, policy: policy, unprivileged: unprivileged, options: options, ui: ui,
                              wake: [wake] + (presence.watch.map { [$0] } ?? [])
                                  + (SleepSignal.wakeSource().map { [$0] } ?? []), log: log)
        let evaluation = PolicyEvaluation(environment: env)
        switch evaluation.run(policy.evaluationPolicy) {
        case .success(let method):
            return .matched(method, domainState: method == .password ? nil : domainKey(evaluation).first?.1)
        case .notOptedIn:
            return .refused(HelperResult.frame(code: EvaluationError.Code.biometryNotAvailable.rawValue,
                                               name: "biometryNotAvailable",
                                               cause: "fingerprint login is turned off for this user"))
        case .failure(let e) where e.code == .appCancel && ui.userCancelled:
            // The application's own Cancel at the password prompt, not the application going away.
            return .refused(HelperResult.frame(code: EvaluationError.Code.userCancel.rawValue, name: "userCancel",
                                               cause: "the user cancelled the password prompt"))
        case .failure(let e):
            return .refused(HelperResult.frame(.failure(e)))
        }
    }

    private static func environment(_ request: HelperRequest, policy: Policy, unprivileged: Bool,
                                    options: Options, ui: AuthenticationUI?, wake: [WakeSource],
                                    log: LogSink) -> EvaluationEnvironment {
        var o = options
        o.reuseDuration = 0  // never reused here: the caller cannot be trusted to say which session it is
        let store = FileStateStore(directory: o.stateDir)
        let verifier = AppPasswordVerifier(store: store, rules: Rules(o), unprivileged: unprivileged, log: log)
        return EvaluationEnvironment(
            user: request.user, terminal: "",
            sensor: FprintdSensor(address: o.dbusAddress, busTimeout: o.busTimeout, fprintDir: o.fprintDir, log: log),
            store: store, options: o, ui: ui, passwordVerifier: policy == .owner ? verifier : nil,
            log: log, wakeSources: wake, language: request.language)
    }

    /// The domain state as the library reads it: the hex digest the store keeps.
    private static func domainKey(_ evaluation: PolicyEvaluation) -> [(String, String)] {
        guard let bytes = evaluation.evaluatedPolicyDomainState else { return [] }
        return [("domain_state", String(decoding: bytes, as: UTF8.self))]
    }

    static func summary(_ frame: Frame) -> String {
        guard let answer = try? Answer.decode(frame.payload).get() else { return "?" }
        return "\(answer.name.isEmpty ? "?" : answer.name) (\(answer.cause ?? ""))"
    }
}

/// The application as the user interface. It shows its own reason and buttons, so only the
/// reader's lines go out; the password prompt waits (bounded) for `A` (the password), or `C`
/// (the user's Cancel).
final class AppFrameUI: AuthenticationUI {
    private let channel: FrameChannel
    private let language: Language
    private let log: LogSink
    /// The user pressed Cancel at the password prompt (as opposed to the application going away).
    private(set) var userCancelled = false
    /// The program root read (TouchPurpose.app), said once before the reader first asks.
    private var purpose: TouchPurpose?

    init(channel: FrameChannel, language: Language, purpose: TouchPurpose? = nil, log: LogSink) {
        self.purpose = purpose
        self.channel = channel
        self.language = language
        self.log = log
    }

    func show(_ message: UserMessage, error: Bool) {
        switch message {
        case .fallbackHint, .reason, .waitingForFinger: return  // the application's own buttons and text
        case .placeFinger where purpose != nil:
            channel.send(Frame(.info, text: purpose!.text(language)))
            purpose = nil
            channel.send(Frame(error ? .error : .info, text: message.text(language)))
        default: channel.send(Frame(error ? .error : .info, text: message.text(language)))
        }
    }

    func askPassword(prompt: String) -> [UInt8]? {
        guard channel.send(Frame(.promptEchoOff, text: prompt)) else { return nil }
        guard channel.waitReadable(milliseconds: AppMode.answerTimeoutMillis) else {
            log.log(.notice, "the application did not answer the password prompt in time")
            return nil
        }
        let reply: Frame
        do { reply = try channel.receive() } catch {
            log.log(.info, "no answer to the password prompt: \(error)")
            return nil
        }
        switch reply.kind {
        case .answer: return reply.payload
        case .cancel:
            userCancelled = true
            return nil
        default: return nil
        }
    }
}

/// The application's side of the socket while the reader waits: `C` is a button the user
/// pressed (`cancel`, or `fallback`, which is a cancel when no fallback is offered), and the
/// application going away (`invalidate()`, a cancelled task, exit) ends the scan.
final class AppWakeSource: WakeSource {
    private let channel: FrameChannel
    private let fallbackOffered: Bool

    init(channel: FrameChannel, fallbackOffered: Bool) {
        self.channel = channel
        self.fallbackOffered = fallbackOffered
    }

    var fd: Int32 { channel.input }

    func interruption() -> EvaluationError? {
        let frame: Frame
        do { frame = try channel.receive() } catch {
            return EvaluationError(.appCancel, cause: "the application ended the evaluation (\(error))")
        }
        guard frame.kind == .cancel else {
            return EvaluationError(.appCancel, cause: "unexpected frame from the application while scanning")
        }
        switch frame.text {
        case "cancel":
            return EvaluationError(.userCancel, cause: "the user cancelled in the application")
        case "fallback":
            return fallbackOffered
                ? EvaluationError(.userFallback, cause: "the user chose the fallback in the application")
                : EvaluationError(.userCancel, cause: "the user cancelled in the application (no fallback offered)")
        default:
            return EvaluationError(.appCancel, cause: "a cancel frame the application mode does not know")
        }
    }
}

/// `deviceOwnerAuthentication`'s password, checked as `authsucc` checks it for a peer that
/// is not root: by `PacedPasswordCheck` (every outcome takes the same time, one check at a
/// time per user, wrong ones logged and counted), so a program's password prompt is no
/// better a guessing oracle than `unix_chkpwd`; from root's own program directly.
final class AppPasswordVerifier: PasswordVerifier {
    private let store: FileStateStore
    private let rules: Rules
    private let unprivileged: Bool
    private let log: LogSink

    init(store: FileStateStore, rules: Rules, unprivileged: Bool, log: LogSink) {
        self.store = store
        self.rules = rules
        self.unprivileged = unprivileged
        self.log = log
    }

    func verify(user: UserName, password: [UInt8]) -> Bool {
        let verdict = unprivileged
            ? PacedPasswordCheck(store: store, rules: rules, log: log).check(user: user, password: password)
            : ShadowPassword.check(user: user, password: password)
        switch verdict {
        case .matches?: return true
        case .differs?: return false
        case .unprovable(let why)?:
            log.log(.notice, "application password for \(user) cannot be checked here: \(why)")
            return false
        case nil: return false
        }
    }
}

extension Launch {
    /// Started by localauthd for an ordinary program (not root).
    var isUnprivileged: Bool {
        if case .unprivileged = self { return true }
        return false
    }
}

extension Request.Policy {
    /// The engine's policy for the request's word.
    var evaluationPolicy: EvaluationPolicy {
        self == .biometrics ? .deviceOwnerAuthenticationWithBiometrics : .deviceOwnerAuthentication
    }
}
