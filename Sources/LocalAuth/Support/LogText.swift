/// How outcomes read in log lines: `key=value` words, the same in the helper's and in
/// localauthctl's lines, never a Swift value dump.
extension EvaluationError {
    /// `result=biometryLockout reason=idle cause="..."` (no reason word for `.none`).
    public var logText: String {
        var words = ["result=\(code.name)"]
        if reason != .none { words.append("reason=\(reason.key)") }
        if !cause.isEmpty { words.append("cause=\"\(LogWords.clean(cause))\"") }
        return words.joined(separator: " ")
    }
}

extension EvaluationMachine.Outcome {
    public var logText: String {
        switch self {
        case .success(let method): return "result=success method=\(method.rawValue)"
        case .notOptedIn: return "result=notOptedIn reason=not-opted-in"
        case .failure(let error): return error.logText
        }
    }
}

public enum LogWords {
    /// At most 64 characters, control characters as `?`: a caller's word in a cause.
    public static func short(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.prefix(64).map { $0.value < 0x20 ? "?" : $0 }))
    }

    /// One line: control characters and `"` become `?`.
    public static func clean(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map {
            $0.value < 0x20 || $0.value == 0x7f || $0 == "\"" ? "?" : $0
        }))
    }

    /// One word of printable ASCII, at most 128 characters: everything else, and a space,
    /// `=` or `"`, becomes `?`. For a value a caller chose (a request's service, terminal
    /// or host: from a peer that is not root the user's words) written unquoted into a `key=value`
    /// line, where a space or `=` would add fields of their choosing (the audit records'
    /// hostname= and terminal=, the helper's own log lines).
    public static func word(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(128).map {
            $0.value > 0x20 && $0.value < 0x7f && $0 != "=" && $0 != "\"" ? $0 : "?"
        }))
    }
}
