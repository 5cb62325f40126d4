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
    let arguments: ServiceArguments
    let log: LogSink
    private var running: [Worker] = []
    private var idleSince = MonotonicClock.millis()
    /// logind's sleep announcements and new sessions (nil where there is no bus to follow).
    private var logind: LogindWatch?
    /// Answers sign-ins itself while fprintd is absent (nil: --no-absent-answer).
    private let readerAbsent: ReaderAbsent?

    init(listener: Listener, arguments: ServiceArguments, log: LogSink) {
        self.listener = listener
        self.arguments = arguments
        self.log = log
        // Root's configuration as it is at the start: the bus to follow and to ask about
        // fprintd, and where the state is. Each helper reads it again for its request.
        let options = Options.load(configPath: arguments.configPath, log: log)
        logind = LogindWatch.start(options: options, log: log)
        readerAbsent = arguments.answerAbsent ? ReaderAbsent(address: options.dbusAddress) : nil
        for sig in [SIGTERM, SIGINT] {
            signal(sig) { number in stopRequested.store(number, ordering: .relaxed) }
        }
    }

    /// Runs until asked to stop or idle for `idleExitSeconds`; returns why it ended.
    mutating func run() -> String {
        let watchdog = Watchdog()
        while true {
            // The listener, logind's bus (or -1: ignored by poll), then the helpers.
            var fds = [pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: logind?.fd ?? -1, events: Int16(POLLIN), revents: 0)]
                + running.map { pollfd(fd: $0.pidfd, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), pollTimeout(watchdog))
            let sig = stopRequested.load(ordering: .relaxed)
            if sig != 0 { return "signal \(sig)" }
            if ready < 0 && errno != EINTR { return "poll: \(String(cString: strerror(errno)))" }
            watchdog.ping()
            if ready > 0 {
                if fds[1].revents != 0 { followLogind() }
                reap(fds.dropFirst(2).filter { $0.revents != 0 }.map(\.fd))
                if fds[0].revents != 0 { acceptWaiting() }
            }
            if !running.isEmpty { idleSince = MonotonicClock.millis() }
            if arguments.idleExitSeconds > 0, running.isEmpty,
               MonotonicClock.millis() - idleSince >= Int64(arguments.idleExitSeconds) * 1000 {
                return "idle for \(arguments.idleExitSeconds) s"
            }
        }
    }

    private func pollTimeout(_ watchdog: Watchdog) -> Int32 {
        var ms = watchdog.intervalMillis ?? -1
        if arguments.idleExitSeconds > 0 {
            let idle = Int64(arguments.idleExitSeconds) * 1000 - (MonotonicClock.millis() - idleSince)
            ms = ms < 0 ? max(0, idle) : min(ms, max(0, idle))
        }
        return Int32(clamping: ms)
    }

    private mutating func acceptWaiting() {
        while let connection = listener.accept() {
            take(connection)
            close(connection)
        }
    }

    private mutating func take(_ connection: Int32) {
        let peer: Peer
        switch Peer.of(connection, pinByPID: arguments.pinByPID) {
        case .success(let p): peer = p
        case .failure(let problem):
            log.log(.warning, "a connection refused: \(problem.text)")
            return
        }
        defer { close(peer.pidfd) }
        let limit = peer.uid == 0 ? arguments.rootLimit : arguments.perUserLimit
        let already = running.filter { $0.uid == peer.uid }.count
        guard already < limit else {
            log.log(.warning, "a request of uid \(peer.uid) (pid \(peer.pid)) refused: \(already) of its requests "
                    + "run already, the limit for \(peer.uid == 0 ? "root's callers" : "a user")")
            return
        }
        if let cause = readerAbsent?.answer(connection) {
            log.log(.info, "uid \(peer.uid) pid \(peer.pid) (\(peer.source)): result=biometryNotAvailable "
                    + "reason=reader-unreachable, no helper: \(cause)")
            return
        }
        switch Worker.start(for: peer, connection: connection, arguments: arguments) {
        case .success(let worker):
            running.append(worker)
            log.log(.info, "uid \(peer.uid) pid \(peer.pid) (\(peer.source)): helper pid \(worker.pid)")
        case .failure(let problem):
            log.log(.error, "a request of uid \(peer.uid) (pid \(peer.pid)) could not start the helper: \(problem.text)")
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
