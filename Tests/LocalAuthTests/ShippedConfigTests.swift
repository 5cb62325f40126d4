#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// etc/localauth.conf, installed as /etc/security/localauth.conf: every key of the option
/// table that the file may set is there, commented out, at exactly its default, and the
/// file parses without an issue through the parser the helper and localauthctl use.
@Suite struct ShippedConfigTests {
    /// The repository's etc/localauth.conf, found from this file's path.
    static var path: String {
        let parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        return parts.dropLast(3).joined(separator: "/") + "/etc/localauth.conf"
    }

    static func text() throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0, "cannot open \(path)")
        defer { close(fd) }
        guard case .success(let bytes) = Posix.readAll(fd, limit: ConfigParser.maxFileSize) else {
            Issue.record("cannot read \(path)")
            return ""
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `#key = value` lines: (line number, key, value).
    static func commentedSettings(_ text: String) -> [(Int, String, String)] {
        var out: [(Int, String, String)] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard raw.hasPrefix("#"), let eq = raw.firstIndex(of: "=") else { continue }
            let key = trimmed(String(raw[raw.index(after: raw.startIndex)..<eq]))
            guard Options.spec(for: key) != nil else { continue }
            out.append((i + 1, key, trimmed(String(raw[raw.index(after: eq)...]))))
        }
        return out
    }

    @Test func everyKeyIsThereCommentedOutAtItsDefault() throws {
        let settings = Self.commentedSettings(try Self.text())
        for key in Options.allKeys where !Options.moduleOnlyKeys.contains(key) {
            let lines = settings.filter { $0.1 == key }
            #expect(lines.count == 1, "`#\(key) = …` appears \(lines.count) times in \(Self.path)")
            guard let (line, _, value) = lines.first, let spec = Options.spec(for: key) else { continue }
            var o = Options()
            #expect(spec.apply(&o, value), "\(Self.path):\(line): `\(key)` does not accept `\(value)`")
            if key == "fallback_title" {
                // Unset by default (the localized "Use Password"); the file shows the English words.
                #expect(UserMessage.fallbackHint(title: nil).text(.english).contains(value),
                        "\(Self.path):\(line): `\(value)` is not the default fallback title")
            } else {
                #expect(o == Options(), "\(Self.path):\(line): `\(key) = \(value)` is not its default")
            }
        }
    }

    @Test func moduleArgumentsAreNotOfferedInTheFile() throws {
        let settings = Self.commentedSettings(try Self.text())
        for key in Options.moduleOnlyKeys {
            #expect(!settings.contains { $0.1 == key }, "`\(key)` is a module argument only")
        }
    }

    @Test func nothingIsSetAndEveryLineParses() throws {
        let text = try Self.text()
        var o = Options()
        #expect(ConfigParser.apply(fileText: text, source: Self.path, to: &o).isEmpty)
        #expect(o == Options())
        // The commented-out settings, uncommented, parse too and change nothing (but the
        // fallback title, whose default is unset).
        var uncommented = Options()
        let active = Self.commentedSettings(text).map { "\($0.1) = \($0.2)" }.joined(separator: "\n")
        #expect(ConfigParser.apply(fileText: active, source: Self.path, to: &uncommented).isEmpty)
        uncommented.fallbackTitle = nil
        #expect(uncommented == Options())
    }
}
