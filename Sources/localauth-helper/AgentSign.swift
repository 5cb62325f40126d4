#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth
import LocalAuthProtocol

/// One SIGN_REQUEST: one signature is one evaluation, with every rule `sudo` has (presence,
/// tries, the lockout, the password after boot, the enrolled set), unless the key's reuse
/// window holds for the same scope. In order, each refusal a FAILURE before what follows:
/// 1. the key, by its blob, among the peer uid's keys only;
/// 2. the connection: none after a failed session-bind (AgentBindings.signRefusal);
///    the data: a user authentication (its session the bound one, AgentBindings) or an
///    SSHSIG signature; anything else is refused, since no prompt could say what it is;
/// 3. forwarded (a forwarding bind on the connection): refused unless the key allows it;
/// 4. a `biometry-current-set` key whose fingers changed: void;
/// 5. the reuse window of the key for this scope (SSHKeyRule): signed at once;
/// 6. presence (Presence.judge for the pinned peer), then the evaluation of the key's
///    requirement, prompting on the requester's terminal (TerminalDeviceUI) or, where it
///    has none, in the desktop's polkit dialog (AgentDialog);
/// 7. a match that authorizes the key: signed with its P-256 key, the use recorded.
/// Every outcome is one log line and one entry of `localauthctl ssh log`.
struct AgentSign {
    let peer: AgentPeer
    let options: Options
    let bindings: AgentBindings
    let connection: AgentConnection
    let log: LogSink

    /// How a request ended: the reply, a word for the record, the cause for the log.
    struct Outcome {
        var reply: AgentReply
        var word: String
        var cause: String

        static func refused(_ word: String, _ cause: String) -> Outcome { Outcome(reply: .failure, word: word, cause: cause) }
    }

    var store: SSHKeyStore { SSHKeyStore(stateDirectory: options.stateDir, uid: peer.uid) }

    /// The reply, and what is recorded once it has been sent (the log line and the use: a
    /// record is written and synced to disk, and the requester need not wait for that).
    func sign(_ request: AgentMessage.SignRequest) -> (AgentReply, afterwards: (() -> Void)?) {
        let record: SSHKeyRecord
        do {
            guard let found = try store.find(publicBlob: request.keyBlob) else {
                // ssh offers what IDENTITIES listed; anything else is no key of this user.
                log.log(.info, "user \(peer.name) (pid \(peer.pid)): a signature asked with key "
                        + "\(SSHPublicKey.fingerprint(request.keyBlob)), which is not one of the user's: refused")
                return (.failure, nil)
            }
            record = found
        } catch {
            log.log(.warning, "user \(peer.name): the SSH keys cannot be read: \(error)")
            return (.failure, nil)
        }
        let chain = ProgramChain.of(peer: peer.pid, uid: peer.uid, stillRuns: { Self.peerRuns(peer.pid) })
        let (prompt, scope, early) = judge(request, record: record, chain: chain)
        let outcome = early ?? approveAndSign(request, record: record, prompt: prompt, scope: scope)
        return (outcome.reply, { keep(outcome, record: record, prompt: prompt, chain: chain) })
    }

    // MARK: - Before any scan

    /// The prompt and the reuse scope of the request, and its refusal when it has one.
    private func judge(_ request: AgentMessage.SignRequest, record: SSHKeyRecord,
                       chain: ProgramChain) -> (AgentPrompt, String, Outcome?) {
        func destination(_ key: [UInt8]) -> AgentDestination {
            AgentDestination.of(hostKey: key, peer: peer.pid, uid: peer.uid, home: peer.home, log: log)
        }
        let through = bindings.forwardedThrough.map { destination($0.hostKey) }
        var action = AgentPrompt.Action.signFile(namespace: "?")
        var scope = ""
        var refusal: Outcome?
        switch SignedData.classify(request.data) {
        case .userauth(let auth):
            let bound = bindings.boundForAuthentication.map { destination($0.hostKey) }
            action = .login(user: auth.user, destination: bound)
            scope = bound.map { SSHKeyRule.hostScope(hostKeyFingerprint: $0.fingerprint) } ?? ""
            if let why = bindings.userauthRefusal(auth) { refusal = .refused("refused-session", why) }
            if bound?.revoked == true { refusal = .refused("refused-revoked", "known_hosts marks the host key @revoked") }
        case .sshsig(let sig):
            action = sig.namespace == "git" ? .gitCommit : .signFile(namespace: sig.namespace)
            scope = SSHKeyRule.namespaceScope(sig.namespace)
        case .other:
            refusal = .refused("refused-unknown-data", "the data is neither a login nor an SSHSIG signature: no prompt could say what it is")
        }
        if let why = bindings.signRefusal { refusal = .refused("refused-bind-failed", why) }
        if let through, !scope.isEmpty { scope = SSHKeyRule.forwardedScope(scope, through: through.fingerprint) }
        let prompt = AgentPrompt(key: record.name, action: action, forwardedThrough: through, chain: chain)
        if refusal == nil, SSHKeyRule.forwardingRefused(record, forwarded: bindings.forwarded) {
            refusal = .refused("refused-forwarded", "a forwarded request, and the key does not allow forwarding")
        }
        if refusal == nil, record.requirement == .biometryCurrentSet {
            switch enrolledDomainState() {
            case .success(let now) where !SSHKeyRule.stillValid(record, enrolledNow: now):
                refusal = .refused("refused-invalidated", "the enrolled fingerprints changed since the key was created")
            case .failure(let e):
                refusal = .refused(e.code.name, "the enrolled set cannot be read: \(e.cause)")
            default: break
            }
        }
        return (prompt, scope, refusal)
    }

    // MARK: - The approval

    private func approveAndSign(_ request: AgentMessage.SignRequest, record: SSHKeyRecord,
                                prompt: AgentPrompt, scope: String) -> Outcome {
        let now = BootStamp.now(bootID: LinuxSystem().bootID())
        if !scope.isEmpty, let last = try? store.reuse(for: record, scope: scope),
           SSHKeyRule.reuseApplies(record, last: last, now: now) {
            return signed(request, record: record, word: "reused", cause: "inside the key's reuse window")
        }
        let approval = AgentApproval(peer: peer, options: options, connection: connection, log: log)
        switch approval.approve(record, prompt: prompt) {
        case .denied(let refusal):
            return refusal
        case .approved(let method):
            let outcome = signed(request, record: record, word: "signed", cause: "matched (\(method.rawValue))")
            if case .signature = outcome.reply, let now {
                do { try store.recordUse(for: record, scope: scope, at: now) } catch {
                    log.log(.warning, "user \(peer.name): the approval of key \(record.name) not kept for reuse: \(error)")
                }
            }
            return outcome
        }
    }

    private func signed(_ request: AgentMessage.SignRequest, record: SSHKeyRecord, word: String, cause: String) -> Outcome {
        do {
            let der = try P256.sign(message: request.data, privateKey: record.privateKey, publicKey: record.publicKey)
            return Outcome(reply: .signature(try SSHSignature.p256(der: der)), word: word, cause: cause)
        } catch {
            return .refused("failed", "signing failed: \(error)")
        }
    }

    // MARK: - The record

    private func keep(_ outcome: Outcome, record: SSHKeyRecord, prompt: AgentPrompt, chain: ProgramChain) {
        log.log(outcome.word == "signed" || outcome.word == "reused" ? .info : .notice,
                "user \(peer.name) key \(LogWords.word(record.name)) \(outcome.word): \(prompt.what); "
                + "program \(chain.text) (pid \(peer.pid)): \(outcome.cause) approves=\"\(LogWords.clean(prompt.what))\"")
        let use = SSHKeyUse(at: Timestamp(time(nil)), key: record.name, what: prompt.what, outcome: outcome.word,
                            chain: chain.text)
        do { try store.appendUse(use) } catch {
            log.log(.warning, "user \(peer.name): the use of key \(record.name) not recorded: \(error)")
        }
    }

    // MARK: - Facts

    /// The enrolled set's domain state now (nil: none enrolled).
    private func enrolledDomainState() -> Result<String?, EvaluationError> {
        Result(catching: { () throws(EvaluationError) in
            try EnrolledDomain.now(of: peer.name.value, options: options, log: log)
        })
    }

    /// The peer still runs (its pidfd, handed over by localauthd).
    static func peerRuns(_ pid: Int32) -> Bool {
        guard let pin = CallerPin(caller: pid) else { return false }
        defer { pin.close() }
        return pin.stillRunning
    }
}

/// What the evaluation behind a signature ended with.
enum AgentVerdict {
    case approved(EvaluationMachine.Outcome.Method)
    case denied(AgentSign.Outcome)
}

/// The evaluation behind one signature: presence for the pinned peer, then the key's
/// requirement's policy with the requester's terminal as the interface, or the desktop's
/// polkit dialog where it has none.
struct AgentApproval {
    let peer: AgentPeer
    let options: Options
    let connection: AgentConnection
    let log: LogSink

    func approve(_ record: SSHKeyRecord, prompt: AgentPrompt) -> AgentVerdict {
        guard let pin = CallerPin(caller: peer.pid) else {
            return .denied(.refused("refused-gone", "the requester ended before its request was judged"))
        }
        defer { pin.close() }
        let language = AgentPrompt.language(of: peer.pid)
        Catalog.load(language)
        let watch = [pin.descriptor, connection.input]
        let ui = TerminalDeviceUI.open(peer: peer.pid, uid: peer.uid, language: language, watch: watch, log: log)
        let request = helperRequest(record, terminal: ui != nil, language: language)
        let presence = Presence.judge(request, options: options, log: log)
        if let refusal = presence.refusal {
            return .denied(.refused(refusal.code.name, "presence: \(refusal.cause)"))
        }
        // localauthd's word about a scan (a suspend, the lock screen's turn) that came while
        // this connection was idle between signatures was for no scan of this one.
        if let stale = SleepSignal.pendingStop() {
            log.log(.debug, "user \(peer.name): a word that came between signatures dropped: \(stale.cause)")
        }
        guard let ui else {
            return AgentDialog(peer: peer, options: options, request: request, watch: watch, log: log)
                .approve(record, prompt: prompt, language: language)
        }
        ui.write(lines: prompt.lines(language))
        var o = options
        o.reuseDuration = 0  // the key's own reuse window is the only one (SSHKeyRule)
        let store = FileStateStore(directory: o.stateDir)
        let verifier = record.requirement.allowsPassword
            ? AppPasswordVerifier(store: store, rules: Rules(o), unprivileged: true, log: log) : nil
        let wake: [WakeSource] = [AgentPeerWake(fd: pin.descriptor), AgentClientWake(fd: connection.input)]
            + (presence.watch.map { [$0] } ?? []) + (SleepSignal.wakeSource().map { [$0] } ?? [])
        let env = EvaluationEnvironment(
            user: peer.name, terminal: "",
            sensor: FprintdSensor(address: o.dbusAddress, busTimeout: o.busTimeout, fprintDir: o.fprintDir, log: log),
            store: store, options: o, ui: ui, passwordVerifier: verifier, log: log, wakeSources: wake, language: language)
        let evaluation = PolicyEvaluation(environment: env)
        switch evaluation.run(SSHKeyRule.policy(record.requirement)) {
        case .success(let method):
            let domain = evaluation.evaluatedPolicyDomainState.map { String(decoding: $0, as: UTF8.self) }
            guard method == .password || SSHKeyRule.matchAuthorizes(record, matchedDomainState: domain) else {
                return .denied(.refused("refused-invalidated", "the finger matched is not of the set the key was created with"))
            }
            return .approved(method)
        case .notOptedIn:
            return .denied(.refused("not-opted-in", "fingerprint sign-in is turned off for this user"))
        case .failure(let e):
            return .denied(.refused(e.code.name, e.cause))
        }
    }

    /// The request presence is judged on: an application's, for the pinned peer, with the
    /// facts from /proc (CallerProcess), as Launch's unprivileged path sets them. "Reads a
    /// terminal" is whether the prompt will be on its terminal.
    func helperRequest(_ record: SSHKeyRecord, terminal: Bool, language: Language) -> HelperRequest {
        let policy: Request.Policy = record.requirement.allowsPassword ? .owner : .biometrics
        let caller = Request.Caller(user: peer.name.value, service: "ssh-agent", callerUID: UInt32(peer.uid), pid: peer.pid)
        return HelperRequest(wire: .app(caller, .evaluate(policy)), user: peer.name, stdinTTY: terminal,
                             display: CallerProcess.hasDisplay(peer.pid), callerPID: peer.pid,
                             callerUID: peer.uid, terminalOwner: peer.uid, keys: KeyValues([]))
    }
}

/// The requester ended (Ctrl-C at its terminal ends ssh or git): the scan ends, nothing is
/// signed.
final class AgentPeerWake: WakeSource {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    func interruption() -> EvaluationError? {
        EvaluationError(.appCancel, cause: "the requesting program ended")
    }
}

/// The client closed its connection, or wrote again before its answer (no ssh-agent client
/// does): the scan ends, nothing is signed.
final class AgentClientWake: WakeSource {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    func interruption() -> EvaluationError? {
        EvaluationError(.appCancel, cause: "the ssh-agent client closed or wrote again before its answer")
    }
}
