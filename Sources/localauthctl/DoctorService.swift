#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// `doctor`'s look at localauthd (docs/SERVICE.md): the module's socket, whether it answers,
/// and, where systemd runs, whether the socket unit is there to answer at all.
struct DoctorService {
    typealias Finding = DoctorCommand.Finding

    /// The module's default (`service=`); `--service` names another for a check.
    static let defaultSocket = "/run/localauth/socket"
    static let unitDirectories = ["/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"]
    let socket: String

    func check() -> [Finding] {
        let socket = self.socket
        var st = stat()
        guard lstat(socket, &st) == 0 else { return absent() }
        // What the module requires before it connects (session.c): a socket of root's.
        guard (st.st_mode & S_IFMT) == S_IFSOCK, st.st_uid == 0 else {
            let uid = st.st_uid
            return [Finding(.problem, "service.not-socket", { l in
                tr(l, "service %s: not a socket of root's (owner uid %s): the module gives every caller the password",
                   socket, uid)
            }, fix: DoctorCommand.verbatim("systemctl restart localauth.socket"))]
        }
        if let failure = DoctorService.connectFails(socket) {
            return [Finding(.problem, "service.refused", { l in
                tr(l, "service %s: %s: the module gives every caller the password", socket, failure)
            }, fix: DoctorCommand.verbatim("systemctl restart localauth.socket"))]
        }
        return [Finding(.ok, "service.ok", { l in tr(l, "service %s: root's socket, answering", socket) })]
    }

    /// No socket file: every caller gets the password (the module starts nothing). Where
    /// systemd does not run, the administrator has not started `localauthd --listen` from
    /// the init; where it runs, the unit was left off or stopped.
    private func absent() -> [Finding] {
        let socket = self.socket
        let systemd = access("/run/systemd/system", F_OK) == 0
        let unit = DoctorService.unitDirectories.contains { access($0 + "/localauth.socket", F_OK) == 0 }
        if socket != DoctorService.defaultSocket {
            return [Finding(.problem, "service.missing", { l in tr(l, "service %s: no such socket", socket) })]
        }
        if !systemd {
            return [Finding(.warning, "service.none", { l in
                tr(l, "service %s: none (systemd does not run): every caller gets the password until localauthd runs; start it from the init (localauthd --listen, see localauthd(8))", socket)
            })]
        }
        if !unit {
            return [Finding(.warning, "service.none", { l in
                tr(l, "service %s: none (no localauth.socket unit): every caller gets the password until localauthd runs; start it from the init (localauthd --listen, see localauthd(8))", socket)
            })]
        }
        return [Finding(.warning, "service.stopped", { l in
            tr(l, "service %s: absent while systemd runs: every caller gets the password",
               socket)
        }, fix: DoctorCommand.verbatim("systemctl enable --now localauth.socket"))]
    }

    /// Connects and closes at once (the service's helper takes a connection closed before
    /// a request as nothing asked); nil when the connection was accepted.
    static func connectFails(_ path: String) -> String? {
        switch ServiceConnection.open(path) {
        case .success(let fd):
            close(fd)
            return nil
        case .failure(let why):
            return why.description
        }
    }
}
