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
///   stack; from a peer that is not root a user can forge it, so there it proves nothing. sshd
///   reaches it after a public key on the handle where a wrong password failed, so a
///   networked handle proves nothing either. Where the account
///   has a local hash, PAM_AUTHTOK must still be its password; only for an account without
///   one (SSSD, Kerberos) is the account phase itself the proof.
enum AuthSucc {
    /// Declared with the request (Request.swift), which scripts/fuzz compiles on its own.
    typealias Proof = HelperRequest.Proof

    struct Caller {
        /// From a peer that is not root: the request may be forged, checks are paced.
        let unprivileged: Bool
        let uid: uid_t?
    }

    static func run(_ request: HelperRequest, caller: Caller, options: Options,
                    channel: FrameChannel, log: LogSink) -> Frame {
        // The password frame always follows the request in this mode; read it first so
        // that the module is never left writing to a helper that stopped reading.
        var password = readPassword(channel)
        defer { if password != nil { Crypto.wipe(&password!) } }
        // The account phase of a login from elsewhere (sshd's, by key as by password) is
        // recorded whatever else this request proves.
        let remote = request.proof == .account
            ? RemoteLogins.accountPhase(request, unprivileged: caller.unprivileged, options: options, log: log) : nil
        guard request.firstLine else {
            if let remote, remote.recorded {
                return HelperResult.frame(code: ResultCode.successValue, name: "success", cause: remote.said)
            }
            return unchanged(joined(remote, "authsucc without the first line in this handle"))
        }
        let store = FileStateStore(directory: options.stateDir)
        if let refusal = proofRefusal(request, caller: caller, password: password, store: store,
                                      options: options, log: log) {
            log.log(.notice, "user \(request.user): lockout not cleared: \(refusal)")
            return unchanged(joined(remote, refusal))
        }
        DialogMatch.note(.password, request, options: options, log: log)  // a rights dialog's password
        return record(request, store: store, options: options, log: log)
    }

    /// Why the password is not proven, or nil when it is.
    static func proofRefusal(_ request: HelperRequest, caller: Caller, password: [UInt8]?,
                             store: FileStateStore, options: Options, log: LogSink) -> String? {
        // A password typed on another machine lifts no lockout of this one's reader, whatever
        // the proof (the first line there got no finger either: Presence).
        if request.isRemote {
            return "a login from another machine (PAM_RHOST \(LogWords.short(request.rhost))) clears no lockout"
        }
        // A request that names no proof (written by hand) gets the stricter one.
        switch request.proof ?? .authtok {
        case .account:
            if caller.unprivileged {
                return "the account phase proves nothing from a caller that is not root (a user can send it)"
            }
            if let networked = networkedHandle(request) {
                return "the account phase proves no password for a networked handle (\(networked))"
            }
            return localHashRefusal(request, password: password ?? [])
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
                    + "phase: `account optional pam_localauth.so`"
            case nil: return "the password could not be checked"
            }
        }
    }

    /// Why the request is from a networked handle:
    /// any PAM_RHOST, loopback included (every `ssh -R` tunnel presents one), or sshd's
    /// PAM_TTY `ssh`; nil otherwise.
    static func networkedHandle(_ request: HelperRequest) -> String? {
        if !request.rhost.isEmpty { return "PAM_RHOST is set" }
        if request.tty == "ssh" { return "PAM_TTY is ssh" }
        return nil
    }

    /// The account phase's password check: nil when the account has no local hash (the
    /// phase is the proof then) or PAM_AUTHTOK matches it; otherwise why not. Linux-PAM
    /// drops PAM_AUTHTOK when pam_authenticate returns, so for a local account it is
    /// usually empty here: the `authsucc` line, which sees it, is the one that clears.
    private static func localHashRefusal(_ request: HelperRequest, password: [UInt8]) -> String? {
        switch ShadowPassword.check(user: request.user, password: password) {
        case .matches, .unprovable: return nil
        case .differs:
            return password.isEmpty
                ? "the account has a local password hash and PAM_AUTHTOK is empty (libpam drops it "
                    + "after pam_authenticate): for a local account the `auth optional pam_localauth.so "
                    + "authsucc` line after the password module clears the lockout"
                : "PAM_AUTHTOK is not the local account's password"
        }
    }

    private static func readPassword(_ channel: FrameChannel) -> [UInt8]? {
        guard let frame = try? channel.receive(), frame.kind == .answer else { return nil }
        return frame.payload
    }

    private static func record(_ request: HelperRequest, store: FileStateStore, options: Options,
                               log: LogSink) -> Frame {
        let env = EvaluationEnvironment(
            user: request.user,
            sensor: FprintdSensor(address: options.dbusAddress, busTimeout: options.busTimeout,
                                  fprintDir: options.fprintDir, log: log),
            store: store, options: options, log: log)
        let watch = LockoutWatch(store: store, user: request.user, rules: Rules(options))
        let before = try? store.load(request.user)
        do {
            let domain = request.readerUnreachable ? nil : currentDomain(env, options)
            if request.readerUnreachable {
                log.log(.info, "fprintd failed earlier in this transaction: the enrolled set is not read again "
                        + "(the trusted one stays; the next password that reaches fprintd trusts the set it sees)")
            }
            try PasswordRecord.record(env: env, rules: Rules(options), domainState: domain,
                                      localUnlock: !RemoteLogins.fromElsewhere(request))
            if watch.lockedBefore {
                SecurityRecord(program: "localauth-helper", log: log)
                    .lockoutCleared(request.user, failures: watch.failuresBefore ?? 0, by: .password,
                                    context: request.eventContext)
            }
            return HelperResult.frame(code: ResultCode.successValue, name: "success", cause: recorded(watch, before))
        } catch {
            return HelperResult.frame(code: EvaluationError.Code.biometryNotAvailable.rawValue,
                                      name: "biometryNotAvailable", cause: "could not record the password: \(error)")
        }
    }

    /// What recording the password changed, in the log's words: a lockout is said to be
    /// cleared only when there was one.
    private static func recorded(_ watch: LockoutWatch, _ before: StoredState?) -> String {
        if case .damaged? = before { return "password recorded, the damaged state rewritten (it counted as a lockout)" }
        let failures = watch.failuresBefore ?? 0
        if watch.lockedBefore { return "password recorded, lockout cleared (\(failures) consecutive failed matches)" }
        if failures > 0 { return "password recorded, \(failures) failed matches forgotten (no lockout)" }
        return "password recorded (no lockout to clear)"
    }

    /// The remote login's record, if any, before why nothing else changed.
    private static func joined(_ remote: RemoteLogins.AccountPhase?, _ why: String) -> String {
        guard let remote else { return why }
        return "\(remote.said); \(why)"
    }

    private static func unchanged(_ why: String) -> Frame {
        HelperResult.frame(code: EvaluationError.Code.invalidContext.rawValue, name: "invalidContext",
                           cause: "\(why): nothing changed")
    }

    /// Without a required switch, the password re-trusts the enrolled set seen now; when it
    /// cannot be read, the trusted set stays as it was.
    private static func currentDomain(_ env: EvaluationEnvironment, _ options: Options) -> String? {
        guard options.optIn == .optional else { return nil }
        do {
            return try DomainState.compute(try env.sensor.enrolledSet(for: env.user.value), store: env.store)
        } catch {
            env.log.log(.info, "enrolled set not read after the password: \(error)")
            return nil
        }
    }
}
