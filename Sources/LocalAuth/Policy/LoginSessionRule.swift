/// "Never remote", by logind: who may be at the reader for a caller, decided from what
/// logind says about the caller's login session. Pure: the helper gathers the facts
/// (sd-login), this decides, and the tests give it every answer sd-login can give.
///
/// Where logind runs, a scan needs a session that is local (not over SSH or another
/// remote login), sits on a seat (a screen and a keyboard: the reader's place), and is the
/// seat's active one (another user's session in front of the seat means the person there
/// is not this user). A caller with no session at all — a service, a user manager reached
/// with `systemd-run --user --pty` from an SSH login, a cron job — gets no scan: nobody is
/// known to be at the machine. Any question logind cannot answer is a "no".
///
/// Where logind does not run (containers, systems without systemd) there is nothing to ask:
/// the caller's terminal and PAM_RHOST decide alone (`.logindAbsent`), and the log says so.
public enum LoginSessionFacts: Equatable, Sendable {
    /// logind is not running on this system.
    case logindAbsent
    /// logind runs and the caller belongs to no session (sd_pid_get_session: ENODATA).
    case noSession
    /// The question could not be asked (another error from sd-login), with why.
    case unknown(String)
    /// The caller's session: `remote`, `seat`, `active` as logind says, nil where logind
    /// could not tell.
    case session(id: String, remote: Bool?, seat: String?, active: Bool?)
}

public enum LoginSessionRule {
    /// Why no finger may be asked for, or nil when one may.
    public static func refusal(_ facts: LoginSessionFacts) -> LAError? {
        switch facts {
        case .logindAbsent:
            return nil
        case .noSession:
            return remote("the caller is in no login session (a service or a user manager)")
        case .unknown(let why):
            return remote("logind could not say which session the caller is in: \(why)")
        case .session(let id, let isRemote, let seat, let active):
            guard let isRemote else { return remote("logind could not say whether session \(id) is remote") }
            if isRemote { return remote("remote logind session \(id)") }
            guard let seat, !seat.isEmpty else { return remote("logind session \(id) is on no seat") }
            guard active == true else {
                return remote("logind session \(id) is not the active one on \(seat)")
            }
            return nil
        }
    }

    private static func remote(_ cause: String) -> LAError {
        LAError(.notInteractive, reason: .remoteSession, cause: cause)
    }
}
