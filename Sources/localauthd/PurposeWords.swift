#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// The `approves="..."` field of the service's own refusals of a sign-in (a remote host, the
/// reader unreachable), as the helper writes it on its lines (TouchPurpose): read from the
/// pinned peer, whose pidfd says afterwards that the facts are its own.
enum PurposeWords {
    static func field(_ peer: Peer, _ request: Request) -> String {
        guard case .authenticate = request.mode else { return "" }
        let facts = TouchPurpose.read(service: request.caller.service, user: request.caller.user, rootPeer: peer.uid == 0,
                                      pid: peer.pid, stillRuns: {
                                          var p = pollfd(fd: peer.pidfd, events: Int16(POLLIN), revents: 0)
                                          return poll(&p, 1, 0) == 0
                                      })
        return " " + TouchPurpose.of(facts).logField
    }
}
