#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

/// One request's helper: a spare (`localauth-helper --service-spare`, SpareHelper) that
/// took the request's connection and the peer's pidfd. Started by `spawn`: fd 0 its end of
/// the socket pair, fd 1 and 2 /dev/null (it logs to syslog), fd 3 /dev/null until the
/// handoff; its own session, default signals, a mask holding only SIGUSR1 and SIGUSR2, and
/// the fixed environment. The helper trusts the handoff because only root can start it
/// with real uid 0 (Launch in the helper).
struct Worker {
    let pid: pid_t
    /// Readable once the helper has exited.
    let pidfd: Int32
    let uid: uid_t
    /// What its request is to the reader (LockScreenTurn): set as it starts.
    var claim = ReaderClaim(kind: .other, userName: nil, uid: nil)
    /// The share it counts against (Peer.share).
    let share: uid_t
    /// It serves an ssh-agent connection (AgentDoor): counted against the agent's limit,
    /// not the share's requests.
    var agent = false

    struct Problem: Error { let text: String }

    static let environment = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]

    /// `argv` with fd 0 and 1 on `input`, fd 2 on /dev/null, fd 3 on `pidfd` (or /dev/null),
    /// and the helper's session, signals and environment above; its pid and a pidfd of it.
    static func spawn(_ argv: [String], input: Int32, output: Int32? = nil, pidfd: Int32?,
                      helperPath: String) -> Result<(pid: pid_t, pidfd: Int32), Problem> {
        let devnull = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard devnull >= 0 else { return .failure(Problem(text: "/dev/null: \(String(cString: strerror(errno)))")) }
        defer { close(devnull) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // In this order: fd 0-2 are held open by the service (ensureStandardDescriptors), so
        // neither the connection nor the pidfd sits on 0-3 except where it is put.
        posix_spawn_file_actions_adddup2(&actions, input, 0)
        posix_spawn_file_actions_adddup2(&actions, output ?? input, 1)
        posix_spawn_file_actions_adddup2(&actions, devnull, 2)
        posix_spawn_file_actions_adddup2(&actions, pidfd ?? devnull, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t(), held = sigset_t()
        sigfillset(&all)
        sigemptyset(&held)
        posix_spawnattr_setsigdefault(&attributes, &all)
        // SIGUSR1 (the system prepares to sleep, LogindWatch) held until the helper has its
        // handler (SleepSignal.install unblocks it): before that its default would end it.
        // The same for SIGUSR2 (a lock screen takes the reader, LockScreenTurn).
        sigaddset(&held, SIGUSR1)
        sigaddset(&held, SIGUSR2)
        posix_spawnattr_setsigmask(&attributes, &held)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | la_posix_spawn_setsid))
        var pid: pid_t = 0
        let result = withCStrings(argv) { cargv in
            withCStrings(environment) { cenv in
                posix_spawn(&pid, helperPath, &actions, &attributes, cargv, cenv)
            }
        }
        guard result == 0 else { return .failure(Problem(text: "\(helperPath): \(String(cString: strerror(result)))")) }
        let watched = la_pidfd_open(pid)
        guard watched >= 0 else {
            // Not watchable (out of descriptors): ended at once rather than waited for, which
            // would hold every other caller for as long as this request could run. Its
            // caller sees the connection close before any frame: the password.
            let why = String(cString: strerror(errno))
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return .failure(Problem(text: "pidfd_open(\(pid)): \(why); the helper was stopped"))
        }
        return .success((pid, watched))
    }

    /// Reaps the exited helper; nil for a normal exit, else how it ended.
    func collect() -> String? {
        defer { close(pidfd) }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return "could not be reaped: \(String(cString: strerror(errno)))" }
        let signalNumber = status & 0x7f
        if signalNumber != 0 { return "was killed by signal \(signalNumber)" }
        let code = (status >> 8) & 0xff
        return code == 0 ? nil : "exited with status \(code)"
    }
}

/// argv/envp for posix_spawn: NUL-terminated copies that live for the call.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { pointers.forEach { free($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
