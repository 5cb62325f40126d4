#if canImport(Glibc)
import Glibc
#endif
import CLinux
import CSystemd
import LocalAuth
import Synchronization

/// Set by SIGTERM and SIGINT; the loop ends at its next wake-up (poll returns EINTR).
let stopRequested = Atomic<Int32>(0)

/// The accept loop: each connection's peer is identified, counted against its user's limit
/// and handed to a helper of its own; helpers are watched through pidfds and reaped.
struct Service {
    let listener: Listener
    /// The ssh-agent socket and its limits (nil: no such socket).
    private var agent: AgentDoor?
    let arguments: ServiceArguments
    let log: LogSink
    private var running: [Worker] = []
    /// Accepted connections whose request has not come yet (Waiting).
    private var waiting: [Waiting] = []
    /// Connections an application keeps open for its next preflights (KeptConnections).
    private var kept = KeptConnections()
    /// The helper started ahead of the next request (SpareHelper; nil with --spare no).
    private var spare: SpareHelper?
    /// Lock screens that wait for the scans they ended (LockScreenTurn).
    private var turn = LockScreenTurn()
    private var idleSince = MonotonicClock.millis()
    /// logind's sleep announcements and new sessions (nil where there is no bus to follow).
    private var logind: LogindWatch?
    /// polkit's authentications under way, to name them to a touch (nil: no bus).
    private var polkit: PolkitWatch?
    /// Answers applications' preflights itself while the enrolled set's record is current.
    private let preflight: ServicePreflight
    /// Answers sign-ins itself while fprintd is absent (nil: --no-absent-answer).
    private var readerAbsent: ReaderAbsent?
    /// What the service keeps of root's configuration, and the file's stamp when it was
    /// read (ConfigReload.swift): read again when the file changes.
    private var options: Options
    private var configStamp: FileStamp?
    private var configCheckedAt: Int64 = 0
    /// The signal mask during the wait: the service's own, with SIGTERM and SIGINT open.
    private var waitMask = sigset_t()
    private let configWatch: ConfigDirectoryWatch?
    /// Why the loop failed, when it did (main.swift exits 1); nil after a stop it was asked for.
    private(set) var failure: String?
    /// Each share's rate of helper starts (RateLimit.swift).
    private var startRate: HelperStartRate
    /// What callers did wrong, a line per uid and kind per interval (QuietLog).
    private var quiet = QuietLog()

    init(listener: Listener, agent: AgentDoor?, arguments: ServiceArguments, log: LogSink) {
        self.listener = listener
        self.agent = agent
        self.arguments = arguments
        self.log = log
        // Root's configuration: the bus to follow and to ask about fprintd, and where the
        // state is. Each helper reads it again for its request.
        configWatch = ConfigDirectoryWatch(configPath: arguments.configPath)
        configStamp = FileStamp(path: arguments.configPath)
        options = Options.load(configPath: arguments.configPath, log: log)
        logind = LogindWatch.start(options: options, log: log)
        polkit = PolkitWatch.start(options: options, log: log)
        readerAbsent = arguments.answerAbsent ? ReaderAbsent(address: options.dbusAddress) : nil
        preflight = ServicePreflight(log: log)
        startRate = HelperStartRate(userBurst: arguments.userStartBurst, userPerSecond: arguments.userStartsPerSecond)
        for sig in [SIGTERM, SIGINT] {
            signal(sig) { number in stopRequested.store(number, ordering: .relaxed) }
        }
        // Blocked except inside the wait (la_ppoll_millis), so a stop that comes while a
        // request is handled ends the next wait rather than being slept through.
        var stops = sigset_t()
        sigemptyset(&stops)
        sigaddset(&stops, SIGTERM)
        sigaddset(&stops, SIGINT)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &stops, &previous)
        sigdelset(&previous, SIGTERM)
        sigdelset(&previous, SIGINT)
        waitMask = previous
    }

    /// Runs until asked to stop or idle for `idleExitSeconds`; returns why it ended. The
    /// spare helper goes with it (running helpers finish their requests).
    mutating func run() -> String {
        startSpare()
        let why = serveUntilTheEnd()
        spare?.discard()
        spare = nil
        return why
    }

    private mutating func serveUntilTheEnd() -> String {
        let watchdog = Watchdog()
        while true {
            // The listener, logind's bus (or -1: ignored by poll), the configuration's
            // directory, the spare helper's exit, the ssh-agent socket, the helpers, the
            // connections waiting for their request, the connections kept open for
            // preflights, then the ssh-agent connections held for their first message.
            // polkit's three (PolkitWatch) come before the helpers.
            var fds = [pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: logind?.fd ?? -1, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: configWatch?.fd ?? -1, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: spare?.pidfd ?? -1, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: agent?.listener.fd ?? -1, events: Int16(POLLIN), revents: 0)]
                + (polkit?.fds ?? [-1, -1, -1]).map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                + running.map { pollfd(fd: $0.pidfd, events: Int16(POLLIN), revents: 0) }
                + waiting.map { pollfd(fd: $0.connection, events: $0.pollEvents(), revents: 0) }
                + kept.fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                + (agent?.pollFDs ?? [])
            let counts = (running: running.count, waiting: waiting.count, kept: kept.fds.count)
            let ready = la_ppoll_millis(&fds, UInt(fds.count), pollTimeout(watchdog), &waitMask)
            let sig = stopRequested.load(ordering: .relaxed)
            if sig != 0 { return "signal \(sig)" }
            if ready < 0 && errno != EINTR {
                failure = "poll: \(String(cString: strerror(errno)))"
                return failure!
            }
            watchdog.ping()
            // The file is looked at when something in its directory changed, and otherwise
            // at most once a second (a file reached through a symlink elsewhere, a watch
            // that could not be set): not a stat for every request.
            if ready > 0, fds[2].revents != 0 { configWatch?.drain(); configCheckedAt = 0 }
            if MonotonicClock.millis() - configCheckedAt >= 1000 { rereadConfigIfChanged() }
            if ready > 0 {
                if fds[1].revents != 0 { followLogind() }
                if fds[3].revents != 0 { spareEnded() }
                if fds[5...7].contains(where: { $0.revents != 0 }) { followPolkit() }
                let first = 8
                let helpers = fds[first..<(first + counts.running)]
                let requests = fds[(first + counts.running)..<(first + counts.running + counts.waiting)]
                let keptStart = first + counts.running + counts.waiting
                let keptReady = fds[keptStart..<(keptStart + counts.kept)].filter { $0.revents != 0 }
                let agentReady = fds[(keptStart + counts.kept)...].filter { $0.revents != 0 }
                reap(helpers.filter { $0.revents != 0 }.map(\.fd))
                serve(requests.filter { $0.revents != 0 })
                for ready in keptReady { serveKept(ready.fd, revents: ready.revents) }
                for ready in agentReady { serveAgent(ready.fd, revents: ready.revents) }
                if fds[0].revents != 0 { acceptWaiting() }
                if fds[4].revents != 0 { acceptAgentConnections() }
            }
            startDueAgentHelpers()
            for due in turn.due(running: running) { start(due.waiting, due.request, heldAs: due.claim) }
            closeOverdue()
            kept.closeIdle(now: MonotonicClock.millis())
            _ = agent?.closeIdle()
            quiet.flush(log: log)
            if !running.isEmpty || !waiting.isEmpty { idleSince = MonotonicClock.millis() }
            if arguments.idleExitSeconds > 0, running.isEmpty, waiting.isEmpty, agent?.held.isEmpty ?? true,
               MonotonicClock.millis() - idleSince >= Int64(arguments.idleExitSeconds) * 1000 {
                return "idle for \(arguments.idleExitSeconds) s"
            }
        }
    }

    /// One stat; the file is read again only when it changed, and the bus is connected
    /// again only when the address, the state directory or the bus timeout did.
    private mutating func rereadConfigIfChanged() {
        configCheckedAt = MonotonicClock.millis()
        let stamp = FileStamp(path: arguments.configPath)
        guard stamp != configStamp else { return }
        configStamp = stamp
        let now = Options.load(configPath: arguments.configPath, log: log)
        defer { options = now }
        guard now.dbusAddress != options.dbusAddress || now.stateDir != options.stateDir
                || now.busTimeout != options.busTimeout else { return }
        log.log(.notice, "root's configuration changed: now the bus \(now.dbusAddress) and the state directory \(now.stateDir)")
        logind = nil   // the old connection closes before the new one opens
        logind = LogindWatch.start(options: now, log: log)
        polkit = nil
        polkit = PolkitWatch.start(options: now, log: log)
        if arguments.answerAbsent { readerAbsent = ReaderAbsent(address: now.dbusAddress) }
    }

    private func pollTimeout(_ watchdog: Watchdog) -> Int32 {
        var ms = watchdog.intervalMillis ?? -1
        func bound(_ limit: Int64) { ms = ms < 0 ? max(0, limit) : min(ms, max(0, limit)) }
        if arguments.idleExitSeconds > 0 {
            bound(Int64(arguments.idleExitSeconds) * 1000 - (MonotonicClock.millis() - idleSince))
        }
        if let first = waiting.map(\.deadline).min() { bound(first - MonotonicClock.millis()) }
        if let recheck = waiting.map(\.recheckAt).filter({ $0 > MonotonicClock.millis() }).min() { bound(recheck - MonotonicClock.millis()) }
        if let summary = quiet.nextDeadline { bound(summary - MonotonicClock.millis()) }
        if let idle = kept.nextIdleDeadline { bound(idle - MonotonicClock.millis()) }
        if let held = turn.nextDeadline { bound(held - MonotonicClock.millis()) }
        if let agentDue = agent?.nextDeadline { bound(agentDue - MonotonicClock.millis()) }
        return Int32(clamping: ms)
    }

    private mutating func acceptWaiting() {
        while let connection = listener.accept() {
            take(connection)
        }
    }

    /// The peer of a connection just accepted, pinned (the kernel's word, at the accept); nil
    /// when it cannot be, the connection then closed and the refusal noted. Any uid can make
    /// these (a connect and a close at once): one line per uid and interval, keyed by the
    /// uid the kernel recorded where it has one. `connections`/`aConnection` name the door.
    private mutating func pinnedPeer(of connection: Int32, connections: String, aConnection: String) -> Peer? {
        switch Peer.of(connection, pinByPID: arguments.pinByPID) {
        case .success(let peer): return peer
        case .failure(let problem):
            var cred = la_peer_cred()
            let uid = la_socket_peer_cred(connection, &cred) == 0 ? cred.uid : uid_t.max
            quiet.note(.warning, uid: uid, kind: "\(connections) refused: the peer not pinned",
                       first: "\(aConnection) refused: \(problem.text)", log: log)
            close(connection)
            return nil
        }
    }

    /// A new connection: its peer identified (the kernel's word, at the accept) and counted
    /// against its user's limit, then held until its request has come (`serve`).
    private mutating func take(_ connection: Int32) {
        let acceptedAt = BootClock.nanos()
        guard let peer = pinnedPeer(of: connection, connections: "connections", aConnection: "a connection") else {
            return
        }
        let already = requestsRunning(of: peer.share)
        guard already < arguments.limit(ofShare: peer.share) else {
            quiet.note(.warning, uid: peer.share, kind: "connections refused: over the limit of requests at once",
                       first: "a request of \(peer.described) refused: \(already) of its requests "
                           + "run already, the limit for \(peer.share == 0 ? "root's callers" : "a user")", log: log)
            close(peer.pidfd)
            close(connection)
            return
        }
        let held = Waiting(connection: connection, peer: peer, acceptedAt: acceptedAt,
                           deadline: MonotonicClock.millis() + Waiting.requestWithinMillis)
        // A client writes its request as it connects: often it is here already, and is
        // then served without waiting for the next poll (and read once, not twice).
        if let request = RequestPeek.of(connection) { serve(held, request) } else { waiting.append(held) }
    }

    /// Connections whose request came: an application's preflight answered here from
    /// root's state (ServicePreflight), a sign-in answered here from another machine
    /// (RemoteHostAnswer) or when fprintd is absent (ReaderAbsent), else handed to a helper.
    /// One that closed before a whole request, or sent something that is not one, is closed
    /// without a helper: nothing was asked. The start of a frame is looked at again a
    /// little later (not at every wake-up: poll would say it is readable at once, again).
    private mutating func serve(_ readable: some Sequence<pollfd>) {
        for ready in readable {
            guard let index = waiting.firstIndex(where: { $0.connection == ready.fd }) else { continue }
            var held = waiting.remove(at: index)
            let hungUp = ready.revents & (Int16(POLLHUP | POLLERR) | pollReadHangUp) != 0
            switch RequestPeek.inspect(held.connection) {
            case .request(let request): serve(held, request)
            case .notYet where hungUp:
                closeUnasked(held, kind: "connections closed before a request", why: "closed before a whole request")
            case .notYet:
                held.recheckAt = MonotonicClock.millis() + Waiting.recheckMillis
                waiting.append(held)
            case .empty: closeUnasked(held, kind: "connections closed before a request", why: "closed before a request")
            case .malformed(let why):
                closeUnasked(held, kind: "connections closed: not a request frame", why: "not a request frame (\(why))")
            }
        }
    }

    /// A connection that asked nothing: closed, no helper, a line (QuietLog).
    private mutating func closeUnasked(_ held: Waiting, kind: String, why: String) {
        quiet.note(.notice, uid: held.peer.share, kind: kind,
                   first: "a connection of \(held.peer.described) closed, no helper: \(why)", log: log)
        held.release()
    }

    /// Requests of the share `uid` (Shares.swift) that run (their helpers) or wait for
    /// their request, against its limit. Agent connections have their own (AgentDoor).
    private func requestsRunning(of uid: uid_t) -> Int {
        running.filter { $0.share == uid && !$0.agent }.count + waiting.filter { $0.peer.share == uid }.count
    }

    /// One request that has come: answered here, or handed to a helper. `mayStartHelper`
    /// false (a kept connection's user at its limit of helpers): closed instead.
    private mutating func serve(_ held: Waiting, _ request: RequestPeek, mayStartHelper: Bool = true) {
        idleSince = MonotonicClock.millis()
        let keep = request.request.keepsConnection && kept.mayKeep(uid: held.peer.uid)
        if let answer = preflight.answer(held.connection, request: request, peer: held.peer, options: options, keep: keep) {
            // Debug only: an application may ask many times a second.
            log.log(.debug, "uid \(held.peer.uid) pid \(held.peer.pid): preflight answered, no helper: \(answer)")
            if keep { kept.keep(held.connection, peer: held.peer) } else { held.release() }
        } else if let answered = RemoteHostAnswer.answer(held.connection, request: request, peer: held.peer) {
            switch answered {
            case .rootPeer(let cause):
                log.log(.info, "uid \(held.peer.uid) pid \(held.peer.pid) (\(held.peer.source)): "
                        + "result=notInteractive reason=remote, no helper: \(cause)"
                        + PurposeWords.field(held.peer, request.request))
            case .otherPeer(let cause):
                quiet.note(.notice, uid: held.peer.share, kind: "sign-ins naming a remote host refused (not a root peer)",
                           first: "uid \(held.peer.uid) pid \(held.peer.pid): result=notInteractive reason=remote, "
                               + "no helper: \(cause); only root's PAM hosts name one", log: log)
            }
            held.release()
        } else if let cause = readerAbsent?.answer(held.connection, request: request) {
            log.log(.info, "uid \(held.peer.uid) pid \(held.peer.pid) (\(held.peer.source)): "
                    + "result=biometryNotAvailable reason=reader-unreachable, no helper: \(cause)"
                    + PurposeWords.field(held.peer, request.request))
            held.release()
        } else if mayStartHelper {
            start(held, request)
        } else {
            let already = requestsRunning(of: held.peer.share)
            quiet.note(.warning, uid: held.peer.share, kind: "preflights on kept connections refused: over the limit",
                       first: "a preflight of uid \(held.peer.uid) (pid \(held.peer.pid)) on a kept connection "
                           + "refused: \(already) of its requests run already", log: log)
            held.release()
        }
    }

    /// A kept connection that became readable: a preflight is served as on a new
    /// connection (kept again when the service answers it, else handed to a helper, which
    /// answers and closes); anything else, or a peer that hung up, closes it. The library
    /// sends nothing but preflights on a kept connection.
    private mutating func serveKept(_ fd: Int32, revents: Int16) {
        guard let entry = kept.take(fd) else { return }
        switch KeptInput.of(fd, revents: revents) {
        case .nothing:
            kept.keep(entry.connection, peer: entry.peer)
        case .gone:
            KeptConnections.close(entry)
        case .request(let request):
            guard case .app(_, .preflight) = request.request else {
                log.log(.warning, "uid \(entry.peer.uid) pid \(entry.peer.pid): a request other than a preflight "
                        + "on a connection kept for preflights: closed")
                KeptConnections.close(entry)
                return
            }
            // As a new connection's: accepted now, so a helper it goes to judges it by now.
            // Counted against the user's limit as a new connection is, if it needs a helper.
            serve(Waiting(connection: entry.connection, peer: entry.peer, acceptedAt: BootClock.nanos(),
                          deadline: MonotonicClock.millis()), request,
                  mayStartHelper: requestsRunning(of: entry.peer.share) < arguments.limit(ofShare: entry.peer.share))
        }
    }

    /// A peer that has not written a whole request in its bound is closed, no helper: the
    /// module and the library write theirs as they connect, root's callers as a user's, so
    /// only a stalled or hostile peer is this slow, and it must not hold a slot or a root
    /// process for long.
    private mutating func closeOverdue() {
        let now = MonotonicClock.millis()
        while let index = waiting.firstIndex(where: { $0.deadline <= now }) {
            closeUnasked(waiting.remove(at: index), kind: "connections closed: no request in time",
                         why: "no whole request within \(Waiting.requestWithinMillis) ms")
        }
    }

    /// The request's helper: the spare started ahead when there is one, else a spare started
    /// now and handed the request at once (one way to start a helper: SpareHelper); then the
    /// next spare. A lock screen's request may be held back first until its
    /// user's other scans have ended (LockScreenTurn). Over its share's rate of helper
    /// starts (HelperStartRate), the request is refused instead: `systemCancel`, which the
    /// module maps to the password (PAM_AUTHINFO_UNAVAIL) and the library to an error the
    /// program may retry.
    private mutating func start(_ held: Waiting, _ request: RequestPeek, heldAs: ReaderClaim? = nil) {
        let claim = heldAs ?? LockScreenTurn.claim(held.peer, request)
        if heldAs == nil, turn.holdsBack(held, request, claim, running: running, log: log) { return }
        defer { held.release() }
        let peer = held.peer
        guard startRate.take(share: peer.share) else {
            request.refuse(held.connection, .systemCancel, reason: .none,
                           cause: "too many requests of this user in a short time (refused by localauthd)")
            quiet.note(.warning, uid: peer.share, kind: "requests refused: over the rate of helper starts",
                       first: "a request of \(peer.described) refused, no helper: over its rate of "
                           + "helper starts (\(arguments.userStartBurst) at once, "
                           + "\(arguments.userStartsPerSecond) a second; root's pool more)", log: log)
            return
        }
        // polkit's agent helper: what its authentication asks, when root saw it (PolkitWatch).
        let named = polkit?.purpose(for: peer, agentSocket: options.polkitAgentSocket)
        let ahead = spare.flatMap { $0.take(held, arguments: arguments, polkit: named) }
        spare = nil
        let outcome = ahead.map { Result<Worker, Worker.Problem>.success($0) }
            ?? SpareHelper.start(arguments: arguments).flatMap { fresh in
                fresh.take(held, arguments: arguments, polkit: named).map { .success($0) }
                    ?? .failure(Worker.Problem(text: "the helper started for it ended before it took the request"))
            }
        switch outcome {
        case .success(let worker):
            running.append(turn.started(worker, claim, running: running, log: log))
            log.log(.info, "uid \(peer.uid) pid \(peer.pid) (\(peer.source)): helper pid \(worker.pid)"
                    + (ahead != nil ? " (started ahead)" : ""))
            startSpare()
        case .failure(let problem):
            log.log(.error, "a request of uid \(peer.uid) (pid \(peer.pid)) could not start the helper: \(problem.text)")
        }
    }

    /// ssh-agent connections: each peer pinned as on the main socket, refused only past the
    /// bounds on what is held (AgentDoor), then held for its first message (serveAgent).
    private mutating func acceptAgentConnections() {
        guard let listener = agent?.listener else { return }
        while let connection = listener.accept() {
            idleSince = MonotonicClock.millis()
            let acceptedAt = BootClock.nanos()
            guard let peer = pinnedPeer(of: connection, connections: "agent connections",
                                        aConnection: "an ssh-agent connection") else { continue }
            let held = Waiting(connection: connection, peer: peer, acceptedAt: acceptedAt, deadline: 0)
            if let why = agent?.refusal(peer) {
                // The client reads the end of the connection: ssh goes on without the agent.
                quiet.note(.warning, uid: peer.uid, kind: "agent connections refused",
                           first: "an ssh-agent connection of uid \(peer.uid) (pid \(peer.pid)) refused: \(why)", log: log)
                held.release()
                continue
            }
            agent?.hold(held)
            // A client writes as it connects: often its message is here already.
            serveAgent(connection, revents: 0)
        }
    }

    /// A held agent connection that became readable: REQUEST_IDENTITIES answered here from
    /// root's store; any other message makes the connection one for a helper, started by
    /// startDueAgentHelpers within the user's rate of agent helper starts.
    private mutating func serveAgent(_ fd: Int32, revents: Int16) {
        let stateDir = options.stateDir
        let log = self.log
        _ = agent?.serve(fd, revents: revents, identities: {
            AgentIdentities.answer(uid: $0, stateDirectory: stateDir, log: log)
        })
    }

    /// Helpers for the agent connections whose user's limit and rate allow them now; the
    /// others wait, held (AgentDoor.takeDue): for one of their user's helpers to end (reap,
    /// earlier in the same turn of the loop), or for their moment, which bounds the poll.
    private mutating func startDueAgentHelpers() {
        guard let door = agent, door.held.contains(where: \.forHelper) else { return }
        guard let (start, began) = agent?.takeDue(running: running) else { return }
        for (held, wait) in began {
            switch wait {
            case .limit:
                quiet.note(.info, uid: held.peer.uid, kind: "agent connections waiting: over the limit of helpers",
                           first: "an ssh-agent connection of uid \(held.peer.uid) (pid \(held.peer.pid)) waits for its helper: "
                               + "\(door.perUserLimit) of its user's are running (the limit)", log: log)
            case .rate:
                quiet.note(.info, uid: held.peer.uid, kind: "agent connections waiting: over the rate of helper starts",
                           first: "an ssh-agent connection of uid \(held.peer.uid) (pid \(held.peer.pid)) waits for its helper: "
                               + "over its rate of agent helper starts (\(door.startBurst) at once, "
                               + "\(door.startsPerSecond) a second)", log: log)
            }
        }
        for held in start {
            startAgentHelper(held)
            held.release()
        }
    }

    private mutating func startAgentHelper(_ held: Waiting) {
        let ahead = spare.flatMap { $0.take(held, arguments: arguments, agent: true) }
        spare = nil
        let outcome = ahead.map { Result<Worker, Worker.Problem>.success($0) }
            ?? SpareHelper.start(arguments: arguments).flatMap { fresh in
                fresh.take(held, arguments: arguments, agent: true).map { .success($0) }
                    ?? .failure(Worker.Problem(text: "the helper started for it ended before it took the connection"))
            }
        switch outcome {
        case .success(let worker):
            // Its scans lose the reader to its user's lock screen as any request's do.
            running.append(turn.started(worker, LockScreenTurn.claim(held.peer, nil), running: running, log: log))
            log.log(.debug, "uid \(held.peer.uid) pid \(held.peer.pid): ssh-agent connection, helper pid \(worker.pid)"
                    + (ahead != nil ? " (started ahead)" : ""))
            startSpare()
        case .failure(let problem):
            log.log(.error, "an ssh-agent connection of uid \(held.peer.uid) (pid \(held.peer.pid)) could not start the helper: \(problem.text)")
        }
    }

    /// The next request's helper, started now (SpareHelper). A failure is logged; that
    /// request then starts its own the same way.
    private mutating func startSpare() {
        guard arguments.spare, spare == nil else { return }
        switch SpareHelper.start(arguments: arguments) {
        case .success(let started): spare = started
        case .failure(let problem): log.log(.warning, "no helper started ahead: \(problem.text)")
        }
    }

    /// The spare ended before any request (killed, or it failed to start): reaped, and not
    /// replaced until the next request, so a helper that cannot start is not started in a loop.
    private mutating func spareEnded() {
        guard let ended = spare else { return }
        spare = nil
        ended.reap()
        log.log(.warning, "the helper started ahead (pid \(ended.pid)) ended before a request")
    }

    /// polkit's news (PolkitWatch); a connection that is gone ends the following, one line.
    private mutating func followPolkit() {
        do {
            try polkit?.follow()
        } catch {
            log.log(.warning, "polkit's requests no longer followed (touches for polkit are not named): \(error.summary)")
            polkit = nil
        }
    }

    /// logind's news (sessions are recorded inside); if the system prepares to sleep, every
    /// running helper ends its scan (SleepSignal).
    private mutating func followLogind() {
        guard let watch = logind else { return }
        do {
            guard try watch.takeSleepAnnouncement() else { return }
        } catch {
            log.log(.warning, "logind no longer followed (sleep, new sessions): \(error)")
            logind = nil
            return
        }
        for worker in running { kill(worker.pid, SIGUSR1) }
        log.log(.info, "the system prepares to sleep: \(running.count) running request(s) told to end their scan")
    }

    private mutating func reap(_ exited: [Int32]) {
        for fd in exited {
            guard let index = running.firstIndex(where: { $0.pidfd == fd }) else { continue }
            let worker = running.remove(at: index)
            if let abnormal = worker.collect() {
                log.log(.warning, "the helper of uid \(worker.uid) (pid \(worker.pid)) \(abnormal)")
            }
        }
    }
}

/// systemd's watchdog (WatchdogSec=): WATCHDOG=1 at least every half interval, from the
/// loop itself, so a loop that hangs is restarted.
struct Watchdog {
    let intervalMillis: Int64?

    init() {
        var usec: UInt64 = 0
        intervalMillis = sd_watchdog_enabled(0, &usec) > 0 ? Int64(usec / 2000) : nil
    }

    func ping() {
        if intervalMillis != nil { _ = sd_notify(0, "WATCHDOG=1") }
    }
}

/// An accepted connection waiting for its request: what the helper will need (the peer and
/// its pidfd, when the connection was accepted), and how long it may take.
struct Waiting {
    let connection: Int32
    let peer: Peer
    /// CLOCK_BOOTTIME ns at the accept: a right's grant must be older (the helper's
    /// --service-accepted-at).
    let acceptedAt: UInt64
    /// Monotonic ms after which it is closed if its request has not come (closeOverdue).
    let deadline: Int64
    /// Monotonic ms before which it is not polled for input again (0: polled): the start of
    /// a frame came, and poll would report it readable at every wake-up.
    var recheckAt: Int64 = 0

    /// The module and the library write their request as they connect: this is slack for a
    /// loaded machine (a program descheduled between its connect and its write), not a
    /// wait anyone should need. A connection held this long holds only its own share.
    static let requestWithinMillis: Int64 = 2000
    static let recheckMillis: Int64 = 20

    func pollEvents(now: Int64 = MonotonicClock.millis()) -> Int16 {
        // POLLRDHUP: a peer that shut its writing side after a part of a frame is seen at
        // once, not at the deadline (the part stays readable, so POLLIN alone cannot tell).
        recheckAt > now ? pollReadHangUp : Int16(POLLIN) | pollReadHangUp
    }

    /// The service's copies: the helper has its own.
    func release() {
        close(peer.pidfd)
        close(connection)
    }
}

/// POLLRDHUP (Linux's; glibc's header shows it only under _GNU_SOURCE, which Swift's Glibc
/// module does not set).
let pollReadHangUp: Int16 = 0x2000
