#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// `localauthctl ssh setup [--write]`: the one line that points ssh at localauthd's agent.
/// It is printed; `--write` appends it (as `Host *`, so that it applies after every host
/// block the file has) to the caller's ~/.ssh/config, only when neither that file nor
/// SSH_AUTH_SOCK names an agent yet: another agent is never replaced behind the user's back.
/// A file that includes others is not written either (what they set cannot be seen here).
/// Then it tells how git's signatures reach the agent: git signs through `ssh-keygen -Y sign`,
/// which reads SSH_AUTH_SOCK only, never IdentityAgent; that variable is the user's to set
/// (a shell profile is not a file to edit from here), and one naming another agent stays.
enum SSHSetup {
    static let agentSocket = "/run/localauth/ssh-agent"
    static var line: String { "IdentityAgent \(agentSocket)" }

    static func run(write: Bool) -> Int32 {
        let code = configure(write: write)
        tellGitSigning()
        return code
    }

    /// What git needs, on stdout the line to copy, on stderr why.
    static func tellGitSigning() {
        let current = getenv("SSH_AUTH_SOCK").map { String(cString: $0) } ?? ""
        if current == agentSocket {
            warn(tr(cliLanguage, "SSH_AUTH_SOCK names localauthd's agent: git signs through it"))
        } else if current.isEmpty {
            warn(tr(cliLanguage, "git signs with ssh-keygen, which reads SSH_AUTH_SOCK, not IdentityAgent: for signed commits add this line to your shell profile (~/.profile), or run git with SSH_AUTH_SOCK so set:"))
            say("export SSH_AUTH_SOCK=\(agentSocket)")
        } else {
            warn(tr(cliLanguage, "git signs with ssh-keygen, which reads SSH_AUTH_SOCK, not IdentityAgent; yours names another agent (%s), left as it is: for a commit signed by localauthd's agent, run git so:",
                    printable(current)))
            say("SSH_AUTH_SOCK=\(agentSocket) git commit -S")
        }
    }

    private static func configure(write: Bool) -> Int32 {
        guard write else {
            warn(tr(cliLanguage, "add this line to ~/.ssh/config (before any Host line), or run localauthctl ssh setup --write:"))
            say(line)
            return Exit.ok
        }
        guard let home = homeDirectory() else {
            return fail(SSHCommand.spec, .unavailable(tr(cliLanguage, "your home directory is unknown")))
        }
        if let other = getenv("SSH_AUTH_SOCK").map({ String(cString: $0) }), !other.isEmpty, other != agentSocket {
            return refuse(tr(cliLanguage, "SSH_AUTH_SOCK names another agent (%s): nothing written, so that it keeps serving ssh; add the line yourself to use localauthd's instead",
                             printable(other)))
        }
        let directory = home + "/.ssh"
        let path = directory + "/config"
        let existing: [UInt8]
        switch readConfig(path) {
        case .failure(let why): return fail(SSHCommand.spec, .failed(tr(cliLanguage, "cannot read %s: %s", path, why.text)))
        case .success(let bytes): existing = bytes
        }
        switch verdict(String(decoding: existing, as: UTF8.self)) {
        case .agentNamed(let value):
            if value == agentSocket {
                say(tr(cliLanguage, "%s already points ssh at localauthd's agent", path))
                return Exit.ok
            }
            return refuse(tr(cliLanguage, "%s already names an agent (%s): nothing written", path, printable(value)))
        case .includes:
            return refuse(tr(cliLanguage, "%s includes other files, which may name an agent: nothing written; add the line yourself", path))
        case .free:
            break
        }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            return fail(SSHCommand.spec, .failed(tr(cliLanguage, "cannot write %s: %s", directory, String(cString: strerror(errno)))))
        }
        let separator = existing.isEmpty ? "" : existing.last == UInt8(ascii: "\n") ? "\n" : "\n\n"
        let text = separator + "# localauthd's ssh-agent: keys behind the finger (localauthctl ssh)\nHost *\n    \(line)\n"
        if let why = append(path, text) {
            return fail(SSHCommand.spec, .failed(tr(cliLanguage, "cannot write %s: %s", path, why)))
        }
        say(tr(cliLanguage, "appended to %s: %s", path, line))
        return Exit.ok
    }

    struct Why: Error {
        let text: String
    }

    enum Verdict: Equatable {
        /// No IdentityAgent and no Include: the line may be added.
        case free
        /// An IdentityAgent (its value) anywhere in the file, in any host block.
        case agentNamed(String)
        case includes
    }

    /// What the file says, as ssh_config(5) reads it: keywords case-insensitive, `=` or
    /// white space before the value, comments ignored.
    static func verdict(_ text: String) -> Verdict {
        var includes = false
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = raw.drop { $0 == " " || $0 == "\t" }
            guard !line.isEmpty, line.first != "#" else { continue }
            let keyword = line.prefix { $0 != " " && $0 != "\t" && $0 != "=" }.lowercased()
            var value = line.dropFirst(keyword.count).drop { $0 == " " || $0 == "\t" }
            if value.first == "=" { value = value.dropFirst().drop { $0 == " " || $0 == "\t" } }
            let word = String(value.prefix { $0 != " " && $0 != "\t" }).replacingQuotes()
            if keyword == "identityagent" { return .agentNamed(word) }
            if keyword == "include" { includes = true }
        }
        return includes ? .includes : .free
    }

    private static func refuse(_ message: String) -> Int32 {
        warn("ssh setup: " + message)
        say(line)
        return Exit.refused
    }

    private static func homeDirectory() -> String? {
        if let raw = getenv("HOME"), raw.pointee == 0x2F { return String(cString: raw) }
        guard let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir else { return nil }
        return String(cString: dir)
    }

    /// The file's bytes (none when it does not exist); a symlink is followed, as ssh does.
    private static func readConfig(_ path: String) -> Result<[UInt8], Why> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { return errno == ENOENT ? .success([]) : .failure(Why(text: String(cString: strerror(errno)))) }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while out.count < 4 << 20 {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return .failure(Why(text: String(cString: strerror(errno)))) }
            if n == 0 { break }
            out += chunk[0..<n]
        }
        return .success(out)
    }

    /// Appends `text` (created 0600 when missing: ssh refuses a config others can write).
    private static func append(_ path: String, _ text: String) -> String? {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return String(cString: strerror(errno)) }
            done += n
        }
        return fsync(fd) == 0 ? nil : String(cString: strerror(errno))
    }
}

private extension String {
    /// A value in double quotes, as ssh_config allows, without them.
    func replacingQuotes() -> String {
        count >= 2 && hasPrefix("\"") && hasSuffix("\"") ? String(dropFirst().dropLast()) : self
    }
}
