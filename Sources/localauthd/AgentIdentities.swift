#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// SSH_AGENT_IDENTITIES_ANSWER for a uid, from root's store (SSHKeyStore): each key's
/// public blob with its name as the comment, as the helper's agent mode lists them. The
/// store's public listing: no private key is ever decoded in localauthd (a bug here must
/// not hold every user's keys in the resident service's memory). A store that cannot be
/// read lists nothing (and says why in the log), as the helper does.
enum AgentIdentities {
    static func answer(uid: uid_t, stateDirectory: String, log: LogSink) -> [UInt8] {
        var identities: [AgentReply.Identity] = []
        do {
            identities = try SSHKeyStore(stateDirectory: stateDirectory, uid: uid).publicListing()
                .map { AgentReply.Identity(keyBlob: SSHKeyText.blob(point: $0.publicKey), comment: $0.name) }
        } catch {
            log.log(.warning, "uid \(uid): the SSH keys cannot be listed: \(error)")
        }
        return AgentFrame.frame(AgentReply.identities(identities).encode())
    }
}
