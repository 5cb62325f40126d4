#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import Synchronization

/// Remote logins logind announced (LogindWatch), recorded on a thread of their own: the
/// record takes the user's state file lock (flock, which a helper may hold through a
/// whole scan) and fsyncs, and neither may hold the service's loop, whose every caller
/// waits behind it. The queue is bounded; a login that does not fit is not recorded, with
/// a line (at most one per interval), and is still judged per request.
///
/// One for the process: LogindWatch is made again when root's configuration changes, the
/// thread is not. Jobs are taken in order, one at a time.
final class RemoteLoginRecorder: @unchecked Sendable {
    /// Handed to the thread whole and not touched by the loop after: its sink is the one
    /// thing not Sendable, and syslog(3) is safe from any thread.
    struct Job: @unchecked Sendable {
        let user: UserName
        let from: String
        let stateDir: String
        let session: String
        /// When logind announced it: the record's time, however long the queue took.
        let at: Timestamp
        /// The service's sink, SyslogSink: syslog(3) may be called from any thread.
        let log: LogSink
    }

    static let shared = RemoteLoginRecorder()
    static let capacity = 64

    private let queue = Mutex<[Job]>([])
    private let ready = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    private let started = Atomic<Bool>(false)
    private let droppedAt = Atomic<Int64>(Int64.min)

    private init() {
        sem_init(ready, 0, 0)
    }

    /// Queues the record. Called from the loop only. When the queue is full or no thread
    /// could be made, a line says it was not recorded.
    func record(_ user: UserName, from: String, stateDir: String, session: String, log: LogSink) {
        let job = Job(user: user, from: from, stateDir: stateDir, session: session, at: SystemClock().now(), log: log)
        let queued = startThread() && queue.withLock { jobs in
            guard jobs.count < Self.capacity else { return false }
            jobs.append(job)
            return true
        }
        guard queued else { return dropped(job) }
        sem_post(ready)
    }

    private func dropped(_ job: Job) {
        let now = MonotonicClock.millis()
        guard now - droppedAt.load(ordering: .relaxed) >= QuietLog.intervalMillis else { return }
        droppedAt.store(now, ordering: .relaxed)
        job.log.log(.warning, "the remote login of \(job.user) (logind session \(LogWords.word(job.session))) "
                    + "not recorded: \(Self.capacity) records wait already (further ones not said for 10 s)")
    }

    private func startThread() -> Bool {
        if started.load(ordering: .acquiring) { return true }
        var attributes = pthread_attr_t()
        guard pthread_attr_init(&attributes) == 0 else { return false }
        defer { pthread_attr_destroy(&attributes) }
        _ = pthread_attr_setstacksize(&attributes, 512 << 10)
        _ = pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let me = Unmanaged.passRetained(self)
        guard pthread_create(&thread, &attributes, recorderEntry, me.toOpaque()) == 0 else {
            me.release()
            return false
        }
        started.store(true, ordering: .releasing)
        return true
    }

    fileprivate func run() -> Never {
        while true {
            while sem_wait(ready) != 0 {}
            guard let job = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            Self.write(job)
        }
    }

    private static func write(_ job: Job) {
        let id = LogWords.word(job.session)
        switch RemoteLoginRecord.record(job.user, from: job.from, stateDir: job.stateDir, now: job.at) {
        case .recorded:
            job.log.log(.info, "remote login of \(job.user) recorded (logind session \(id), from \(LogWords.word(job.from)))")
        case .skipped(let why):
            job.log.log(.info, "remote login of \(job.user) not recorded (logind session \(id)): \(why)")
        case .failed(let error):
            job.log.log(.error, "the remote login of \(job.user) (logind session \(id)) could not be recorded: \(error)")
        }
    }
}

private let recorderEntry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { arg in
    guard let arg else { return nil }
    // Signals are the loop's (SIGTERM, SIGINT): never delivered here.
    var all = sigset_t()
    sigfillset(&all)
    pthread_sigmask(SIG_BLOCK, &all, nil)
    Unmanaged<RemoteLoginRecorder>.fromOpaque(arg).takeRetainedValue().run()
}
