/// What a touch approves, said before the reader asks for the finger and written in the log
/// line of every approval and refusal (`approves="..."`). Read by root, never from the text
/// the caller sends: sudo's and su's command lines from the pinned caller's /proc
/// (SudoCommandLine, SuCommandLine), the target from the PAM items the root module sent,
/// polkit's action from polkitd's own call (PolkitPurpose), an application's program from
/// the kernel. Every piece a process chose is cleaned (CleanText) before it is held here.
/// Pure: Tests/LocalAuthTests/TouchPurposeTests.swift.
public enum TouchPurpose: Equatable, Sendable {
    /// sudo runs a command (`sudo apt upgrade`, `sudo -i cmd`).
    case runCommand(command: String, user: String)
    /// sudo starts a shell (`sudo -i`, `sudo -s` without a command).
    case shell(user: String)
    /// sudoedit, `sudo -e`.
    case edit(files: String, user: String)
    /// sudo without a command to run: `-l` (list what may be run), `-v` (refresh the credentials).
    case sudoOther(SudoOther)
    /// su: to `user`, running `command` (`-c`) or a shell.
    case switchUser(user: String, command: String?)
    /// polkit's action as root read it.
    case polkit(PolkitPurpose)
    /// polkit's agent helper asks, but root knows of no one pending authentication of its
    /// agent (none, or more than one): never a guess.
    case polkitUnnamed
    /// An application's evaluation: the program root read; the reason is the application's
    /// own, which it shows itself.
    case app(program: String)
    /// A lock screen.
    case unlock
    /// A greeter or login.
    case login(service: String)
    /// Any other PAM service (or a sudo or su that is not the system's).
    case unknown(service: String)

    public enum SudoOther: String, Equatable, Sendable {
        case list, validate
    }

    /// The words cut at this many scalars each (a command, the files, a program).
    public static let partLimit = 120

    /// One piece a process chose: one line, cut (CleanText).
    public static func clean(_ text: String) -> String {
        CleanText.line(text, limit: partLimit, mark: .dots)
    }

    /// Whether the line is shown before the scan: a lock screen or a greeter says what it is
    /// for itself, and of any other service root knows nothing to say (its name is not what
    /// the touch approves); the log line names them all.
    public var isShown: Bool {
        switch self {
        case .unlock, .login, .unknown: return false
        default: return true
        }
    }

    /// One line, in the user's language.
    public func text(_ l: Language) -> String {
        switch self {
        case .runCommand(let command, let user): return tr(l, "Touch the reader to run `%s` as %s", command, user)
        case .shell(let user): return tr(l, "Touch the reader to open a shell as %s", user)
        case .edit(let files, let user): return tr(l, "Touch the reader to edit %s as %s", files, user)
        case .sudoOther(.list): return tr(l, "Touch the reader to list what sudo allows you")
        case .sudoOther(.validate): return tr(l, "Touch the reader to renew your sudo credentials")
        case .switchUser(let user, nil): return tr(l, "Touch the reader to switch to %s", user)
        case .switchUser(let user, let command?): return tr(l, "Touch the reader to run `%s` as %s", command, user)
        case .polkit(let p): return Self.polkitText(p, l)
        case .polkitUnnamed: return tr(l, "Touch the reader to approve a polkit request")
        case .app(let program): return tr(l, "Touch the reader to approve a request of %s", program)
        case .unlock: return tr(l, "Touch the reader to unlock")
        case .login(let service): return tr(l, "Touch the reader to sign in (%s)", service)
        case .unknown(let service): return tr(l, "Touch the reader to approve a request of %s", service)
        }
    }

    private static func polkitText(_ p: PolkitPurpose, _ l: Language) -> String {
        let detail = p.program.map { "\(p.action), \($0)" } ?? p.action
        guard let message = p.message else { return tr(l, "Touch the reader to approve %s", detail) }
        return tr(l, "Touch the reader to approve \"%s\" (%s)", message, detail)
    }

    /// The log line's `approves` field, in English: the value without its quotes (LogWords.clean
    /// is applied to it still, as to every quoted value of the log).
    public var logWords: String {
        let words: String = switch self {
        case .runCommand(let command, let user): "run `\(command)` as \(user)"
        case .shell(let user): "a shell as \(user)"
        case .edit(let files, let user): "edit \(files) as \(user)"
        case .sudoOther(.list): "sudo -l (list)"
        case .sudoOther(.validate): "sudo -v (renew credentials)"
        case .switchUser(let user, nil): "switch to \(user)"
        case .switchUser(let user, let command?): "run `\(command)` as \(user) (su)"
        case .polkit(let p): "polkit \(p.action)" + (p.program.map { " for \($0)" } ?? "") + (p.message.map { ": \($0)" } ?? "")
        case .polkitUnnamed: "a polkit request"
        case .app(let program): "app \(program)"
        case .unlock: "unlock"
        case .login(let service): "sign in (\(LogWords.word(service)))"
        // From a peer that is not root the service is the user's word: one word here too.
        case .unknown(let service): "\(LogWords.word(service)) request"
        }
        return LogWords.clean(words)
    }

    /// `approves="..."`, the field every approval and refusal line carries.
    public var logField: String { "approves=\"\(logWords)\"" }
}
