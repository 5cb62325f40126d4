#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth
import LocalAuthProtocol
import SystemEvents

/// `mode=authsucc`: after the password, the lockout is cleared and the password time and
/// boot recorded — only when the password is proven. What proves it is PasswordProofRule's
/// (the engine, with its tests): this gathers the facts (the request, the peer, the
/// password frame, the password check the rule asks for) and performs what it decides
/// (docs/PROTOCOL.md).
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
        var facts = self.facts(request, caller: caller, password: password, options: options)
        // The account phase of a login from elsewhere (sshd's, by key as by password) is
        // recorded whatever else this request proves.
        let remote = PasswordProofRule.remoteLogin(facts).map { recordRemoteLogin($0, request, options: options, log: log) }
        let store = FileStateStore(directory: options.stateDir)
        var decision = PasswordProofRule.decide(facts)
        if case .checkPassword(let paced) = decision {
            facts.check = check(request, password: password ?? [], paced: paced, store: store, options: options, log: log)
            decision = PasswordProofRule.decide(facts)
        }
        switch decision {
        case .refuse(.notFirstLine):
            if let remote, remote.recorded {
                return HelperResult.frame(code: ResultCode.successValue, name: "success", cause: remote.said)
            }
            return unchanged(joined(remote, PasswordProofRule.Refusal.notFirstLine.description))
        case .refuse(let refusal):
            log.log(.notice, "user \(request.user): lockout not cleared: \(refusal)")
            return unchanged(joined(remote, refusal.description))
        case .checkPassword:
            // The rule asks once; a second ask would be a rule gone wrong: nothing proven.
            return unchanged(joined(remote, PasswordProofRule.Refusal.notChecked.description))
        case .proven(let localUnlock, let readEnrolledSet, let dialogMatch):
            if dialogMatch { DialogMatch.record(.password, request, options: options, log: log) }  // a rights dialog's
            return record(request, store: store, localUnlock: localUnlock, readEnrolledSet: readEnrolledSet,
                          options: options, log: log)
        }
    }

    /// The rule's facts: the request's and the peer's, before any password check.
    static func facts(_ request: HelperRequest, caller: Caller, password: [UInt8]?,
                      options: Options) -> PasswordProofRule.Facts {
        PasswordProofRule.Facts(
            proof: request.proof.map { $0 == .account ? .account : .authtok }, firstLine: request.firstLine,
            origin: request.origin, fromRoot: !caller.unprivileged, passwordGiven: !(password ?? []).isEmpty,
            readerUnreachable: request.readerUnreachable, optInRequired: options.optIn == .required,
            service: request.service)
    }

    /// The check the rule asked for: paced for a peer that is not root (PacedPasswordCheck).
    private static func check(_ request: HelperRequest, password: [UInt8], paced: Bool, store: FileStateStore,
                              options: Options, log: LogSink) -> PasswordProofRule.Check {
        let verdict = paced
            ? PacedPasswordCheck(store: store, rules: Rules(options), log: log).check(user: request.user, password: password)
            : ShadowPassword.check(user: request.user, password: password)
        switch verdict {
        case .matches?: return .matches
        case .differs?: return .differs
        case .unprovable(let why)?: return .unprovable(why)
        case nil: return .notDone
        }
    }

    /// The account phase's remote login, recorded (RemoteLogins).
    private static func recordRemoteLogin(_ login: PasswordProofRule.RemoteLoginRecord, _ request: HelperRequest,
                                          options: Options, log: LogSink) -> RemoteLogins.AccountPhase {
        if let problem = RemoteLogins.recordLogin(request.user, from: login.from, options: options, log: log) {
            return RemoteLogins.AccountPhase(recorded: false, said: "\(login.networked): \(problem)")
        }
        return RemoteLogins.AccountPhase(recorded: true,
                                         said: "\(login.networked): remote login recorded (from \(LogWords.word(login.from)))")
    }

    private static func readPassword(_ channel: FrameChannel) -> [UInt8]? {
        guard let frame = try? channel.receive(), frame.kind == .answer else { return nil }
        return frame.payload
    }

    private static func record(_ request: HelperRequest, store: FileStateStore, localUnlock: Bool,
                               readEnrolledSet: Bool, options: Options, log: LogSink) -> Frame {
        var env = EvaluationEnvironment(
            user: request.user,
            sensor: FprintdSensor(address: options.dbusAddress, busTimeout: options.busTimeout,
                                  fprintDir: options.fprintDir, log: log),
            store: store, options: options, log: log)
        // A lockout the record lifts is audited by the record itself (PasswordRecord).
        env.events = SecurityRecord(program: "localauth-helper", log: log)
        env.eventContext = request.eventContext
        let rules = Rules(options)
        do {
            let domain = readEnrolledSet ? currentDomain(env) : nil
            if request.readerUnreachable {
                log.log(.info, "fprintd failed earlier in this transaction: the enrolled set is not read again "
                        + "(the trusted one stays; the next password that reaches fprintd trusts the set it sees)")
            }
            let before = try PasswordRecord.record(env: env, rules: rules, domainState: domain, localUnlock: localUnlock)
            return HelperResult.frame(code: ResultCode.successValue, name: "success",
                                      cause: PasswordProofRule.recorded(before: before, rules: rules))
        } catch {
            return HelperResult.frame(code: EvaluationError.Code.biometryNotAvailable.rawValue,
                                      name: "biometryNotAvailable", cause: "could not record the password: \(error)")
        }
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
    private static func currentDomain(_ env: EvaluationEnvironment) -> String? {
        do {
            return try DomainState.compute(try env.sensor.enrolledSet(for: env.user.value), store: env.store)
        } catch {
            env.log.log(.info, "enrolled set not read after the password: \(error)")
            return nil
        }
    }
}
