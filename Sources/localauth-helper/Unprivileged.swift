#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth
import LocalAuthProtocol

/// How this helper was started (docs/PROTOCOL.md, "The unprivileged path").
///
/// * `.root`: by pam_localauth.so in a caller that runs as root (sudo, su, login, polkit's
///   agent helper). argv is the path alone. The request comes from root's PAM stack.
/// * `.rootPeer`: by localauthd for a root peer (see below).
/// * `.unprivileged`: by localauthd, for a peer that is not root (a screen locker, an
///   application): `--service-peer-uid UID --service-peer-pid PID --service-accepted-at
///   NANOS --config PATH` (NANOS: CLOCK_BOOTTIME when the connection was accepted), the
///   peer's pidfd on fd 3. The request may then be anything the user wrote, since the user
///   can connect to the socket with a program of their own. So the helper authenticates the
///   peer's user and nobody else, takes paths, the bus and the policy numbers from root's
///   configuration only, asks logind about the peer (the caller) rather than the pid in
///   the request, and clears a lockout only for a password it checked itself.
///
/// Why the flags cannot be abused: they only ever narrow what the helper does, and they are
/// accepted only with a real and effective uid of 0. The helper is not setuid, so a user who
/// runs it directly with them runs it as themselves and is refused here, and would not be
/// able to read or write the root-only state anyway. Real uid 0 comes only from root (who
/// gains nothing from narrowing itself), localauthd among it, which passes the uid and pid
/// the kernel gave for the connection.
enum Launch {
    case root
    /// Started by localauthd for a root peer (the module inside sudo, login, polkit's
    /// helper): root's request, from the process the kernel named as the peer.
    case rootPeer(RootPeer)
    case unprivileged(UnprivilegedCaller)
    case refused(String)

    init(arguments: [String], realUID: uid_t = getuid(), effectiveUID: uid_t = geteuid()) {
        let rest = Array(arguments.dropFirst())
        if rest.isEmpty {
            self = .root
            return
        }
        // localauthd: the peer's uid and pid from SO_PEERCRED, its pidfd on fd 3 (ServicePeer).
        let service = rest.count == 8 && rest[0] == "--service-peer-uid" && rest[2] == "--service-peer-pid"
            && rest[4] == "--service-accepted-at" && rest[6] == "--config"
        guard service else {
            self = .refused("unexpected arguments; only localauthd passes any")
            return
        }
        guard realUID == 0, effectiveUID == 0 else {
            self = .refused("\(rest[0]) refused: the helper is not running as root "
                            + "(only localauthd may pass it)")
            return
        }
        // Never later than now: a later time would let grants made after the connection count.
        guard rest[5].utf8.allSatisfy({ (0x30...0x39).contains($0) }), let accepted = UInt64(rest[5]),
              accepted <= BootClock.nanos() else {
            self = .refused("--service-accepted-at refused: `\(LogWords.short(rest[5]))` is not a past CLOCK_BOOTTIME time")
            return
        }
        self = Launch.servicePeer(uidText: rest[1], pidText: rest[3], acceptedAt: accepted, config: rest[7])
    }

    private static func servicePeer(uidText: String, pidText: String, acceptedAt: UInt64, config: String) -> Launch {
        guard let pid = Int32(pidText), pid > 1, ServicePeer.adopt(pid: pid) else {
            return .refused("--service-peer-pid refused: `\(LogWords.short(pidText))` is not the pidfd's process on fd 3")
        }
        if uidText == "0" {
            guard Launch.configPathOK(config) else { return .refused("--config refused: not an absolute path") }
            return .rootPeer(RootPeer(pid: pid, configPath: config))
        }
        return unprivilegedPeer(uidText: uidText, config: config, pidText: pidText, acceptedAt: acceptedAt)
    }

    private static func configPathOK(_ config: String) -> Bool {
        config.hasPrefix("/") && !config.split(separator: "/").contains("..")
            && !config.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f })
    }

    /// A peer that is not root.
    private static func unprivilegedPeer(uidText: String, config: String, pidText: String, acceptedAt: UInt64) -> Launch {
        guard let uid = Launch.parseUID(uidText) else {
            return .refused("--service-peer-uid refused: `\(LogWords.short(uidText))` is not a user id")
        }
        guard configPathOK(config) else { return .refused("--config refused: not an absolute path") }
        guard let pw = getpwuid(uid), let raw = pw.pointee.pw_name,
              let name = try? UserName(String(cString: raw)) else {
            return .refused("uid \(uid) has no usable entry in the user database")
        }
        guard let callerPID = Int32(pidText), callerPID > 1 else {
            return .refused("--service-peer-pid refused: `\(LogWords.short(pidText))` is not a process id")
        }
        return .unprivileged(UnprivilegedCaller(uid: uid, name: name, configPath: config, callerPID: callerPID,
                                                acceptedAt: acceptedAt))
    }

    /// A decimal uid as localauthd writes it: digits only, no sign, not root.
    static func parseUID(_ text: String) -> uid_t? {
        guard (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let n = UInt64(text), n > 0, n < UInt64(uid_t.max) else { return nil }
        return uid_t(n)
    }

    var configPath: String {
        switch self {
        case .unprivileged(let caller): return caller.configPath
        case .rootPeer(let peer): return peer.configPath
        case .root, .refused: return ConfigFile.installedPath
        }
    }

    /// Module arguments the request may set. From root's own service files, all of them;
    /// from a peer that is not root only how the prompt looks: everything that moves files, the bus
    /// or the policy's numbers (lockout threshold, tries, the password rules, reuse) comes
    /// from root's configuration, or a user could give themselves more tries than sudo allows.
    func allowsArgument(_ key: String) -> Bool {
        switch self {
        case .root, .rootPeer: return true
        case .unprivileged, .refused: return UnprivilegedCaller.argumentKeys.contains(key)
        }
    }
}

/// A root peer of localauthd. Its request is root's (its PAM items and arguments are
/// trusted as the module's are), but the process it names as the caller must be the one
/// that connected: the pid the kernel gave, not one written into the request.
struct RootPeer {
    let pid: Int32
    let configPath: String

    func check(_ request: HelperRequest) -> String? {
        request.callerPID == pid ? nil
            : "the request names pid \(request.callerPID.map(String.init) ?? "none") as its caller; the peer is pid \(pid)"
    }
}

struct UnprivilegedCaller {
    let uid: uid_t
    let name: UserName
    let configPath: String
    /// The program that called PAM or the library: the connection's peer, as the kernel
    /// names it; never the pid the request claims.
    let callerPID: Int32
    /// When localauthd accepted the connection (CLOCK_BOOTTIME ns): a right's grant counts
    /// only when it was written before (RightsMode.isThisProcess).
    let acceptedAt: UInt64

    /// What a screen locker's service file may still choose on this path.
    /// Not `scan_timeout`: a user could hold the reader (and every other user's sudo) for
    /// ten minutes with it.
    static let argumentKeys: Set<String> = ["reason", "fallback_title", "prompt",
                                            "debug", "helper_timeout"]

    /// Seconds the helper waits for the request and the password frame. The user can
    /// connect with a program of their own and never write: a root process must not wait for ever.
    static let requestTimeout: UInt32 = 30

    /// The request must be for the peer's user; the caller's pid is the peer's.
    func check(_ request: inout HelperRequest) -> String? {
        guard request.user == name else {
            return "request for user \(LogWords.word(request.user.value)) refused: the caller is uid \(uid) (\(name))"
        }
        request.callerPID = callerPID
        request.callerUID = uid
        request.terminalOwner = uid
        // Whether someone can be at the reader: from the caller process itself, not from
        // what the request claims.
        request.stdinTTY = CallerProcess.standardInputIsTerminal(callerPID)
        request.display = CallerProcess.hasDisplay(callerPID)
        return nil
    }
}

/// Facts about the calling process read from /proc and logind (root reads them), for a
/// peer that is not root, where the request's own `stdin_tty` and `display` are only claims.
enum CallerProcess {
    /// Its fd 0 is its controlling terminal (directly, or as /dev/tty).
    static func standardInputIsTerminal(_ pid: Int32) -> Bool {
        guard let controlling = ProcStat(pid: pid)?.terminal, controlling != 0 else { return false }
        var st = stat()
        guard stat("/proc/\(pid)/fd/0", &st) == 0, (st.st_mode & S_IFMT) == S_IFCHR else { return false }
        return UInt64(st.st_rdev) == controlling || UInt64(st.st_rdev) == UInt64(5) << 8
    }

    /// A graphical session: logind's session type where logind runs, else a display named
    /// in the process's environment.
    static func hasDisplay(_ pid: Int32) -> Bool {
        if let type = LoginSession.type(of: pid) { return ["x11", "wayland", "mir"].contains(type) }
        return environment(of: pid).contains { entry in
            (entry.hasPrefix("DISPLAY=") || entry.hasPrefix("WAYLAND_DISPLAY=")) && !entry.hasSuffix("=")
        }
    }

    private static func environment(of pid: Int32) -> [String] {
        let fd = open("/proc/\(pid)/environ", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }
}

extension Launch {
    /// Bounds the wait for the request on the unprivileged path (see `requestTimeout`).
    func boundRequestWait() {
        if case .unprivileged = self { HardDeadline.bound(UnprivilegedCaller.requestTimeout) }
    }

    /// Nil when the request may go on; otherwise why it is refused (nothing else happens).
    func admit(_ request: inout HelperRequest) -> String? {
        HardDeadline.rearm()
        switch self {
        case .root: return nil
        case .rootPeer(let peer): return peer.check(request)
        case .refused(let why): return why
        case .unprivileged(let caller): return caller.check(&request)
        }
    }

    /// `mode=authsucc`; from a peer that is not root the password frame's wait is bounded too.
    func authsucc(_ request: HelperRequest, options: Options, channel: FrameChannel, log: LogSink) -> Frame {
        var caller = AuthSucc.Caller(unprivileged: false, uid: nil)
        if case .unprivileged(let u) = self {
            caller = AuthSucc.Caller(unprivileged: true, uid: u.uid)
            HardDeadline.bound(UnprivilegedCaller.requestTimeout)
        }
        defer { HardDeadline.rearm() }
        return AuthSucc.run(request, caller: caller, options: options, channel: channel, log: log)
    }
}
