/// sudo's command line as sudo itself reads it (sudo 1.9's options, and sudo-rs's subset),
/// for what a touch approves: the target user and group, and the command, shell, files to
/// edit, list or validate. The argument vector is the sudo process's own (/proc/PID/cmdline
/// of the pinned caller, a setuid process the user cannot change once it runs): the user
/// wrote it, and it is what sudo runs. Options stop at the first word that is not one (sudo
/// parses with `+`), or after `--`; a long option may be any unique prefix (getopt_long).
/// An option sudo does not know makes sudo stop before PAM: nil here, so nothing is named.
/// Pure: Tests/LocalAuthTests/TouchPurposeTests.swift.
public struct SudoCommandLine: Equatable, Sendable {
    public enum Mode: Equatable, Sendable {
        /// `command` after `VAR=value` words, which are part of what runs.
        case run(command: [String])
        case shell
        case edit(files: [String])
        case list
        case validate
    }

    public var mode: Mode
    /// `-u USER`; nil: root, or with `-g` alone the invoking user (sudo's rule).
    public var user: String?
    /// `-g GROUP`.
    public var group: String?

    /// Options that take a value (short letter, long name).
    static let withValue: [(Character, String)] = [
        ("a", "auth-type"), ("C", "close-from"), ("c", "login-class"), ("D", "chdir"), ("g", "group"),
        ("p", "prompt"), ("R", "chroot"), ("r", "role"), ("T", "command-timeout"), ("t", "type"),
        ("U", "other-user"), ("u", "user"), ("h", "host"),
    ]
    /// Options without a value. `-E`/`--preserve-env` takes an optional one in its long form.
    static let flags: [(Character, String)] = [
        ("A", "askpass"), ("B", "bell"), ("b", "background"), ("E", "preserve-env"), ("e", "edit"),
        ("H", "set-home"), ("i", "login"), ("K", "remove-timestamp"), ("k", "reset-timestamp"),
        ("l", "list"), ("N", "no-update"), ("n", "non-interactive"), ("P", "preserve-groups"),
        ("S", "stdin"), ("s", "shell"), ("V", "version"), ("v", "validate"),
    ]

    /// What the options said, letter by letter.
    struct Seen {
        var letters: Set<Character> = []
        var user: String?
        var group: String?
    }

    /// `argv[0]` included; `sudoedit` as its name is `-e`.
    public static func parse(_ argv: [String]) -> SudoCommandLine? {
        guard let name = argv.first else { return nil }
        var seen = Seen()
        if name.split(separator: "/").last == "sudoedit" { seen.letters.insert("e") }
        var i = 1
        while i < argv.count {
            let word = argv[i]
            if word == "--" { i += 1; break }
            guard word.hasPrefix("-"), word.count > 1 else { break }
            guard let next = word.hasPrefix("--") ? long(word, argv, i, &seen) : short(word, argv, i, &seen) else { return nil }
            i = next
        }
        return build(seen, rest: Array(argv[min(i, argv.count)...]))
    }

    /// One `--name[=value]` word; the index after it, or nil when sudo would refuse it.
    private static func long(_ word: String, _ argv: [String], _ i: Int, _ seen: inout Seen) -> Int? {
        let body = word.dropFirst(2)
        let name = String(body.prefix { $0 != "=" })
        let inline: String? = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
        let all = withValue.map { ($0, $1, true) } + flags.map { ($0, $1, false) }
        let exact = all.filter { $0.1 == name }
        let matches = exact.isEmpty ? all.filter { $0.1.hasPrefix(name) } : exact
        guard !name.isEmpty, matches.count == 1, let (letter, long, takesValue) = matches.first else { return nil }
        if !takesValue {
            // Only --preserve-env may carry a value (a list of variables).
            guard inline == nil || long == "preserve-env" else { return nil }
            seen.letters.insert(letter)
            return i + 1
        }
        if let inline { record(letter, inline, &seen); return i + 1 }
        guard i + 1 < argv.count else { return nil }
        record(letter, argv[i + 1], &seen)
        return i + 2
    }

    /// One `-xyz` word (letters together, the last may take the rest or the next word).
    private static func short(_ word: String, _ argv: [String], _ i: Int, _ seen: inout Seen) -> Int? {
        var letters = Substring(word.dropFirst())
        while let letter = letters.first {
            letters = letters.dropFirst()
            if flags.contains(where: { $0.0 == letter }) {
                seen.letters.insert(letter)
                continue
            }
            guard withValue.contains(where: { $0.0 == letter }) else { return nil }
            if !letters.isEmpty { record(letter, String(letters), &seen); return i + 1 }
            // `-h` alone is help (its value only attached): sudo stops before PAM.
            guard letter != "h", i + 1 < argv.count else { return nil }
            record(letter, argv[i + 1], &seen)
            return i + 2
        }
        return i + 1
    }

    private static func record(_ letter: Character, _ value: String, _ seen: inout Seen) {
        seen.letters.insert(letter)
        if letter == "u" { seen.user = value }
        if letter == "g" { seen.group = value }
    }

    private static func build(_ seen: Seen, rest: [String]) -> SudoCommandLine? {
        let has = seen.letters.contains
        let mode: Mode
        if has("V") { return nil }
        if has("e") {
            guard !rest.isEmpty else { return nil }
            mode = .edit(files: rest)
        } else if has("l") {
            mode = .list
        } else if has("v") && rest.isEmpty {
            mode = .validate
        } else if rest.isEmpty {
            guard has("i") || has("s") else { return nil }
            mode = .shell
        } else {
            mode = .run(command: rest)
        }
        return SudoCommandLine(mode: mode, user: seen.user, group: seen.group)
    }

    /// The target as shown: `root`, `USER`, `USER:GROUP`; with `-g` alone the invoking user.
    public func target(invokingUser: String) -> String {
        let user = TouchPurpose.clean(user ?? (group != nil ? invokingUser : "root"))
        return group.map { "\(user):\(TouchPurpose.clean($0))" } ?? user
    }

    /// What the touch approves. `cut`: the command line was read in part.
    public func purpose(invokingUser: String, cut: Bool) -> TouchPurpose {
        let target = target(invokingUser: invokingUser)
        switch mode {
        case .run(let command):
            return .runCommand(command: CleanText.arguments(command, limit: TouchPurpose.partLimit, mark: .dots, cut: cut),
                               user: target)
        case .shell: return .shell(user: target)
        case .edit(let files):
            return .edit(files: CleanText.arguments(files, limit: TouchPurpose.partLimit, mark: .dots, cut: cut), user: target)
        case .list: return .sudoOther(.list)
        case .validate: return .sudoOther(.validate)
        }
    }
}
