/// Which preflight answer a `canEvaluatePolicy` gets, as a pure rule (no clock, no I/O):
/// the root side's answer (`op=preflight`) is kept for the whole process, so that the many
/// calls a program makes (often from a computed property, many per screen) do not each
/// connect to localauthd and have it start a root helper. `PreflightCache` runs it.
///
/// * An answer asked for less than `freshFor` ago is given as it is.
/// * Up to `maxAge` it is still given at once, and a new one is asked for in the background
///   (stale while revalidating): a program that keeps asking sees a change made elsewhere
///   (a lockout under sudo, a finger enrolled) about `freshFor` later.
/// * Older than `maxAge`, it is never given: the call waits for a new answer, as the first
///   call does. So no answer is older than `maxAge` (counted from when the root side was
///   asked for it, which is before it looked).
/// * An evaluation of this process can change what the root side would say (a failed
///   match counts, a lockout, a password that lifts it): when one ends, every answer is
///   dropped and new ones are asked for at once; a call before they arrive waits for them.
///   So a lockout this process's own evaluation reached is seen by its next preflight.
///
/// Times are seconds on one clock that also counts suspend (a laptop that slept an hour
/// must not find an hour-old answer fresh).
struct PreflightAnswers {
    static let freshFor: Double = 1
    static let maxAge: Double = 5

    /// One question: the root side asked (RootSide.place: the service, and root's helper),
    /// for which real uid, under which policy word (`biometrics`, `owner`).
    struct Key: Hashable, Sendable {
        var program: String
        var uid: UInt32
        var policy: String
    }

    /// Identifies one request to the root side, so that an answer asked for before an
    /// evaluation ended is recognised when it comes back late and thrown away.
    typealias Ticket = UInt64

    enum Decision: Equatable {
        /// Give this answer.
        case answer(AppResult)
        /// Give this answer, and ask the root side again in the background (`ticket`).
        case answerAndRefresh(AppResult, Ticket)
        /// Nothing usable and nobody asking: the caller asks the root side (`ticket`),
        /// reports with `received`, then asks again.
        case fetch(Ticket)
        /// Nothing usable, and the answer is on its way: wait for a `received`, then ask again.
        case wait
    }

    private struct Entry {
        var result: AppResult
        var asked: Double
    }

    private struct Request {
        var ticket: Ticket
        var asked: Double
    }

    private var entries: [Key: Entry] = [:]
    private var inFlight: [Key: Request] = [:]
    private var lastTicket: Ticket = 0

    /// What a call made at `calledAt` gets, `now` being the time of this decision (later
    /// than `calledAt` when the call waited): the age that decides is the call's own, so a
    /// call that waited accepts any answer asked for after it began.
    mutating func ask(_ key: Key, calledAt: Double, now: Double) -> Decision {
        if let entry = entries[key] {
            let age = calledAt - entry.asked
            if age < Self.freshFor { return .answer(entry.result) }
            if age < Self.maxAge {
                if inFlight[key] != nil { return .answer(entry.result) }
                return .answerAndRefresh(entry.result, request(key, now: now))
            }
        }
        if inFlight[key] != nil { return .wait }
        return .fetch(request(key, now: now))
    }

    /// The root side's answer to `ticket`. False when it was no longer wanted (an
    /// evaluation ended after it was asked for): it is dropped, never given.
    @discardableResult
    mutating func received(_ key: Key, ticket: Ticket, result: AppResult) -> Bool {
        guard let pending = inFlight[key], pending.ticket == ticket else { return false }
        inFlight[key] = nil
        entries[key] = Entry(result: result, asked: pending.asked)
        return true
    }

    /// Whether `ticket` is still the request whose answer `key` waits for.
    func isAsking(_ key: Key, ticket: Ticket) -> Bool {
        inFlight[key]?.ticket == ticket
    }

    /// An evaluation of this process ended at `now`: every answer goes, and each question
    /// asked so far is asked again (the returned requests, to start at once).
    mutating func evaluationEnded(now: Double) -> [(Key, Ticket)] {
        let keys = Set(entries.keys).union(inFlight.keys)
        entries.removeAll()
        return keys.map { ($0, request($0, now: now)) }
    }

    private mutating func request(_ key: Key, now: Double) -> Ticket {
        lastTicket += 1
        inFlight[key] = Request(ticket: lastTicket, asked: now)
        return lastTicket
    }
}
