#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import LocalAuthProtocol

/// An application's preflight (`mode=app op=preflight`, `canEvaluatePolicy`) answered by
/// the service itself, with no helper: the same evaluation a helper runs (AppPreflight),
/// over root's state file read now and the enrolled set as the last helper read it from
/// fprintd (RecordedEnrollment), while fprintd's print storage is unchanged since and the
/// reading is young. Anything else, a peer that is root, or a request a helper would
/// judge differently, is left to a helper, which reads fprintd and records the set again.
/// Answers in microseconds, so the library asks for each call and keeps nothing.
struct ServicePreflight {
    let log: LogSink
    /// The files every answer reads (state, record, secret, shadow), read again only when
    /// they change (FileMemo).
    private let memo = FileMemo()
    private let system: LinuxSystem
    private let names = UserNames()

    init(log: LogSink) {
        self.log = log
        system = LinuxSystem(memo: memo)
    }

    /// The line for the log when the service answered; nil when a helper should. `keep`:
    /// the answer says `kept=1`, the connection stays open for the next (KeptConnections).
    func answer(_ connection: Int32, request: RequestPeek, peer: Peer, options: Options, keep: Bool) -> String? {
        guard peer.uid != 0, case .app(let caller, .preflight(let asked, _)) = request.request,
              let name = names.name(of: peer.uid), caller.user == name, let user = try? UserName(name),
              let boot = system.bootID() else { return nil }
        let policy = Self.policy(asked)
        var o = options
        o.reuseDuration = 0
        let store = FileStateStore(directory: o.stateDir, memo: memo)
        let sensor = RecordedEnrollment(store: store, fprintDir: o.fprintDir, bootID: boot)
        let env = EvaluationEnvironment(user: user, sensor: sensor, store: store, system: system, options: o,
                                        passwordVerifier: policy == .deviceOwnerAuthentication ? NoPassword() : nil,
                                        log: log)
        let result = AppPreflight.run(env, policy: policy)
        guard !sensor.missed else { return nil }
        var answer = result.keys
        if keep { answer.add("kept", "1") }
        request.answer(connection, result: answer)
        return "\(result.keys.value("name") ?? "?") (\(result.keys.value("cause") ?? ""))"
    }

    private static func policy(_ asked: Request.Policy) -> EvaluationPolicy {
        switch asked {
        case .biometrics: return .deviceOwnerAuthenticationWithBiometrics
        case .owner: return .deviceOwnerAuthentication
        }
    }

}

/// The peer's user name, as the helper finds it (the user database, by uid), looked up
/// again after `lifeMillis`: each lookup reads the user database (six system calls, as
/// much as the rest of an answer). A name is only compared with the request's `user`;
/// a uid renamed shows within the second.
final class UserNames {
    static let lifeMillis: Int64 = 1000
    private var known: [uid_t: (name: String, at: Int64)] = [:]

    func name(of uid: uid_t) -> String? {
        let now = MonotonicClock.millis()
        if let entry = known[uid], now - entry.at < Self.lifeMillis { return entry.name }
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil,
              let raw = entry.pw_name else { return nil }
        let name = String(cString: raw)
        if known.count >= 256 { known.removeAll() }
        known[uid] = (name, now)
        return name
    }
}

/// The owner policy's password is there to fall back on; a preflight never asks it.
private final class NoPassword: PasswordVerifier {
    func verify(user: UserName, password: [UInt8]) -> Bool { false }
}
