#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// localauthd's options. Under systemd it takes none: the socket comes from the unit, the
/// helper and the configuration from their installed paths.
struct ServiceArguments {
    /// nil: the socket systemd passed (LISTEN_FDS).
    var listen: String?
    /// `--agent-listen PATH` (with `--listen`): the ssh-agent socket bound here too; nil:
    /// the one systemd passed, if it passed one (AgentDoor).
    var agentListen: String?
    /// ssh-agent connections one user may have served at once, by helpers (AgentDoor),
    /// apart from `perUserLimit`: ssh, git and an editor each hold one while they work; more
    /// wait for one of these to end.
    var agentPerUserLimit = 8
    /// Agent helper starts one user may make at once, and again per second after that
    /// (AgentDoor): `--agent-start-rate BURST/PER_SECOND`. Over it a connection waits.
    var agentStartBurst = 64
    var agentStartsPerSecond = 32
    var helperPath = ServiceArguments.installedHelper
    var configPath = ConfigFile.installedPath
    /// Seconds with no request running after which the service exits; 0: never. systemd
    /// starts it again at the next connection.
    var idleExitSeconds = 0
    /// Requests that may run at once for one user who is not root (a loop of one user's
    /// programs must not start root processes without end); root's callers (sudo, login,
    /// polkit's helper) share `rootLimit`.
    var perUserLimit = 4
    var rootLimit = 64
    /// Helper starts one user's share may make at once, and again per second after that
    /// (HelperStartRate; root's pool has its own). `--start-rate BURST/PER_SECOND`; a rate
    /// of 0 lets a test count exactly BURST starts.
    var userStartBurst = 16
    var userStartsPerSecond = 4
    /// `--peer-pidfd pid`: pin every peer by its pid, as on kernels before 6.5 (Debian 12's),
    /// so that path is tested where the kernel has SO_PEERPIDFD.
    var pinByPID = false
    /// `--absent-answer no`: every sign-in goes to a helper, fprintd absent too (ReaderAbsent),
    /// so that the helper's own answer for that case stays tested.
    var answerAbsent = true
    /// `--spare no`: no helper started ahead of the next request; each request's helper is
    /// started when the request has come, and handed it the same way (SpareHelper).
    var spare = true

    /// The helper installed beside this program (PREFIX/libexec/localauth/): the one the
    /// package or `scripts/install` put there with it.
    static var installedHelper: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "/usr/libexec/localauth/localauth-helper" }
        let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(exe[..<(exe.lastIndex(of: "/") ?? exe.startIndex)]) + "/localauth-helper"
    }

    struct Problem: Error { let text: String }

    static let usage = """
        usage: localauthd [--listen PATH [--agent-listen PATH]] [--agent-per-user-limit N] [--helper PATH] [--config PATH] [--idle-exit SECONDS]
                          [--per-user-limit N] [--peer-pidfd kernel|pid] [--absent-answer yes|no]
                          [--spare yes|no] [--start-rate BURST/PER_SECOND] [--agent-start-rate BURST/PER_SECOND]
        """

    static func parse(_ words: [String]) -> Result<ServiceArguments, Problem> {
        var parsed = ServiceArguments()
        var rest = words[...]
        while let word = rest.popFirst() {
            guard let value = rest.popFirst() else { return .failure(Problem(text: "\(word) needs a value")) }
            switch word {
            case "--listen": parsed.listen = value
            case "--agent-listen": parsed.agentListen = value
            case "--agent-per-user-limit":
                guard let n = Int(value), (1...64).contains(n) else {
                    return .failure(Problem(text: "--agent-per-user-limit takes a number of 1 to 64, not `\(value)`"))
                }
                parsed.agentPerUserLimit = n
            case "--helper": parsed.helperPath = value
            case "--config": parsed.configPath = value
            case "--peer-pidfd":
                guard value == "kernel" || value == "pid" else {
                    return .failure(Problem(text: "--peer-pidfd takes kernel or pid, not `\(value)`"))
                }
                parsed.pinByPID = value == "pid"
            case "--absent-answer", "--spare":
                guard value == "yes" || value == "no" else {
                    return .failure(Problem(text: "\(word) takes yes or no, not `\(value)`"))
                }
                if word == "--spare" { parsed.spare = value == "yes" } else { parsed.answerAbsent = value == "yes" }
            case "--start-rate", "--agent-start-rate":
                // An agent connection over its rate waits for the next start: it needs one.
                let least = word == "--agent-start-rate" ? 1 : 0
                let parts = value.split(separator: "/", omittingEmptySubsequences: false).map { Int($0) }
                guard parts.count == 2, let burst = parts[0], let rate = parts[1], (1...1000).contains(burst),
                      (least...1000).contains(rate) else {
                    return .failure(Problem(text: "\(word) takes BURST/PER_SECOND (1-1000, \(least)-1000), not `\(value)`"))
                }
                if word == "--start-rate" {
                    parsed.userStartBurst = burst
                    parsed.userStartsPerSecond = rate
                } else {
                    parsed.agentStartBurst = burst
                    parsed.agentStartsPerSecond = rate
                }
            case "--idle-exit", "--per-user-limit":
                guard let n = Int(value), (0...86_400).contains(n) else {
                    return .failure(Problem(text: "\(word) takes a number of 0 to 86400, not `\(value)`"))
                }
                if word == "--idle-exit" { parsed.idleExitSeconds = n } else { parsed.perUserLimit = max(1, n) }
            default: return .failure(Problem(text: "unknown option `\(word)`"))
            }
        }
        if parsed.agentListen != nil && parsed.listen == nil {
            return .failure(Problem(text: "--agent-listen goes with --listen (under systemd the ssh-agent socket is localauth-ssh-agent.socket)"))
        }
        for path in [parsed.listen, parsed.agentListen, parsed.helperPath, parsed.configPath].compactMap({ $0 }) where !path.hasPrefix("/") {
            return .failure(Problem(text: "`\(path)` is not an absolute path"))
        }
        return .success(parsed)
    }
}
