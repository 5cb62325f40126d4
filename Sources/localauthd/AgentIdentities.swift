#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// SSH_AGENT_IDENTITIES_ANSWER for a uid, from root's store (SSHKeyStore): each key's
/// public blob with its name as the comment, as the helper's agent mode lists them. Only
/// the public halves leave this function; a store that cannot be read lists nothing (and
/// says why in the log), as the helper does.
enum AgentIdentities {
    static func answer(uid: uid_t, stateDirectory: String, log: LogSink) -> [UInt8] {
        var identities: [AgentReply.Identity] = []
        do {
            identities = try SSHKeyStore(stateDirectory: stateDirectory, uid: uid).list()
                .map { AgentReply.Identity(keyBlob: SSHKeyText.blob(point: $0.publicKey), comment: $0.name) }
        } catch {
            log.log(.warning, "uid \(uid): the SSH keys cannot be listed: \(error)")
        }
        return AgentFrame.frame(AgentReply.identities(identities).encode())
    }
}
