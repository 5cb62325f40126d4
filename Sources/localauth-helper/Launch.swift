#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// Who this helper serves, from what localauthd handed over (SpareWait): the one way a
/// helper starts. Nothing the caller wrote is taken for who it is.
///
/// * `.rootPeer`: a peer of uid 0 (the module inside sudo, su, login, polkit's agent
///   helper): its request is root's (its PAM items and arguments are trusted as the
///   module's are), but the process it names as the caller must be the one that connected.
/// * `.unprivileged`: a peer that is not root (a screen locker, an application). The
///   request may then be anything the user wrote, since the user can connect to the socket
///   with a program of their own. So the helper authenticates the peer's user and nobody
///   else, takes paths, the bus and the policy numbers from root's configuration only, asks
///   logind about the peer (the caller) rather than the pid in the request, and clears a
///   lockout only for a password it checked itself (docs/PROTOCOL.md, "The unprivileged path").
/// * `.agent`: an ssh-agent client on localauthd's agent socket (any uid, root's own ssh
///   too): it is served the keys of the peer's uid and nothing else (AgentMode).
/// * `.refused`: not started by localauthd (any other command line, or not as root).
///
/// Why the handoff cannot be forged: it is read only with a real and effective uid of 0, on
/// the socket pair localauthd made. The helper is not setuid, so a user who runs it runs it
/// as themselves and is refused here, and could not read or write the root-only state anyway.
enum Launch {
    case rootPeer(RootPeer)
    case unprivileged(UnprivilegedCaller)
    case agent(AgentPeer)
    case refused(String)

    init(arguments: [String]) {
        guard let handoff = SpareWait.handoff(arguments) else {
            self = .refused("started by localauthd only (`\(SpareWait.flag)`, as root)")
            return
        }
        self.init(handoff: handoff)
    }

    init(handoff: SpareWait.Handoff) {
        // Never later than now: a later time would let grants made after the connection count.
        guard handoff.acceptedAt.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let accepted = UInt64(handoff.acceptedAt),
              accepted <= BootClock.nanos() else {
            self = .refused("the accept time `\(LogWords.short(handoff.acceptedAt))` is not a past CLOCK_BOOTTIME time")
            return
        }
        guard Launch.configPathOK(handoff.config) else {
            self = .refused("the configuration path is not absolute")
            return
        }
        guard let pid = Int32(handoff.pid), pid > 1, ServicePeer.adopt(pid: pid) else {
            self = .refused("pid `\(LogWords.short(handoff.pid))` is not the pidfd's process on fd 3")
            return
        }
        if handoff.agent {
            self = Launch.agentPeer(uidText: handoff.uid, config: handoff.config, pid: pid, acceptedAt: accepted)
            return
        }
        if handoff.uid == "0" {
            self = .rootPeer(RootPeer(pid: pid, configPath: handoff.config, polkit: handoff.polkit))
            return
        }
        self = Launch.unprivilegedPeer(uidText: handoff.uid, config: handoff.config, pid: pid, acceptedAt: accepted)
    }

    private static func configPathOK(_ config: String) -> Bool {
        config.hasPrefix("/") && !config.split(separator: "/").contains("..")
            && !config.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f })
    }

    /// A peer that is not root.
    private static func unprivilegedPeer(uidText: String, config: String, pid: Int32, acceptedAt: UInt64) -> Launch {
        guard let uid = Launch.parseUID(uidText) else {
            return .refused("uid `\(LogWords.short(uidText))` is not a user id")
        }
        guard let pw = getpwuid(uid), let raw = pw.pointee.pw_name,
              let name = try? UserName(String(cString: raw)) else {
            return .refused("uid \(uid) has no usable entry in the user database")
        }
        return .unprivileged(UnprivilegedCaller(uid: uid, name: name, configPath: config, callerPID: pid,
                                                acceptedAt: acceptedAt))
    }

    /// An ssh-agent peer: served for its own uid, root's included.
    private static func agentPeer(uidText: String, config: String, pid: Int32, acceptedAt: UInt64) -> Launch {
        guard let uid = uidText == "0" ? 0 : Launch.parseUID(uidText) else {
            return .refused("uid `\(LogWords.short(uidText))` is not a user id")
        }
        guard let pw = getpwuid(uid), let raw = pw.pointee.pw_name,
              let name = try? UserName(String(cString: raw)) else {
            return .refused("uid \(uid) has no usable entry in the user database")
        }
        let home = pw.pointee.pw_dir.map { String(cString: $0) }
        return .agent(AgentPeer(uid: uid, name: name, configPath: config, pid: pid, acceptedAt: acceptedAt, home: home))
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
        case .agent(let peer): return peer.configPath
        case .refused: return ConfigFile.installedPath
        }
    }

    /// Module arguments the request may set. From root's own service files, all of them;
    /// from a peer that is not root only how the prompt looks: everything that moves files, the bus
    /// or the policy's numbers (lockout threshold, tries, the password rules, reuse) comes
    /// from root's configuration, or a user could give themselves more tries than sudo allows.
    func allowsArgument(_ key: String) -> Bool {
        switch self {
        case .rootPeer: return true
        case .unprivileged, .refused: return UnprivilegedCaller.argumentKeys.contains(key)
        case .agent: return false
        }
    }
}

/// A root peer of localauthd. Its request is root's (its PAM items and arguments are
/// trusted as the module's are), but the process it names as the caller must be the one
/// that connected: the pid the kernel gave, not one written into the request.
struct RootPeer {
    let pid: Int32
    let configPath: String
    /// polkit's words from localauthd's handoff; kept for the request only when the peer is
    /// polkit's agent helper asking with the `polkit-1` service (CallerPurpose).
    var polkit: PolkitPurpose? = nil

    func check(_ request: inout HelperRequest) -> String? {
        guard request.callerPID == pid else {
            return "the request names pid \(request.callerPID.map(String.init) ?? "none") as its caller; the peer is pid \(pid)"
        }
        // Whether someone can type where the conversation reads: from the peer process, as
        // for every peer (CallerProcess), not from what the request says. A display may also
        // be named by the application's PAM_XDISPLAY, a PAM item of root's host.
        request.stdinTTY = CallerProcess.standardInputIsTerminal(pid)
        request.display = request.display || CallerProcess.hasDisplay(pid)
        request.polkit = polkit
        return nil
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
        case .rootPeer(let peer): return peer.check(&request)
        case .refused(let why): return why
        case .agent: return "an ssh-agent connection carries no request frame"
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
