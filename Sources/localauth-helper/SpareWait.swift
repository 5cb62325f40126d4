#if canImport(Glibc)
import Glibc
#endif
import CLinux
import FprintdClient
import LocalAuth

/// The one way a helper starts: localauthd runs it as `localauth-helper --service-spare`
/// ahead of a request (SpareHelper in localauthd), so that its start-up (loading its
/// libraries, the Swift runtime) is over before a caller waits for it. Before anything else
/// it waits here for one message on fd 0, localauthd's end of a socket pair: the request's
/// connection and its peer's pidfd (SCM_RIGHTS), with the text `UID\nPID\nNANOS\nCONFIG`
/// (the peer's uid from SO_PEERCRED, its pid, CLOCK_BOOTTIME at the accept, the
/// configuration's path), and for an ssh-agent connection a fifth line `ssh-agent` (the
/// connection then speaks the ssh-agent protocol, AgentMode, never a request frame), or for
/// a request of polkit's agent helper four more, `polkit\nACTION\nMESSAGE\nPROGRAM`: what
/// localauthd read of the agent's one pending authentication (PolkitPurpose). The
/// connection then goes on fd 0 and 1 and the pidfd on fd 3.
///
/// Nothing of a request is known before the message: the configuration, the state and the
/// caller are all read after it. While it waits, a spare started with `--config CONFIG`
/// readies what belongs to no request (Ahead): the bus that configuration names, used only
/// if the request's own options name it too. No other way in: a helper run with any other
/// arguments, or not by root, is refused (Launch).
enum SpareWait {
    static let flag = "--service-spare"

    /// What localauthd handed over, as text (Launch checks each field).
    struct Handoff {
        let uid: String
        let pid: String
        let acceptedAt: String
        let config: String
        /// The connection is an ssh-agent client's (localauthd's AgentDoor).
        let agent: Bool
        /// polkit's action for the request, as localauthd read it from polkitd's call.
        var polkit: PolkitPurpose? = nil
    }

    /// The fifth line of an ssh-agent connection's handoff.
    static let agentKind = "ssh-agent"

    /// The handoff, once it came; nil when `given` is not a spare's command line run by root
    /// (`--service-spare`, optionally with `--config CONFIG` for what it readies ahead).
    /// Exits when localauthd closed its end first (nothing was asked) or the message is bad.
    static func handoff(_ given: [String]) -> Handoff? {
        guard given.count == 2 || (given.count == 4 && given[2] == "--config"), given[1] == flag,
              getuid() == 0, geteuid() == 0 else { return nil }
        // What can be made ready before a request without knowing anything of it (Ahead).
        Ahead.prepare(configPath: given.count == 4 ? given[3] : nil)
        // Four lines of at most a few hundred bytes, the configuration's path, and polkit's
        // words (each cut to 160 scalars): well within.
        var buffer = [UInt8](repeating: 0, count: 16384)
        var fds: [Int32] = [-1, -1, -1, -1]
        var count: Int32 = 0
        var n: Int
        repeat {
            n = buffer.withUnsafeMutableBytes { raw in
                fds.withUnsafeMutableBufferPointer { la_recv_fds(0, raw.baseAddress, raw.count, $0.baseAddress, 4, &count) }
            }
        } while n < 0 && errno == EINTR
        // localauthd closed its end (it stopped, or let this spare go): nothing was asked.
        if n == 0 { exit(0) }
        let log = SyslogSink(ident: "localauth-helper")
        guard n > 0 else {
            log.log(.error, "a spare helper's wait failed: \(String(cString: strerror(errno)))")
            exit(1)
        }
        let fields = String(decoding: buffer[0..<n], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let polkit = fields.count == 8 ? PolkitPurpose(handoffLines: Array(fields[4...])) : nil
        guard count == 2, fields.count == 4 || (fields.count == 5 && fields[4] == agentKind) || polkit != nil else {
            for i in 0..<Int(count) { close(fds[i]) }
            log.log(.error, "a spare helper got a message it cannot read (\(count) descriptors, \(fields.count) fields)")
            exit(1)
        }
        let (connection, pidfd) = (fds[0], fds[1])
        guard dup2(connection, 0) == 0, dup2(connection, 1) == 1, dup2(pidfd, ServicePeer.descriptor) == ServicePeer.descriptor else {
            log.log(.error, "a spare helper could not take its connection: \(String(cString: strerror(errno)))")
            exit(1)
        }
        for fd in [connection, pidfd] where fd > ServicePeer.descriptor { close(fd) }
        return Handoff(uid: String(fields[0]), pid: String(fields[1]), acceptedAt: String(fields[2]),
                       config: String(fields[3]), agent: fields.count == 5, polkit: polkit)
    }
}

/// What a spare readies while it waits, none of it a user's: the name service's modules,
/// libgcrypt and the time zone loaded, and the bus as the configuration names it (SpareBus: the
/// connection as root, fprintd's readers and their signals), all while fd 0 is watched, so
/// that a request that comes first is never delayed by it. The configuration is read again
/// after the request, as in any helper; the bus prepared here is used only if the request's
/// options name the same address, and only by the request's first sensor. A bus that cannot
/// be reached leaves nothing prepared (the request connects as before).
enum Ahead {
    static let quietMillis: Int32 = 50

    static func prepare(configPath: String?) {
        // The name service's modules (nsswitch's every passwd source: a name no source has
        // goes through them all), libgcrypt's set-up, the time zone: loaded once, the same
        // for any request. At once: a few hundred microseconds that cannot be interrupted,
        // better spent now than when the next request may be there.
        _ = getpwnam("localauth-spare-helper-warm-up")
        _ = Crypto.sha256([])
        tzset()
        guard let configPath else { return }
        // A spare is started as its predecessor takes a request: its calls would be served
        // by the bus daemon and fprintd while they serve that request's. A request that
        // comes within this quiet time gets nothing prepared (it connects itself).
        var one = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        if poll(&one, 1, quietMillis) != 0 { return }
        let options = Options.resolve(configPath: configPath).options
        let log = SyslogSink(ident: "localauth-helper", minimum: options.debug ? .debug : .info)
        SpareBus.prepare(address: options.dbusAddress, timeoutSeconds: options.busTimeout, waitingFor: 0) {
            log.log(.debug, "a spare helper: \($0)")
        }
    }
}
