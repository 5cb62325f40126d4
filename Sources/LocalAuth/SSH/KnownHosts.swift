/// The names a user's known_hosts file (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT") gives a host
/// key, for a prompt that names the destination: the key itself comes from a verified
/// session-bind, the names from the file its owner keeps. Plain entries give the names they
/// list (and the candidates their wildcards match); a hashed entry (|1|salt|hash) gives a
/// candidate only, the one whose HMAC-SHA1 under the salt is the hash, so only names the
/// caller already has (from the requester's command line) can come out of it.
public enum KnownHosts {
    /// The largest text read (a known_hosts of thousands of hosts is a few hundred KiB).
    public static let maxBytes = 1 << 20
    /// At most this many candidates are tried against each hashed entry.
    public static let maxCandidates = 16
    /// At most this many names are returned.
    public static let maxNames = 32
    /// Longer candidates are ignored (DNS names are at most 253 bytes); a line's host list
    /// may be four times as long.
    static let maxNameBytes = 1024

    public struct Match: Equatable {
        /// The names the file gives the key, first seen first; empty when revoked.
        public var names: [String]
        /// A "@revoked" line holds the key: it names nothing and must not be trusted.
        public var revoked: Bool

        public init(names: [String], revoked: Bool) {
            self.names = names
            self.revoked = revoked
        }
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case tooLarge(Int)
        public var description: String {
            switch self { case .tooLarge(let n): return "a known_hosts of \(n) bytes (at most \(KnownHosts.maxBytes))" }
        }
    }

    /// The name ssh looks a host up by: lowercased, "[host]:port" when the port is not 22.
    public static func candidate(host: String, port: Int = 22) -> String {
        let name = host.lowercased()
        return port == 22 ? name : "[\(name)]:\(port)"
    }

    /// The names `text` gives `hostKey` (an SSH public key blob). `candidates` are the names
    /// the destination may have (see `candidate(host:port:)`); beyond `maxCandidates` they
    /// are ignored. For a host certificate (whose CA signature `HostKeySignature` has
    /// checked), a "@cert-authority" line holding its CA gives each candidate it matches that
    /// the certificate is valid for at `now` (seconds since the epoch; nil: none), as ssh
    /// accepts it; plain lines holding its embedded key give their names as for a plain key.
    public static func match(text: [UInt8], hostKey: [UInt8], candidates: [String],
                             now: UInt64? = nil) throws(Failure) -> Match {
        guard text.count <= maxBytes else { throw .tooLarge(text.count) }
        let wanted = candidates.prefix(maxCandidates).map { $0.lowercased() }.filter { $0.utf8.count <= maxNameBytes }
        let certificate = SSHCertificate.isCertificate(hostKey) ? try? SSHCertificate(blob: hostKey) : nil
        let keys = [hostKey] + (certificate.map { [$0.publicKey] } ?? [])
        var names: [String] = []
        func add(_ found: [String]) {
            for name in found where names.count < maxNames && !names.contains(name) { names.append(name) }
        }
        for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard let entry = KnownHostsEntry(line) else { continue }
            // Past the last name that can be returned, only a revocation still matters.
            guard names.count < maxNames || entry.marker == .revoked else { continue }
            switch entry.marker {
            case .revoked:
                if (keys + (certificate.map { [$0.signatureKey] } ?? [])).contains(where: entry.holds) {
                    return Match(names: [], revoked: true)
                }
            case .certificateAuthority:
                guard let certificate, let now, entry.holds(certificate.signatureKey) else { continue }
                add(wanted.filter { entry.matches($0) && certificate.isValidHostCertificate(for: bare($0), now: now) })
            case .none:
                if keys.contains(where: entry.holds) { add(entry.names(candidates: wanted)) }
            }
        }
        return Match(names: names, revoked: false)
    }

    /// The host of a lookup name: "host" of "[host]:port".
    static func bare(_ name: String) -> String {
        guard name.hasPrefix("["), let close = name.lastIndex(of: "]"),
              name[name.index(after: close)...].hasPrefix(":") else { return name }
        return String(name[name.index(after: name.startIndex)..<close])
    }

    public static func match(text: String, hostKey: [UInt8], candidates: [String],
                             now: UInt64? = nil) throws(Failure) -> Match {
        try match(text: Array(text.utf8), hostKey: hostKey, candidates: candidates, now: now)
    }
}
