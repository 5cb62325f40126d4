#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// An ssh-agent peer of localauthd (Launch's `.agent`): the kernel's uid and the pinned pid.
/// Served the keys of its own uid only.
struct AgentPeer {
    let uid: uid_t
    let name: UserName
    let configPath: String
    let pid: Int32
    let acceptedAt: UInt64
    /// The account's home, where its known_hosts is (AgentDestination).
    let home: String?
}

/// One ssh-agent connection (draft-miller-ssh-agent), served until the client closes it or
/// stays silent for `idleSeconds`, then the helper exits. Messages are answered in order:
/// * REQUEST_IDENTITIES: the public keys of the peer's uid (SSHKeyStore);
/// * SIGN_REQUEST: one evaluation per signature (AgentSign), FAILURE for anything refused;
/// * EXTENSION `session-bind@openssh.com`: recorded when the host key's signature verifies
///   (AgentBindings), else FAILURE;
/// * everything else (adding and removing keys, locking, other extensions): FAILURE.
/// A frame longer than 256 KiB, an empty one, or a message that does not decode ends the
/// connection with a log line: its client is not an ssh-agent client, and nothing it
/// writes next can be trusted to start where it seems to.
enum AgentMode {
    /// ssh, git and ssh-keygen close their agent connection once they have signed; a
    /// connection kept open and silent this long is closed.
    static let idleSeconds: Int64 = 600
    /// Refusals one connection gets before it is closed: ssh offers each key once, so only
    /// a client that asks again and again for what it cannot have gets this far, and each
    /// refusal is a log line and a record on root's disk.
    static let maxRefusals = 16

    static func serve(_ peer: AgentPeer, log: LogSink) -> Never {
        let options = Options.load(configPath: peer.configPath, arguments: [], allowingArgument: { _ in false }, log: log)
        let log: LogSink = options.debug ? SyslogSink(ident: "localauth-helper", minimum: .debug) : log
        PolkitAgent.helperSocket = options.polkitAgentSocket
        var connection = AgentConnection(input: 0, output: 1)
        var session = AgentSession(peer: peer, options: options, log: log)
        var refusals = 0
        while true {
            HardDeadline.set(seconds: idleSeconds + 5)
            let body: [UInt8]
            switch connection.next(idleMillis: idleSeconds * 1000) {
            case .frame(let b): body = b
            case .closed: exit(0)
            case .idle:
                log.log(.info, "user \(peer.name) (pid \(peer.pid)): ssh-agent connection idle for \(idleSeconds) s, closed")
                exit(0)
            case .bad(let why):
                log.log(.warning, "user \(peer.name) (pid \(peer.pid)): ssh-agent connection closed: \(why)")
                exit(0)
            }
            let message: AgentMessage
            do { message = try AgentMessage.decode(body) } catch {
                log.log(.warning, "user \(peer.name) (pid \(peer.pid)): ssh-agent connection closed: "
                        + "a message that does not decode (\(error))")
                exit(0)
            }
            HardDeadline.set(seconds: HardDeadline.seconds(for: options))
            let (reply, afterwards) = session.answer(message, connection: connection)
            let sent = connection.send(reply)
            afterwards?()
            guard sent else {
                log.log(.info, "user \(peer.name) (pid \(peer.pid)): the ssh-agent client went away before its answer")
                exit(0)
            }
            if reply == .failure { refusals += 1 }
            if refusals >= maxRefusals {
                log.log(.warning, "user \(peer.name) (pid \(peer.pid)): ssh-agent connection closed after \(refusals) refusals")
                exit(0)
            }
        }
    }
}

/// One connection's state: its bindings, and what answers each message.
struct AgentSession {
    let peer: AgentPeer
    let options: Options
    let log: LogSink
    var bindings = AgentBindings()

    init(peer: AgentPeer, options: Options, log: LogSink) {
        self.peer = peer
        self.options = options
        self.log = log
    }

    var store: SSHKeyStore { SSHKeyStore(stateDirectory: options.stateDir, uid: peer.uid) }

    /// The reply, and what is to be done once it has been sent.
    mutating func answer(_ message: AgentMessage, connection: AgentConnection) -> (AgentReply, (() -> Void)?) {
        if case .signRequest(let request) = message {
            return AgentSign(peer: peer, options: options, bindings: bindings, connection: connection, log: log)
                .sign(request)
        }
        return (answerAtOnce(message), nil)
    }

    private mutating func answerAtOnce(_ message: AgentMessage) -> AgentReply {
        switch message {
        case .requestIdentities:
            return identities()
        case .signRequest:
            return .failure
        case .sessionBind(let b):
            if let why = bindings.bind(b, verifies: { HostKeySignature.isValid(hostKey: $0.hostKey, signature: $0.signature, data: $0.sessionID) }) {
                log.log(.warning, "user \(peer.name) (pid \(peer.pid)): session-bind refused: \(why) "
                        + "(host key \(AgentDestination.displayType(b.hostKey)) \(SSHPublicKey.fingerprint(b.hostKey)))")
                return .failure
            }
            log.log(.debug, "user \(peer.name) (pid \(peer.pid)): session bound to host key "
                    + "\(SSHPublicKey.fingerprint(b.hostKey))\(b.isForwarding ? " for forwarding" : "")")
            return .success
        case .unknownExtension(let name):
            log.log(.debug, "user \(peer.name) (pid \(peer.pid)): extension \(LogWords.short(name)) not served")
            return .failure
        case .unsupported(let type):
            log.log(.info, "user \(peer.name) (pid \(peer.pid)): ssh-agent message \(type) not served "
                    + "(keys are added and removed with localauthctl ssh)")
            return .failure
        }
    }

    /// The user's keys, by public blob; the key's name is the comment. A store that cannot
    /// be read lists none (and says why in the log).
    private func identities() -> AgentReply {
        do {
            let keys = try store.list()
            return .identities(keys.map { AgentReply.Identity(keyBlob: SSHKeyText.blob(point: $0.publicKey), comment: $0.name) })
        } catch {
            log.log(.warning, "user \(peer.name): the SSH keys cannot be listed: \(error)")
            return .identities([])
        }
    }
}

/// The connection's bytes: frames in (AgentFrame), replies out. The descriptor is
/// non-blocking (localauthd's accept4), so every wait is a poll.
struct AgentConnection {
    let input: Int32
    let output: Int32
    private var buffer: [UInt8] = []

    init(input: Int32, output: Int32) {
        self.input = input
        self.output = output
    }

    enum Next {
        case frame([UInt8])
        case closed
        case idle
        case bad(String)
    }

    mutating func next(idleMillis: Int64) -> Next {
        let end = MonotonicClock.millis() + idleMillis
        while true {
            do {
                let (body, used) = try AgentFrame.split(buffer)
                buffer.removeFirst(used)
                return .frame(body)
            } catch .incomplete {
                // read more below
            } catch {
                return .bad("\(error)")
            }
            let left = end - MonotonicClock.millis()
            guard left > 0 else { return .idle }
            var p = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(min(left, 60_000)))
            if ready < 0 && errno != EINTR { return .closed }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let n = chunk.withUnsafeMutableBytes { recv(input, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0, errno == EAGAIN || errno == EINTR { continue }
            guard n > 0 else {
                return buffer.isEmpty ? .closed : .bad("the client closed in the middle of a frame (\(buffer.count) bytes)")
            }
            buffer += chunk[0..<n]
        }
    }

    /// Whether the client wrote again, or closed, while its request is being answered.
    var clientStirred: Bool {
        var p = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0
    }

    /// The reply as one frame; false when the client is gone (or does not read for 10 s).
    func send(_ reply: AgentReply) -> Bool {
        var bytes = AgentFrame.frame(reply.encode())[...]
        let end = MonotonicClock.millis() + 10_000
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.send(output, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n > 0 { bytes = bytes.dropFirst(n); continue }
            guard n < 0, errno == EAGAIN || errno == EINTR, MonotonicClock.millis() < end else { return false }
            var p = pollfd(fd: output, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 100)
        }
        return true
    }
}
