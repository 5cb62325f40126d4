#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// A host as the prompt names it: the key that signed the session (verified by its
/// session-bind, AgentBindings) shown as `ssh-keygen -l` does (`ED25519 SHA256:…`), and the
/// names the user's and the system's known_hosts give that key (KnownHosts). A hashed entry
/// gives a name only when a candidate from the requester's own command line hashes to it
/// (`ssh git@github.com …`): the names are the files', never the caller's.
struct AgentDestination: Equatable {
    let keyType: String
    let fingerprint: String
    let names: [String]
    /// A @revoked line holds the key.
    let revoked: Bool

    /// `ED25519 SHA256:…`.
    var keyText: String { keyType + " " + fingerprint }

    static func of(hostKey: [UInt8], peer pid: Int32, uid: uid_t, home: String?, log: LogSink) -> AgentDestination {
        let candidates = candidateNames(of: pid)
        var names: [String] = []
        var revoked = false
        for text in knownHostsTexts(peer: pid, uid: uid, home: home) {
            do {
                let match = try KnownHosts.match(text: text, hostKey: hostKey, candidates: candidates)
                revoked = revoked || match.revoked
                for name in match.names where !names.contains(name) { names.append(name) }
            } catch {
                log.log(.notice, "a known_hosts file was not read for the prompt: \(error)")
            }
        }
        return AgentDestination(keyType: displayType(hostKey), fingerprint: SSHPublicKey.fingerprint(hostKey),
                                names: revoked ? [] : names.map(ProgramChain.clean), revoked: revoked)
    }

    /// ssh-keygen's short names: `ssh-ed25519` → ED25519, `ecdsa-sha2-nistp256` → ECDSA,
    /// `ssh-rsa` → RSA.
    static func displayType(_ blob: [UInt8]) -> String {
        switch SSHPublicKey.typeName(of: blob) ?? "" {
        case "ssh-ed25519": return "ED25519"
        case let t where t.hasPrefix("ecdsa-sha2-"): return "ECDSA"
        case "ssh-rsa": return "RSA"
        case let t: return t.isEmpty ? "?" : ProgramChain.clean(t).uppercased()
        }
    }

    // MARK: - Candidates

    /// The names the requester's command line may mean (`ssh -p 2222 git@example.org …`):
    /// each word that is not an option, without a `user@` and an `ssh://` in front or a
    /// path after it, with `[name]:port` for a `-p` port. Only ever tested against the
    /// hashed entries that hold the verified key.
    static func candidateNames(of pid: Int32) -> [String] {
        let words = commandLine(of: pid).dropFirst()
        var ports: [Int] = []
        var hosts: [String] = []
        var previous = ""
        for word in words {
            defer { previous = word }
            if previous == "-p", let port = Int(word), (1...65535).contains(port) { ports.append(port); continue }
            guard !word.hasPrefix("-"), !word.isEmpty, word.utf8.count <= 255 else { continue }
            var host = Substring(word)
            if host.hasPrefix("ssh://") { host = host.dropFirst(6) }
            if let at = host.lastIndex(of: "@") { host = host[host.index(after: at)...] }
            if let slash = host.firstIndex(of: "/") { host = host[..<slash] }
            if !host.hasPrefix("["), host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
                if let port = Int(host[host.index(after: colon)...]) { ports.append(port) }
                host = host[..<colon]
            }
            if !host.isEmpty, !hosts.contains(String(host)) { hosts.append(String(host)) }
        }
        var out: [String] = []
        for host in hosts {
            out.append(KnownHosts.candidate(host: host))
            for port in ports where port != 22 { out.append(KnownHosts.candidate(host: host, port: port)) }
        }
        return Array(out.prefix(KnownHosts.maxCandidates))
    }

    private static func commandLine(of pid: Int32) -> [String] {
        readAll("/proc/\(pid)/cmdline", limit: 64 * 1024).split(separator: 0).prefix(64)
            .map { String(decoding: $0, as: UTF8.self) }
    }

    // MARK: - The files

    /// The system's files, then the user's as the requester sees them (through its root:
    /// the service's own view hides /home), each only when it is a regular file of root's
    /// or of the user's: a link to a file of someone else's is not read.
    static func knownHostsTexts(peer pid: Int32, uid: uid_t, home: String?) -> [[UInt8]] {
        var texts: [[UInt8]] = []
        for path in ["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"] {
            if let text = readOwned(path, owner: 0) { texts.append(text) }
        }
        if let home, home.hasPrefix("/"), !home.split(separator: "/").contains("..") {
            for file in ["known_hosts", "known_hosts2"] {
                if let text = readOwned("/proc/\(pid)/root\(home)/.ssh/\(file)", owner: uid) { texts.append(text) }
            }
        }
        return texts
    }

    private static func readOwned(_ path: String, owner: uid_t) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == owner,
              st.st_size <= KnownHosts.maxBytes else { return nil }
        return readAll(fd: fd, limit: KnownHosts.maxBytes)
    }

    private static func readAll(_ path: String, limit: Int) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        return readAll(fd: fd, limit: limit)
    }

    private static func readAll(fd: Int32, limit: Int) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while out.count < limit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            out += chunk[0..<n]
        }
        return Array(out.prefix(limit))
    }
}
