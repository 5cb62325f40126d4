/// How outcomes read in log lines: `key=value` words, the same in the helper's and in
/// localauthctl's lines, never a Swift value dump.
extension LAError {
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
    /// One line: control characters and `"` become `?`.
    public static func clean(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map {
            $0.value < 0x20 || $0.value == 0x7f || $0 == "\"" ? "?" : $0
        }))
    }
}
