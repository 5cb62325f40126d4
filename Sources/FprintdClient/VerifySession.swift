import SystemBus
import LocalAuth

/// What is known about the fprintd session we hold: the claimed reader, the fprintd
/// instance that holds the claim, and the verification in progress.
struct Claimed {
    let user: String
    let path: String
    /// The unique bus name of the fprintd that answered Claim. Signals from any other
    /// connection are ignored; this one leaving the bus ends the session.
    let owner: String
}

/// A Claim sent without waiting (FprintdSensor.requestClaim); the reply lands here from
/// the bus handlers.
final class PendingClaim {
    let user: String
    let path: String
    var reply: Result<Message, BusError>?

    init(user: String, path: String) {
        self.user = user
        self.path = path
    }
}

/// One verification: the events received so far and which signals count.
struct VerifySession {
    /// The serial of VerifyStart's reply. fprintd's serials only grow, so a status with a
    /// lower serial was sent before VerifyStart returned and belongs to an earlier
    /// verification (docs/ARCHITECTURE.md §8: such statuses are dropped). Until the reply arrives
    /// nothing counts.
    var acceptAfter = UInt64.max
    /// From VerifyFingerSelected, which fprintd sends right after VerifyStart's reply.
    var finger: String?
    var events: [SensorEvent] = []
    /// A final status has been queued; anything later is noise.
    var finished = false

    /// Whether a signal from fprintd belongs to this verification.
    func accepts(_ message: Message, claimed: Claimed) -> Bool {
        message.sender == claimed.owner && message.path == claimed.path
            && acceptAfter != .max && message.cookie > acceptAfter
    }

    mutating func receive(_ event: SensorEvent) {
        guard !finished else { return }
        events.append(event)
        if case .retry = event { return }
        finished = true
    }

    mutating func nextEvent() -> SensorEvent? {
        events.isEmpty ? nil : events.removeFirst()
    }

    /// A match or failed match received and not yet taken.
    var verdict: SensorEvent? {
        events.first { $0 == .match || $0 == .noMatch }
    }
}
