// localauth-helper: started only by localauthd, ahead of a request, with a fixed
// environment; it waits for its request's connection (fd 0 and 1 once handed over, the
// peer's pidfd on fd 3), runs one evaluation and exits. It never reads the environment;
// options come from the root-owned config file and the module arguments carried in the
// request (all of them from a root peer, how the prompt looks from any other).
#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

// Waits for localauthd's handoff (SpareWait), then knows whom it serves (Launch). The
// helper is localauthd's child, in its cgroup and sandbox, never a caller's.
let launch = Launch(arguments: CommandLine.arguments)

// Ctrl-C and Ctrl-Z at the terminal reach the whole foreground process group; the module
// turns Ctrl-C into a cancel frame, so the helper itself must not die or stop on them.
signal(SIGINT, SIG_IGN)
signal(SIGQUIT, SIG_IGN)
signal(SIGTSTP, SIG_IGN)
signal(SIGPIPE, SIG_IGN)
// Started for a user's program on a terminal, a hangup must not end it
// between a failed match and its record.
signal(SIGHUP, SIG_IGN)
// localauthd's word that the system prepares to sleep: the scan ends (SleepSignal).
SleepSignal.install()

HardDeadline.set(seconds: HardDeadline.startSeconds)

// An ssh-agent client speaks its own protocol on the connection until it closes.
if case .agent(let peer) = launch { AgentMode.serve(peer, log: SyslogSink(ident: "localauth-helper")) }

let channel = FrameChannel(input: 0, output: 1)
let bootLog = SyslogSink(ident: "localauth-helper")

// The top-level code's (the main actor's, in the Swift 6 language mode), like `channel`.
@MainActor
func finish(_ frame: Frame, log: LogSink) -> Never {
    if !channel.send(frame) { log.log(.error, "the module went away before the result") }
    exit(0)
}

launch.boundRequestWait()

var request: HelperRequest
do {
    request = try HelperRequest.parse(try channel.receive())
} catch FrameError.endOfStream {
    // A connection closed before any byte (a check that the service answers, such as
    // localauthctl doctor's): nothing was asked, so nothing failed.
    bootLog.log(.info, "the connection closed before a request")
    exit(0)
} catch {
    bootLog.log(.error, "bad request: \(error)")
    finish(HelperResult.frame(code: EvaluationError.Code.biometryNotAvailable.rawValue, name: "biometryNotAvailable",
                              cause: "bad request: \(error)"), log: bootLog)
}

if let refusal = launch.admit(&request) {
    bootLog.log(.error, "refused: \(refusal)")
    finish(HelperResult.frame(code: EvaluationError.Code.biometryNotAvailable.rawValue, name: "biometryNotAvailable",
                              cause: "refused: \(refusal)"), log: bootLog)
}

// The module waits only a few seconds for the first frame (a helper that hangs in its
// start-up must not hold sudo): say at once that the request arrived.
channel.send(Frame(.started))

let options = Options.load(configPath: launch.configPath, arguments: request.arguments,
                           allowingArgument: launch.allowsArgument, log: bootLog)
let log: LogSink = options.debug ? SyslogSink(ident: "localauth-helper", minimum: .debug) : bootLog
PolkitAgent.helperSocket = options.polkitAgentSocket
HardDeadline.set(seconds: HardDeadline.seconds(for: options))

switch request.mode {
case .authenticate:
    let outcome = Authenticate.run(request, options: options, channel: channel, log: log)
    // The user (at login, typed by whoever sits down) and the service (from a peer that is not root,
    // the user's word) are one word each, so neither adds a field; what the touch approves is
    // one quoted field, cleaned (TouchPurpose.logField), last: the verdict's words come first.
    log.log(.info, "user=\(LogWords.word(request.user.value)) service=\(LogWords.word(request.service)) "
                   + "\(outcome.logText) \(CallerPurpose.of(request).logField)")
    finish(HelperResult.frame(outcome), log: log)
case .authsucc:
    finish(launch.authsucc(request, options: options, channel: channel, log: log), log: log)
case .status:
    finish(StatusSummary.frame(request, options: options, log: log), log: log)
case .app:
    finish(AppMode.run(request, unprivileged: launch.isUnprivileged, options: options, channel: channel, log: log),
           log: log)
case .right:
    finish(RightsMode.run(request, launch: launch, options: options, channel: channel, log: log), log: log)
case .ssh:
    finish(SSHKeysMode.run(request, launch: launch, options: options, channel: channel, log: log), log: log)
}
