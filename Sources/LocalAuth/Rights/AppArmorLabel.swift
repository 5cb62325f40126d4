/// A process's AppArmor label, as `/proc/PID/attr/apparmor/current` gives it, for binding a
/// right to it (ProgramBinding). The executable alone cannot tell apart two programs that
/// run the same file; a profile can, where the system confines the program: a right saved
/// under a profile is then reachable only under that profile.
///
/// The text is `unconfined`, or the profile's name followed by its mode in brackets
/// (`vault (enforce)`, `vault (complain)`, `a//&b (enforce)` for a stack). The binding
/// keeps the name and drops the mode, so that an administrator who moves a profile from
/// complain to enforce does not strand its rights.
public enum AppArmorLabel {
    /// The profile's name, or nil for an unconfined process. `.malformed` for text that
    /// is neither (empty, a control character, no name before the mode).
    public static func profile(fromAttr text: String) -> Result<String?, Malformed> {
        var label = Substring(text)
        while let last = label.last, last == "\n" || last == "\0" { label = label.dropLast() }
        guard !label.isEmpty, label.utf8.count <= 4096,
              label.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            return .failure(Malformed(text: text))
        }
        if label == "unconfined" { return .success(nil) }
        if label.hasSuffix(")"), let open = lastModeBracket(label) { label = label[..<open] }
        guard !label.isEmpty, label.first != " " else { return .failure(Malformed(text: text)) }
        return .success(String(label))
    }

    /// How a right's program names a confined process: `apparmor:PROFILE:` before what the
    /// executable gives (a path, or a Flatpak app's identity).
    public static func bound(_ program: String, profile: String?) -> String {
        profile.map { "apparmor:\($0):\(program)" } ?? program
    }

    /// Where the last ` (` begins: the mode's bracket (a name may itself hold brackets).
    private static func lastModeBracket(_ label: Substring) -> Substring.Index? {
        var i = label.endIndex
        while i > label.startIndex {
            i = label.index(before: i)
            let next = label.index(after: i)
            if label[i] == " ", next < label.endIndex, label[next] == "(" { return i }
        }
        return nil
    }

    public struct Malformed: Error, Equatable {
        public let text: String
    }
}
