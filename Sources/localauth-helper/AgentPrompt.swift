#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// What a signature approves, in root's words: built from the key's record, the verified
/// destination (AgentDestination), the kind of data being signed (SignedData) and the
/// program chain (ProgramChain), never from a text the caller wrote. The one exception is
/// the account name of a login, which is part of the very bytes signed (cleaned).
struct AgentPrompt: Equatable {
    enum Action: Equatable {
        /// A user authentication: `destination` nil when no session-bind verified it.
        case login(user: String, destination: AgentDestination?)
        /// An SSHSIG signature in the `git` namespace (git commit and tag signing).
        case gitCommit
        /// An SSHSIG signature in any other namespace.
        case signFile(namespace: String)
    }

    let key: String
    let action: Action
    /// The host this machine's ssh forwarded the agent to, when the request came through it.
    let forwardedThrough: AgentDestination?
    let chain: ProgramChain

    /// The prompt's lines, in the requester's language.
    func lines(_ l: Language) -> [String] {
        var out: [String] = []
        switch action {
        case .login(let user, let destination):
            out.append(tr(l, "SSH key %s: log in to %s as %s", key, Self.host(destination, l),
                          ProgramChain.clean(user)))
        case .gitCommit:
            out.append(tr(l, "SSH key %s: sign a git commit", key))
        case .signFile(let namespace):
            out.append(tr(l, "SSH key %s: sign a file (namespace %s)", key, ProgramChain.clean(namespace)))
        }
        if let through = forwardedThrough { out.append(tr(l, "forwarded through %s", Self.host(through, l))) }
        out.append(tr(l, "requested by %s", chain.text))
        return out
    }

    /// One line for the log and `localauthctl ssh log` (English).
    var what: String { lines(.english).dropLast().joined(separator: "; ") }

    /// `github.com (host key ED25519 SHA256:…)`, or the key alone when known_hosts names
    /// it nowhere.
    static func host(_ destination: AgentDestination?, _ l: Language) -> String {
        guard let destination else { return tr(l, "a host whose key was not verified") }
        let key = tr(l, "host key %s", destination.keyText)
        guard !destination.names.isEmpty else { return key }
        return destination.names.prefix(2).joined(separator: ", ") + " (" + key + ")"
    }

    /// The requester's language, from its own LANGUAGE, LC_ALL, LC_MESSAGES and LANG (only
    /// the language of the lines depends on them).
    static func language(of pid: Int32) -> Language {
        var found: [String: String] = [:]
        let fd = open("/proc/\(pid)/environ", O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while bytes.count < 256 * 1024 {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { break }
                bytes += chunk[0..<n]
            }
            for entry in bytes.split(separator: 0) {
                let text = String(decoding: entry, as: UTF8.self)
                guard let eq = text.firstIndex(of: "=") else { continue }
                let name = String(text[..<eq])
                if ["LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"].contains(name) {
                    found[name] = String(text[text.index(after: eq)...])
                }
            }
        }
        return Language(language: found["LANGUAGE"], lcAll: found["LC_ALL"], lcMessages: found["LC_MESSAGES"],
                        lang: found["LANG"])
    }
}
