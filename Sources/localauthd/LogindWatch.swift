#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import SystemBus

/// What localauthd follows of logind on the system bus of root's configuration, between
/// requests: what no process that lives for one request can see.
///
/// * `PrepareForSleep(true)`: the machine is about to suspend or hibernate. A scan that stays
///   open across it keeps fprintd's reader claimed, and whoever started it is not at the
///   machine any more; so every running helper is told (SIGUSR1, SleepSignal in the helper) to
///   end its scan now, give the try back and answer `systemCancel`.
/// * `SessionNew`: a session that reaches the machine from elsewhere (logind's `Remote`, a
///   remote host, or a user session on no seat: the predicate the helper's presence rule uses)
///   is a remote login now, recorded in the user's state file (RemoteLoginRecord). The record
///   outlives the session, so a job the login left behind, a polkit agent it registered or a
///   terminal it drives still gets the password after it ended, whatever PAM stack the login
///   came through (sshd's account line, xrdp, a remote desktop). At start, the sessions open
///   then are recorded the same way (a restart in between misses none that is still open).
///
/// Both are taken only from logind's unique name of the moment (NameOwner): any local uid can
/// address a signal to this connection, and one that could end every scan on the machine or
/// have root record and log made-up sessions must come from logind.
final class LogindWatch {
    private let bus: Bus
    private let stateDir: String
    private let log: LogSink
    private var sleepAnnounced = false
    /// logind's unique name: its signals are taken from it alone (anyone can address a
    /// signal to us; NameOwner).
    private var logind: NameOwner?
    let fd: Int32

    static let manager = (service: "org.freedesktop.login1", path: "/org/freedesktop/login1",
                          interface: "org.freedesktop.login1.Manager")
    static func rule(_ member: String) -> String {
        "type='signal',sender='\(manager.service)',path='\(manager.path)',interface='\(manager.interface)',member='\(member)'"
    }

    private init(bus: Bus, fd: Int32, stateDir: String, log: LogSink) {
        self.bus = bus
        self.fd = fd
        self.stateDir = stateDir
        self.log = log
    }

    /// Connected to the bus of root's configuration, the matches in place and the open
    /// sessions asked for; nil (said once in the log) where there is no bus to follow.
    static func start(options: Options, log: LogSink) -> LogindWatch? {
        do {
            let bus = try Bus(address: options.dbusAddress, timeoutSeconds: max(options.busTimeout, 1))
            guard let fd = bus.fileDescriptor else { throw BusError.disconnected(errno: ENOTCONN) }
            let watch = LogindWatch(bus: bus, fd: fd, stateDir: options.stateDir, log: log)
            // First: its answer comes ahead of any signal the matches below select.
            let logind = try NameOwner(manager.service, on: bus, report: { [weak log] in log?.log(.warning, $0) })
            watch.logind = logind
            try bus.addMatch(rule("PrepareForSleep"), logind.guarded { [weak watch] message in
                if (try? message.readBool()) == true { watch?.sleepAnnounced = true }
            })
            try bus.addMatch(rule("SessionNew"), logind.guarded { [weak watch] message in
                guard let id = try? message.readString(), let path = try? message.readObjectPath() else { return }
                watch?.follow(session: id, path: path)
            })
            try watch.askOpenSessions()
            return watch
        } catch {
            log.log(.notice, "not following logind (\(options.dbusAddress)): \(error)")
            return nil
        }
    }

    /// After `fd` polled readable: runs what came (sessions are recorded from here) and says
    /// whether the system announced it is going to sleep since the last call. Throws once the
    /// connection is gone.
    func takeSleepAnnouncement() throws(BusError) -> Bool {
        try bus.dispatch()
        defer { sleepAnnounced = false }
        return sleepAnnounced
    }

    /// `ListSessions`, each answered like a new one. A logind that is not there (a machine
    /// without systemd, the bed's bus without the fake) is said once; sleep is still followed.
    private func askOpenSessions() throws(BusError) {
        let call = try bus.methodCall(destination: Self.manager.service, path: Self.manager.path,
                                      interface: Self.manager.interface, member: "ListSessions")
        try bus.callAsync(call) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let reply):
                do throws(BusError) {
                    for session in try reply.readSessionList() { follow(session: session.id, path: session.path) }
                } catch {
                    log.log(.warning, "logind's sessions could not be read: \(error)")
                }
            case .failure(let error):
                log.log(.notice, "logind's open sessions not read: \(error.summary)")
            }
        }
    }

    /// Asks for the session's properties; a remote one is recorded when they come. logind
    /// keeps a session while anything still runs in its scope, so one gone before the answer
    /// left nothing there; a job it handed to the user's manager first (`systemd-run --user`)
    /// is not recorded by this path: a warning in the log, and the job is still judged per
    /// request (its place, the remote sessions open then; sshd's account line, where the
    /// stack has it).
    private func follow(session id: String, path: String) {
        do throws(BusError) {
            let call = try bus.methodCall(destination: Self.manager.service, path: path,
                                          interface: "org.freedesktop.DBus.Properties", member: "GetAll")
            try call.append("org.freedesktop.login1.Session")
            try bus.callAsync(call) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let reply):
                    do throws(BusError) { recordIfRemote(id, try reply.readProperties()) } catch {
                        log.log(.warning, "logind session \(LogWords.word(id)): its properties could not be read: \(error)")
                    }
                case .failure(let error):
                    log.log(.warning, "logind session \(LogWords.word(id)) not followed: \(error.summary)")
                }
            }
        } catch {
            log.log(.warning, "logind session \(LogWords.word(id)) not followed: \(error)")
        }
    }

    private func recordIfRemote(_ id: String, _ properties: [String: Message.PropertyValue]) {
        func text(_ name: String) -> String? {
            if case .string(let s)? = properties[name] { return s }
            return nil
        }
        var remote: Bool?
        if case .bool(let b)? = properties["Remote"] { remote = b }
        let session = LogindSession(id: id, uid: nil, remote: remote, remoteHost: text("RemoteHost") ?? "",
                                    seat: text("Seat") ?? "", sessionClass: text("Class") ?? "", active: nil)
        guard session.reachesFromElsewhere else { return }
        guard let name = text("Name"), let user = try? UserName(name) else {
            log.log(.warning, "logind session \(LogWords.word(id)) reaches from elsewhere but names no usable user: not recorded")
            return
        }
        let from = session.remoteHost.isEmpty ? "logind-session-\(id)" : session.remoteHost
        switch RemoteLoginRecord.record(user, from: from, stateDir: stateDir) {
        case .recorded:
            log.log(.info, "remote login of \(user) recorded (logind session \(LogWords.word(id)), from \(LogWords.word(from)))")
        case .skipped(let why):
            log.log(.info, "remote login of \(user) not recorded (logind session \(LogWords.word(id))): \(why)")
        case .failed(let error):
            log.log(.error, "the remote login of \(user) (logind session \(LogWords.word(id))) could not be recorded: \(error)")
        }
    }
}
