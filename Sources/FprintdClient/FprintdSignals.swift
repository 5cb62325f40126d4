import SystemBus
import LocalAuth

/// The signals the sensor listens to, and the wait loop that dispatches them.
extension FprintdSensor {
    /// `path` came from GetDevices as a D-Bus object path, which sd-bus validated while
    /// reading it ([A-Za-z0-9_/] only), so it cannot break out of the quotes.
    static func deviceRule(_ path: String, _ member: String) -> String {
        "type='signal',sender='\(Fprintd.service)',path='\(path)',"
            + "interface='\(Fprintd.deviceInterface)',member='\(member)'"
    }

    enum PumpResult {
        case ready
        case deadline
        case woken(Int32)
        case lost(EvaluationError)
    }
}

extension FprintdSensor {
    /// Subscribes to a reader's verify signals, once per connection, before VerifyStart is
    /// ever called on it, so that no status can slip between the call and the match.
    func subscribe(to path: String) throws(EvaluationError) {
        guard !subscribed.contains(path) else { return }
        try run("AddMatch") { bus throws(BusError) in
            try bus.addMatch(Self.deviceRule(path, "VerifyStatus")) { [weak self] in self?.verifyStatus($0) }
            try bus.addMatch(Self.deviceRule(path, "VerifyFingerSelected")) { [weak self] in
                self?.fingerSelected($0)
            }
        }
        subscribed.insert(path)
    }

    /// Any local uid can address a VerifyStatus to this connection: only fprintd's own, from
    /// its unique name of the moment, is read (NameOwner), and of those only the ones of our
    /// verification.
    func verifyStatus(_ message: Message) {
        guard fprintd?.sent(message) == true else { return }
        guard let claimed, session?.accepts(message, claimed: claimed) == true else { return }
        do {
            let result = try message.readString()
            let done = try message.readBool()
            log.log(.debug, "VerifyStatus \(result) done=\(done)")
            if let event = VerifyStatus.event(for: result, done: done, log: log) {
                session?.receive(event)
            }
        } catch {
            log.log(.warning, "malformed VerifyStatus signal: \(error.summary)")
        }
    }

    func fingerSelected(_ message: Message) {
        guard fprintd?.sent(message) == true else { return }
        guard let claimed, session?.accepts(message, claimed: claimed) == true else { return }
        do {
            session?.finger = try message.readString()
        } catch {
            log.log(.warning, "malformed VerifyFingerSelected signal: \(error.summary)")
        }
    }

    /// fprintd's name changed hands, as the bus daemon said (NameOwner). Only the fprintd
    /// holding our claim matters: its leaving (exit, crash, restart) takes the claim with it.
    func fprintdChanged(old: String, new: String) {
        guard let claimed, !old.isEmpty, old == claimed.owner, new != old else { return }
        log.log(.warning, "fprintd left the bus while the reader was claimed")
        loseSession(EvaluationError(.biometryNotAvailable, cause: "fprintd left the bus"))
    }

    /// Follows fprintd's owner on `bus`, a new connection: before any call to fprintd, so
    /// that the daemon's answer comes first. `installed` nil waits for the match.
    static func followFprintd(on bus: Bus, router: SignalRouter,
                              installed: ((BusError?) -> Void)? = nil) throws(BusError) -> NameOwner {
        try NameOwner(Fprintd.service, on: bus, report: { [router] in router.report($0) }, installed: installed,
                      changed: { [router] in router.fprintdChanged(old: $0, new: $1) })
    }

    /// Ends the session without talking to fprintd: the claim is already gone with it.
    func loseSession(_ error: EvaluationError) {
        lost = error
        claimed = nil
    }

    /// fprintd sends VerifyFingerSelected right after VerifyStart's reply, so it is
    /// normally already on its way; waiting for it (bounded by the bus timeout) lets the
    /// prompt name the finger. A status arriving first also ends the wait.
    func awaitFingerSelection() {
        let deadline = burstBound
        let result = pump(until: deadline, wakeOn: []) {
            session?.finger != nil || session?.events.isEmpty == false
        }
        if case .lost(let error) = result {
            session?.receive(.failed(error))
        }
    }

    /// Dispatches bus input until `ready()` holds, `deadline` (monotonic ms) passes, or one
    /// of `wakeOn` is readable. A lost session or connection wins over everything else.
    func pump(until deadline: Int64, wakeOn: [Int32], ready: () -> Bool) -> PumpResult {
        while true {
            guard let bus, bus.isOpen else { return .lost(connectionLost()) }
            do {
                try bus.dispatch()
            } catch {
                return .lost(connectionLost())
            }
            if let lost { return .lost(lost) }
            if ready() { return .ready }
            if MonotonicClock.millis() >= deadline { return .deadline }
            do {
                if let fd = try bus.wait(until: deadline, extra: wakeOn) { return .woken(fd) }
            } catch {
                return .lost(connectionLost())
            }
        }
    }

    private func connectionLost() -> EvaluationError {
        if let lost { return lost }
        log.log(.warning, "the bus connection was lost")
        let error = EvaluationError(.biometryNotAvailable, cause: "the bus connection was lost")
        dropConnection()
        loseSession(error)
        return error
    }
}
