#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// How fast one share (`Peer.share`) may start helpers: a token bucket per uid. Each
/// request that needs a helper takes a token; the bucket holds `burst` and fills again by
/// `perSecond`. A loop of one user's connections (each answered at once, so the limit of
/// requests at once never bites) can then start a few helpers, not hundreds a second, and
/// what it makes root do stays small whatever the loop's speed. Root's pool has its own,
/// larger bucket. A full bucket is forgotten (it means nothing), so the table holds only
/// the uids that started helpers lately.
struct HelperStartRate {
    struct Bucket {
        var tokens: Double
        var at: Int64
    }

    /// A user's share (ServiceArguments: 16 and 4 unless `--start-rate` says otherwise).
    let userBurst: Double
    let userPerSecond: Double
    /// Root's pool: as many as it may run at once, and four times a user's refill.
    static let rootBurst = 64.0
    static let rootPerSecond = 16.0

    private var buckets: [uid_t: Bucket] = [:]

    init(userBurst: Int, userPerSecond: Int) {
        self.userBurst = Double(userBurst)
        self.userPerSecond = Double(userPerSecond)
    }

    private func numbers(_ share: uid_t) -> (burst: Double, rate: Double) {
        share == 0 ? (Self.rootBurst, Self.rootPerSecond) : (userBurst, userPerSecond)
    }

    /// Takes a token of `share`'s bucket; false when it is empty (the request is refused).
    mutating func take(share: uid_t, now: Int64 = MonotonicClock.millis()) -> Bool {
        let (burst, rate) = numbers(share)
        var bucket = buckets[share] ?? Bucket(tokens: burst, at: now)
        bucket.tokens = min(burst, bucket.tokens + Double(max(0, now - bucket.at)) * rate / 1000)
        bucket.at = now
        guard bucket.tokens >= 1 else {
            buckets[share] = bucket
            return false
        }
        bucket.tokens -= 1
        buckets[share] = bucket
        if buckets.count > 256 { forgetFull(now: now) }
        return true
    }

    /// When `share`'s bucket holds a whole token again (now, if it does): the moment a
    /// start refused now would be taken. Never later than a second away at rates of 1 and
    /// more; with a rate of 0, never (Int64.max).
    func nextToken(share: uid_t, now: Int64 = MonotonicClock.millis()) -> Int64 {
        let (burst, rate) = numbers(share)
        guard let bucket = buckets[share] else { return now }
        let tokens = min(burst, bucket.tokens + Double(max(0, now - bucket.at)) * rate / 1000)
        guard tokens < 1 else { return now }
        guard rate > 0 else { return Int64.max }
        return now + Int64(((1 - tokens) * 1000 / rate).rounded(.up))
    }

    private mutating func forgetFull(now: Int64) {
        buckets = buckets.filter { share, bucket in
            let (burst, rate) = numbers(share)
            return bucket.tokens + Double(now - bucket.at) * rate / 1000 < burst
        }
    }
}
