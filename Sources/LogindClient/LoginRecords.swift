#if canImport(Glibc)
import Glibc
#endif
import CSystemd
import LocalAuth

/// What sd-login says (logind's records under /run/systemd, read without a bus round trip):
/// sessions, their seats and users, the user manager a process runs in. Every answer that
/// sd-login cannot give is nil or an error text, never a guess.
public enum LoginRecords {
    /// Whether systemd (and so logind) runs on this machine.
    public static var logindRuns: Bool { sd_booted() > 0 }

    public enum SessionOfProcess: Equatable {
        case session(String)
        /// ENODATA / ENXIO: the process belongs to no session.
        case none
        case failed(String)
    }

    /// The session of `pid`.
    public static func session(of pid: Int32) -> SessionOfProcess {
        var name: UnsafeMutablePointer<CChar>?
        let r = sd_pid_get_session(pid, &name)
        if r == -ENODATA || r == -ENXIO { return .none }
        guard r >= 0, let name else { return .failed(String(cString: strerror(-r))) }
        defer { free(name) }
        return .session(String(cString: name))
    }

    /// The unit of `pid` inside its user's manager (`app-org.gnome.Terminal-3.scope`), and
    /// that user: nil when the process is not in a user manager.
    public static func userUnit(of pid: Int32) -> (unit: String, uid: UInt32)? {
        guard let unit = text({ sd_pid_get_user_unit(pid, &$0) }) else { return nil }
        var uid: uid_t = 0
        guard sd_pid_get_owner_uid(pid, &uid) >= 0 else { return nil }
        return (unit, UInt32(uid))
    }

    /// The user's display session: logind's choice of the one their desktop runs in.
    public static func displaySession(of uid: UInt32) -> String? {
        text { sd_uid_get_display(uid_t(uid), &$0) }
    }

    /// The session in front of `seat`.
    public static func activeSession(of seat: String) -> String? {
        var name: UnsafeMutablePointer<CChar>?
        guard sd_seat_get_active(seat, &name, nil) >= 0, let name else { return nil }
        defer { free(name) }
        return String(cString: name)
    }

    /// Every session of `uid`, closing ones too: a remote login that ended but left a process
    /// behind (a tmux server, a reverse shell) is still a way in for whoever started it.
    public static func sessions(of uid: UInt32) -> [String] {
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let n = sd_uid_get_sessions(uid_t(uid), -1, &list)
        guard n > 0, let list else { return [] }
        defer {
            for i in 0..<Int(n) { free(list[i]) }
            free(list)
        }
        // The user's record can name a session logind has since dropped (it is rewritten only
        // at the user's next change): a session with no record of its own is gone.
        return (0..<Int(n)).compactMap { list[$0].map { String(cString: $0) } }.filter(exists)
    }

    /// Whether logind still has a record of session `id` (open or closing).
    public static func exists(_ id: String) -> Bool {
        var state: UnsafeMutablePointer<CChar>?
        let r = sd_session_get_state(id, &state)
        free(state)
        return r != -ENXIO && r != -ENOENT
    }

    /// The record of session `id`. `locked` and `idle` are not in sd-login's records: they
    /// stay nil until LogindHints fills them in.
    public static func record(of id: String) -> LogindSession {
        var uid: uid_t = 0
        let owner: UInt32? = sd_session_get_uid(id, &uid) >= 0 ? UInt32(uid) : nil
        return LogindSession(
            id: id, uid: owner, remote: flag(sd_session_is_remote(id)),
            remoteHost: text { sd_session_get_remote_host(id, &$0) } ?? "",
            seat: text { sd_session_get_seat(id, &$0) } ?? "",
            sessionClass: text { sd_session_get_class(id, &$0) } ?? "",
            active: flag(sd_session_is_active(id)), locked: nil, idle: nil,
            tty: text { sd_session_get_tty(id, &$0) } ?? "", vt: vt(of: id))
    }

    /// The session's type (`x11`, `wayland`, `tty`, ...).
    public static func type(of id: String) -> String? {
        text { sd_session_get_type(id, &$0) }
    }

    /// The session's virtual console number (VTNR), nil for none.
    static func vt(of id: String) -> Int? {
        var number: UInt32 = 0
        return sd_session_get_vt(id, &number) >= 0 && number > 0 ? Int(number) : nil
    }

    /// sd-login's yes (> 0), no (0) or don't know (< 0).
    private static func flag(_ r: Int32) -> Bool? { r < 0 ? nil : r > 0 }

    private static func text(_ get: (inout UnsafeMutablePointer<CChar>?) -> Int32) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard get(&value) >= 0, let value else { return nil }
        defer { free(value) }
        return String(cString: value)
    }
}
