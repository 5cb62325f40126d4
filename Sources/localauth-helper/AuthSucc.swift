#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth
import LocalAuthProtocol
import SystemEvents

/// `mode=authsucc`: after the password, the lockout is cleared and the password time and
/// boot recorded — only when the password is proven. The request says which proof its line
/// has (docs/PROTOCOL.md):
///
/// * `proof=authtok`, the auth line after the password module. `required` does not stop a
///   stack, so that line also runs after a *wrong* password: the password the stack saw
///   (PAM_AUTHTOK, the frame after the request) is checked against the account here.
/// * `proof=account`, the account phase, which sudo, su, login and polkit reach only after
///   the whole auth stack succeeded (where pam_faillock resets too). Trusted from root's
///   stack; through the launcher a user can forge it, so there it proves nothing.
enum AuthSucc {
    enum Proof: String { case authtok, account }

    struct Caller {
        /// Through the launcher: the request may be forged, checks are paced.
        let unprivileged: Bool
        let uid: uid_t?
    }

    static func run(_ request: HelperRequest, caller: Caller, options: Options,
                    channel: FrameChannel, log: LogSink) -> Frame {
        // The password frame always follows the request in this mode; read it first so
        // that the module is never left writing to a helper that stopped reading.
        var password = readPassword(channel)
        defer { if password != nil { Crypto.wipe(&password!) } }
        guard request.firstLine else {
            return unchanged("authsucc without the first line in this handle")
        }
        let store = FileStateStore(directory: options.stateDir)
        if let refusal = proofRefusal(request, caller: caller, password: password, store: store,
                                      options: options, log: log) {
            log.log(.notice, "user \(request.user): lockout not cleared: \(refusal)")
            return unchanged(refusal)
        }
        return record(request, store: store, options: options, log: log)
    }

    /// Why the password is not proven, or nil when it is.
    static func proofRefusal(_ request: HelperRequest, caller: Caller, password: [UInt8]?,
                             store: FileStateStore, options: Options, log: LogSink) -> String? {
        // A request that names no proof (written by hand) gets the stricter one.
        switch request.proof ?? .authtok {
        case .account:
            return caller.unprivileged
                ? "the account phase proves nothing through the launcher (a user can send it)"
                : nil
        case .authtok:
            let typed = password ?? []
            let verdict = caller.unprivileged
                ? PacedPasswordCheck(store: store, rules: Rules(options), log: log)
                    .check(user: request.user, password: typed)
                : ShadowPassword.check(user: request.user, password: typed)
            switch verdict {
            case .matches?: return nil
            case .differs?:
                return typed.isEmpty ? "no password in PAM_AUTHTOK" : "the password does not match the account"
            case .unprovable(let why)?:
                return "the password cannot be checked here (\(why)); clear it in the account "
                    + "phase: `account required pam_localauth.so`"
            case nil: return "the password could not be checked"
            }
        }
    }

    private static func readPassword(_ channel: FrameChannel) -> [UInt8]? {
        guard let frame = try? channel.receive(), frame.kind == .answer else { return nil }
        return frame.payload
    }

    private static func record(_ request: HelperRequest, store: FileStateStore, options: Options,
                               log: LogSink) -> Frame {
        let env = LAEnvironment(
            user: request.user,
            sensor: FprintdSensor(address: options.dbusAddress, busTimeout: options.busTimeout,
                                  fprintDir: options.fprintDir, log: log),
            store: store, options: options, log: log)
        let watch = LockoutWatch(store: store, user: request.user, rules: Rules(options))
        do {
            try PasswordRecord.record(env: env, rules: Rules(options), domainState: currentDomain(env, options))
            if watch.lockedBefore {
                SecurityRecord(program: "localauth-helper", log: log)
                    .lockoutCleared(request.user, failures: watch.failuresBefore ?? 0, by: .password,
                                    context: request.eventContext)
            }
            return HelperResult.frame(code: 0, name: "success", cause: "password recorded, lockout cleared")
        } catch {
            return HelperResult.frame(code: LAError.Code.biometryNotAvailable.rawValue,
                                      name: "biometryNotAvailable", cause: "could not record the password: \(error)")
        }
    }

    private static func unchanged(_ why: String) -> Frame {
        HelperResult.frame(code: LAError.Code.invalidContext.rawValue, name: "invalidContext",
                           cause: "\(why): nothing changed")
    }

    /// Without a required switch, the password re-trusts the enrolled set seen now; when it
    /// cannot be read, the trusted set stays as it was.
    private static func currentDomain(_ env: LAEnvironment, _ options: Options) -> String? {
        guard options.optIn == .optional else { return nil }
        do {
            return try DomainState.compute(try env.sensor.enrolledSet(for: env.user.value), store: env.store)
        } catch {
            env.log.log(.info, "enrolled set not read after the password: \(error)")
            return nil
        }
    }
}
