/// su's command line (util-linux's su, which Debian, Fedora and Arch ship), for what a touch
/// approves: the command of `-c CMD`/`--command=CMD` (or `-C`/`--session-command`), else the
/// words after the user, which su hands to the shell. The target is PAM_USER (the PAM item
/// the root module sent), not a word read here. util-linux parses options anywhere before
/// `--` (getopt_long, permuting), so `su root -c CMD` and `su -c CMD root` are alike; `-` alone
/// is `--login`. An option su does not know makes it stop before PAM: nil, nothing named.
/// Pure: Tests/LocalAuthTests/TouchPurposeTests.swift.
public enum SuCommandLine {
    /// Options that take a value: letter, long name. The command's are `c` and `C`.
    static let withValue: [(Character, String)] = [
        ("c", "command"), ("C", "session-command"), ("g", "group"), ("G", "supp-group"),
        ("s", "shell"), ("w", "whitelist-environment"),
    ]
    static let flags: [(Character, String)] = [
        ("f", "fast"), ("l", "login"), ("m", "preserve-environment"), ("p", "preserve-environment"),
        ("P", "pty"), ("h", "help"), ("V", "version"),
    ]

    /// What su runs as the target.
    public enum Runs: Equatable, Sendable {
        case shell
        /// `-c CMD`: one line for the shell, shown as it is.
        case commandLine(String)
        /// Words after the user, handed to the shell as its arguments.
        case shellArguments([String])
    }

    /// What su will run, or nil when su would not get to PAM. `argv[0]` included.
    public static func runs(_ argv: [String]) -> Runs? {
        var command: String?
        var words: [String] = []
        var i = 1
        while i < argv.count {
            let word = argv[i]
            i += 1
            if word == "--" { words += argv[i...]; break }
            guard word.hasPrefix("-"), word != "-" else {
                if word != "-" { words.append(word) }
                continue
            }
            guard let (value, next) = option(word, argv, i) else { return nil }
            if let value { command = value }
            i = next
        }
        if let command { return .commandLine(command) }
        // The first word is the user; the rest go to the shell.
        return words.count > 1 ? .shellArguments(Array(words.dropFirst())) : .shell
    }

    /// An option word: the command it gives (nil for any other) and the index after it.
    private static func option(_ word: String, _ argv: [String], _ i: Int) -> (String?, Int)? {
        if word.hasPrefix("--") {
            let body = word.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let inline: String? = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            let all = withValue.map { ($0, $1, true) } + flags.map { ($0, $1, false) }
            let exact = all.filter { $0.1 == name }
            let found = exact.isEmpty ? all.filter { $0.1.hasPrefix(name) } : exact
            let letters = Set(found.map(\.0))
            guard !name.isEmpty, let (letter, _, takesValue) = found.first,
                  found.count == 1 || letters == ["m", "p"] else { return nil }
            if letter == "h" || letter == "V" { return nil }
            if !takesValue { return inline == nil ? (nil, i) : nil }
            let value = inline ?? (i < argv.count ? argv[i] : nil)
            guard let value else { return nil }
            return ("cC".contains(letter) ? value : nil, inline == nil ? i + 1 : i)
        }
        var letters = Substring(word.dropFirst())
        while let letter = letters.first {
            letters = letters.dropFirst()
            if flags.contains(where: { $0.0 == letter }) {
                if letter == "h" || letter == "V" { return nil }
                continue
            }
            guard withValue.contains(where: { $0.0 == letter }) else { return nil }
            let value = letters.isEmpty ? (i < argv.count ? argv[i] : nil) : String(letters)
            guard let value else { return nil }
            return ("cC".contains(letter) ? value : nil, letters.isEmpty ? i + 1 : i)
        }
        return (nil, i)
    }

    /// What the touch approves: `user` is PAM_USER. `cut`: the command line was read in part.
    public static func purpose(_ argv: [String], user: String, cut: Bool) -> TouchPurpose? {
        guard let runs = runs(argv) else { return nil }
        let target = TouchPurpose.clean(user)
        let limit = TouchPurpose.partLimit
        switch runs {
        case .shell:
            return .switchUser(user: target, command: nil)
        case .commandLine(let line):
            let bytes = Array(line.utf8.prefix(CleanText.budget + 1))
            return .switchUser(user: target, command: CleanText.line(bytes, limit: limit, mark: .dots, cut: cut))
        case .shellArguments(let words):
            return .switchUser(user: target, command: CleanText.arguments(words, limit: limit, mark: .dots, cut: cut))
        }
    }
}
