import LocalAuth

/// One answer the service gives without a helper: a sign-in request (`mode=authenticate`)
/// whose PAM_RHOST names another machine (RemoteRule, the one remote rule), as sshd's and `login -h`'s first
/// line sends it before any password. Nobody there can touch the reader, whatever else a
/// helper would judge; the helper's Presence refuses it first, with this answer. Answered
/// here, a flood of password tries over the network (which anyone who knows a user name
/// can send) starts no root process and holds none of root's request slots.
///
/// Only a root peer's `rhost` means anything (root's PAM hosts set PAM_RHOST; a helper for
/// any other peer never reads it). Such a request from a peer that is not root gets the
/// same refusal, but is only counted in the log (QuietLog): any uid can send it as fast as
/// it can connect.
enum RemoteHostAnswer {
    enum Answered {
        /// A root peer's: one line each (sshd sends one per password try).
        case rootPeer(cause: String)
        /// Any other peer's: counted, not a line each.
        case otherPeer(cause: String)
    }

    /// How it was answered here; nil when a helper should take it.
    static func answer(_ connection: Int32, request: RequestPeek, peer: Peer) -> Answered? {
        guard case .authenticate(let caller) = request.request,
              RemoteRule.handle(rhost: caller.rhost, tty: caller.tty).isAnotherMachine else {
            return nil
        }
        let rhost = caller.rhost
        let cause = "remote host \(LogWords.short(rhost)) (answered by localauthd)"
        request.refuse(connection, .notInteractive, reason: .remoteSession, cause: cause)
        return peer.uid == 0 ? .rootPeer(cause: cause) : .otherPeer(cause: cause)
    }
}
