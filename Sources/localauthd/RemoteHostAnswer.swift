import LocalAuth

/// One answer the service gives without a helper: a sign-in request (`mode=authenticate`)
/// whose PAM_RHOST names another machine (RemoteHost), as sshd's and `login -h`'s first
/// line sends it before any password. Nobody there can touch the reader, whatever else a
/// helper would judge; the helper's Presence refuses it first, with this answer. Answered
/// here, a flood of password tries over the network (which anyone who knows a user name
/// can send) starts no root process and holds none of root's request slots.
enum RemoteHostAnswer {
    /// The cause for the log line when answered here; nil when a helper should take it.
    static func answer(_ connection: Int32, request: RequestPeek) -> String? {
        guard request.keys.value("mode") == "authenticate", request.keys.values("rhost").count == 1,
              let rhost = request.keys.value("rhost"), RemoteHost.namesAnotherMachine(rhost) else { return nil }
        let cause = "remote host \(LogWords.short(rhost)) (answered by localauthd)"
        request.refuse(connection, .notInteractive, reason: .remoteSession, cause: cause)
        return cause
    }
}
