/// Everything an evaluation needs from outside, injected so that every rule is tested
/// without hardware and without sleeping.
public struct EvaluationEnvironment {
    public var user: UserName
    /// Who and where the request comes from, for the reuse window: the terminal together
    /// with the login session using it (the helper's `ReuseScope`); empty: never reused.
    public var terminal: String
    public var sensor: FingerprintSensor
    public var store: StateStore
    public var clock: Clock
    public var system: SystemFacts
    public var options: Options
    public var ui: AuthenticationUI?
    /// Checks the account password for `deviceOwnerAuthentication`; nil when the password
    /// is left to someone else (the PAM stack's password module).
    public var passwordVerifier: PasswordVerifier?
    public var log: LogSink
    /// Descriptors that may end a wait for the finger (the module's cancel frame).
    public var wakeSources: [WakeSource]
    public var language: Language
    /// Where the audit records of a lockout that begins go (`EvaluationMachine`'s
    /// `lockoutBegan`), with the request's context; nil: nowhere.
    public var events: SecurityEvents?
    public var eventContext = EventContext()
    /// A success here is a local unlock (the prompt is at the machine itself): recorded in
    /// the user's state (`EvaluationMachine`'s `recordLocalUnlock`).
    public var localUnlock = false
    /// Given a new fingerprint match that a rights dialog may count (`EvaluationMachine`'s
    /// `dialogMatch`); nil where none may (any service but polkit's).
    public var dialogMatch: ((DialogTicket.Match.Method) -> Void)?

    public init(user: UserName, terminal: String = "", sensor: FingerprintSensor, store: StateStore,
                clock: Clock = SystemClock(), system: SystemFacts = LinuxSystem(),
                options: Options = Options(), ui: AuthenticationUI? = nil,
                passwordVerifier: PasswordVerifier? = nil, log: LogSink,
                wakeSources: [WakeSource] = [], language: Language = .english) {
        self.user = user
        self.terminal = terminal
        self.sensor = sensor
        self.store = store
        self.clock = clock
        self.system = system
        self.options = options
        self.ui = ui
        self.passwordVerifier = passwordVerifier
        self.log = log
        self.wakeSources = wakeSources
        self.language = language
    }
}

/// What the user sees and types.
public protocol AuthenticationUI: AnyObject {
    func show(_ message: UserMessage, error: Bool)
    /// Asks for the password; nil when the conversation failed or was cancelled.
    /// The caller wipes the returned bytes after use.
    func askPassword(prompt: String) -> [UInt8]?
}

public protocol PasswordVerifier: AnyObject {
    func verify(user: UserName, password: [UInt8]) -> Bool
}

/// Facts about the machine and the account.
public protocol SystemFacts: AnyObject {
    /// This boot's identity (`/proc/sys/kernel/random/boot_id`); nil if unreadable.
    func bootID() -> String?
    /// False when the account's password is locked or empty; nil when unknown.
    func hasUsablePassword(_ user: UserName) -> Bool?
}

/// A descriptor whose readiness may end the wait for a finger.
public protocol WakeSource: AnyObject {
    var fd: Int32 { get }
    /// Called when `fd` is readable: the error that ends the wait, or nil to keep waiting.
    func interruption() -> EvaluationError?
}
