#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth
import LocalAuthProtocol

/// `mode=right`: an application's `LARightStore` and `LAPersistedRight` (the
/// LocalAuthentication library), through localauthd only, for a peer that is not root (docs/PROTOCOL.md,
/// "Rights"). The rights live in root's RightsStore, bound to the peer's user and to the
/// calling program's executable (ProgramBinding); a secret or a signature leaves only for
/// the process a right was authorized for, by the evaluation `evaluatePolicy` runs
/// (AppMode.authenticate: presence, lockout, enrolled-set change, tries, the password only
/// where the right's requirement allows it), prompting on the program's terminal, or for a
/// program without one in the desktop's polkit dialog (RightsDialog).
enum RightsMode {
    enum Operation: String {
        case save, get, check, authorize, deauthorize, secret, sign, remove
        case removeAll = "remove_all"
    }

    /// A refusal as a result frame: Apple's code, a reason word, a cause for the log.
    struct Refusal: Error {
        let code: EvaluationError.Code
        let reason: String
        let cause: String

        static func notFound() -> Refusal {
            Refusal(code: .invalidContext, reason: "not-found",
                    cause: "no right is saved under this identifier for this program")
        }

        static func unavailable(_ cause: String) -> Refusal {
            Refusal(code: .biometryNotAvailable, reason: "store-unavailable", cause: cause)
        }

        var frame: Frame { HelperResult.frame(code: code.rawValue, name: code.name, cause: cause, reason: reason) }
    }

    static func run(_ request: HelperRequest, launch: Launch, options: Options, channel: FrameChannel,
                    log: LogSink) -> Frame {
        let op = request.keys.value("op").flatMap(Operation.init(rawValue:))
        let frame: Frame
        var program = "?"
        do {
            guard case .unprivileged(let caller) = launch else {
                throw Refusal.unavailable("rights are kept for programs of ordinary users (through localauthd)")
            }
            guard let op else { throw Refusal.unavailable("mode=right needs a known op") }
            let binding: ProgramBinding
            do { binding = try ProgramBinding.of(pid: caller.callerPID, interpreters: options.rightsInterpreters) } catch {
                switch error {
                case .notPinned(let why): throw Refusal(code: .notInteractive, reason: "no-session", cause: why)
                case .untrusted(let why):
                    throw Refusal(code: .biometryNotAvailable, reason: "program-untrusted",
                                  cause: "the program cannot hold rights: \(why)")
                }
            }
            program = binding.path
            let context = Context(request: request, caller: caller, binding: binding, options: options,
                                  channel: channel, log: log)
            frame = try context.perform(op)
        } catch let refusal as Refusal {
            frame = refusal.frame
        } catch {
            frame = Refusal.unavailable("\(error)").frame
        }
        log.log(.info, "user \(LogWords.word(request.user.value)) program \(LogWords.word(program))"
            + " (pid \(request.callerPID.map(String.init) ?? "?")) right \(op?.rawValue ?? "?")"
            + " \(LogWords.word(identifierText(request))): \(AppMode.summary(frame))")
        return frame
    }

    /// The identifier as it came (hex of its UTF-8), shown decoded when it is plain.
    private static func identifierText(_ request: HelperRequest) -> String {
        guard let hex = request.keys.value("identifier"), let bytes = Hex.decode(hex) else { return "-" }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One request's facts and the operations on them.
    struct Context {
        let request: HelperRequest
        let caller: UnprivilegedCaller
        let binding: ProgramBinding
        let options: Options
        let channel: FrameChannel
        let log: LogSink

        var store: RightsStore { RightsStore(stateDirectory: options.stateDir, uid: caller.uid) }

        func perform(_ op: Operation) throws -> Frame {
            switch op {
            case .save: return try save()
            case .get: return success(try existing(), cause: "found")
            case .check: return try check()
            case .authorize: return try authorize()
            case .deauthorize:
                try store.revoke(program: binding.path, identifier: try identifier())
                return success(nil, cause: "deauthorized")
            case .secret:
                let record = try authorized()
                return success(nil, cause: "secret given", extra: [("secret", Crypto.hex(record.secret))])
            case .sign: return try sign()
            case .remove:
                // As reading it: only this process, once the right was authorized for it.
                try authorizedOrVoid()
                guard try store.remove(program: binding.path, identifier: try identifier()) else { throw Refusal.notFound() }
                return success(nil, cause: "removed")
            case .removeAll:
                // As removing each one: every right must be authorized for this process
                // (or be void: its fingers changed).
                let enrolled = knownEnrolledSet()
                let presented = (request.keys.value("capabilities") ?? "").split(separator: ",").map(String.init)
                let asker = self.asker
                let allowed = { (record: RightRecord, grant: RightGrant?) -> Bool in
                    RightsRule.mayRemoveInAll(record, grant: grant, asker: asker, presented: presented, enrolled: enrolled)
                }
                switch try store.removeAll(program: binding.path, allowed: allowed) {
                case .removed(let n):
                    return success(nil, cause: "removed \(n)")
                case .refused(let n):
                    throw Refusal(code: .notInteractive, reason: "not-authorized",
                                  cause: "\(n) of this program's rights are not authorized for this process: authorize each before removing them all (nothing was removed)")
                }
            }
        }

        // MARK: - Operations

        private func save() throws -> Frame {
            let id = try identifier()
            // Replacing a right needs what reading it needs (a damaged record is no right:
            // it is moved aside, as before; nor is a void one).
            if (try? store.load(program: binding.path, identifier: id)) != nil {
                do { try authorizedOrVoid() } catch let refusal as Refusal where refusal.reason == "not-authorized" {
                    throw Refusal(code: refusal.code, reason: refusal.reason,
                                  cause: "a right is saved under this identifier: authorize it before replacing it")
                }
            }
            guard let requirement = request.keys.value("requirement").flatMap(RightRequirement.init(rawValue:)) else {
                throw Refusal.unavailable("unknown requirement")
            }
            guard let secret = Hex.decode(request.keys.value("secret") ?? ""),
                  secret.count <= RightRecord.maxSecretBytes else {
                throw Refusal.unavailable("the secret is not hex of at most \(RightRecord.maxSecretBytes) bytes")
            }
            let domain = requirement == .biometryCurrentSet ? try currentDomainState() : nil
            var pair = try P256.generate()
            defer { Crypto.wipe(&pair.privateKey) }
            let record = RightRecord(identifier: id, uid: caller.uid, program: binding.path, requirement: requirement,
                                     domainState: domain, secret: secret, privateKey: pair.privateKey,
                                     publicKey: pair.publicKey)
            try store.save(record)
            return success(record, cause: "saved")
        }

        /// `checkCanAuthorize`: the right exists, is still valid, and the preflight of its policy passes.
        private func check() throws -> Frame {
            let record = try existing()
            try checkStillValid(record)
            let frame = AppMode.preflight(request, policy: policy(record), unprivileged: true, options: options, log: log)
            return frame
        }

        /// On the program's terminal, or for a program without one in the desktop's polkit
        /// dialog (RightsDialog).
        private func authorize() throws -> Frame {
            let record = try existing()
            try checkStillValid(record)
            if promptsInDialog { return try authorizeInDialog(record) }
            switch AppMode.authenticate(request, policy: policy(record), unprivileged: true, options: options,
                                        channel: channel, log: log) {
            case .refused(let frame):
                return frame
            case .matched(let method, let domainState):
                guard RightsRule.matchAuthorizes(record, matchedDomainState: domainState) else { throw invalidated() }
                return try grant(record, method: method)
            }
        }

        /// This process (pid and start time, this boot) may now load the secret and sign, with
        /// the capability returned here (kept only as its hash): the right object that was
        /// authorized, not any code of the process that asks for the same identifier.
        func grant(_ record: RightRecord, method: EvaluationMachine.Outcome.Method) throws -> Frame {
            guard let boot = LinuxSystem().bootID() else { throw Refusal.unavailable("no boot id") }
            guard var capability = Crypto.randomBytes(RightGrant.capabilityBytes) else {
                throw Refusal.unavailable("no random bytes for the capability")
            }
            defer { Crypto.wipe(&capability) }
            let grant = RightGrant(pid: caller.callerPID, startTime: binding.startTime, bootID: boot,
                                   grantedAt: BootClock.nanos(), capabilityHash: Crypto.hex(Crypto.sha256(capability)))
            try store.grant(grant, program: binding.path, identifier: record.identifier)
            return success(record, cause: "authorized (\(method.rawValue))", extra: [("capability", Crypto.hex(capability))])
        }

        private func sign() throws -> Frame {
            let record = try authorized()
            guard let digest = Hex.decode(request.keys.value("digest") ?? ""), digest.count == 32 else {
                throw Refusal.unavailable("sign needs digest= (a SHA-256, 64 hex digits)")
            }
            let signature = try P256.sign(digest: digest, privateKey: record.privateKey, publicKey: record.publicKey)
            return success(nil, cause: "signed", extra: [("signature", Crypto.hex(signature))])
        }

        // MARK: - Checks

        private func identifier() throws -> String {
            guard let hex = request.keys.value("identifier"), let bytes = Hex.decode(hex), !bytes.isEmpty,
                  bytes.count <= RightRecord.maxIdentifierBytes else {
                throw Refusal.unavailable("identifier= must be hex of 1 to \(RightRecord.maxIdentifierBytes) bytes")
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        private func existing() throws -> RightRecord {
            guard let record = try store.load(program: binding.path, identifier: try identifier()) else {
                throw Refusal.notFound()
            }
            return record
        }

        /// The record, when this very process (pid and start time, this boot) was granted it.
        /// The record and its grant are read under the store's lock, so a replacement or a
        /// removal in between cannot pair one right's grant with another's bytes.
        private func authorized() throws -> RightRecord {
            let id = try identifier()
            let (loaded, grant) = try store.reading { () throws(RightsStore.Failure) in
                (try store.load(program: binding.path, identifier: id),
                 try store.grant(program: binding.path, identifier: id))
            }
            // The enrolled set is read only for a right bound to it (RightsRule.stillValid).
            let enrolledNow = loaded?.requirement == .biometryCurrentSet ? try enrolledDomainState() : nil
            switch RightsRule.useRefusal(loaded, grant: grant, asker: asker, capability: request.keys.value("capability"),
                                         enrolledNow: enrolledNow) {
            case nil: return loaded!
            case .notFound?: throw Refusal.notFound()
            case .invalidated?: throw invalidated()
            case .notAuthorizedForProcess?:
                throw Refusal(code: .notInteractive, reason: "not-authorized",
                              cause: "the right is not authorized for this process: authorize it first")
            case .capabilityNotPresented?:
                throw Refusal(code: .notInteractive, reason: "not-authorized",
                              cause: "the request does not present the capability of this right's authorization: authorize this right object first")
            }
        }

        /// Authorized for this process, or void: a `biometryCurrentSet` right whose fingers
        /// changed can never be authorized again, and its bytes are out of everyone's reach,
        /// so removing or replacing it takes nothing from anyone (it would otherwise stay,
        /// counted against the user's limit, until root removed it).
        private func authorizedOrVoid() throws {
            do { _ = try authorized() } catch let refusal as Refusal where refusal.reason == "right-invalidated" {}
        }

        /// The enrolled set now: unknown when fprintd cannot say (then no right counts as
        /// void, RightsRule.isVoid).
        private func knownEnrolledSet() -> RightsRule.EnrolledSet {
            do { return .known(try enrolledDomainState()) } catch { return .unknown }
        }

        /// The enrolled set's domain state now, nil when no finger is enrolled; throws when
        /// fprintd cannot say.
        private func enrolledDomainState() throws -> String? {
            do { return try currentDomainState() } catch let refusal as Refusal where refusal.code == .biometryNotEnrolled {
                return nil
            }
        }

        /// The process asking, as RightsRule judges its grants: the peer localauthd named,
        /// its start time as pinned (ProgramBinding), this boot, its connection's time.
        var asker: RightsRule.Asker {
            RightsRule.Asker(pid: caller.callerPID, startTime: binding.startTime, bootID: LinuxSystem().bootID(),
                             acceptedAt: caller.acceptedAt)
        }

        /// A `biometryCurrentSet` right is void once the enrolled set differs from the one
        /// it was saved with (RightsRule.stillValid); checked before any scan.
        private func checkStillValid(_ record: RightRecord) throws {
            guard record.requirement == .biometryCurrentSet else { return }
            guard RightsRule.stillValid(record, enrolledNow: try enrolledDomainState()) else { throw invalidated() }
        }

        func invalidated() -> Refusal {
            Refusal(code: .invalidContext, reason: "right-invalidated",
                    cause: "the enrolled fingerprints changed since the right was saved: it is invalid")
        }

        func currentDomainState() throws -> String {
            do {
                guard let domain = try EnrolledDomain.now(of: request.user.value, options: options, log: log) else {
                    throw Refusal(code: .biometryNotEnrolled, reason: "", cause: "no fingerprints are enrolled")
                }
                return domain
            } catch let e as EvaluationError {
                throw Refusal(code: e.code, reason: e.reason.key, cause: e.cause)
            }
        }

        func policy(_ record: RightRecord) -> AppMode.Policy {
            RightsRule.policy(record.requirement) == .deviceOwnerAuthentication ? .owner : .biometrics
        }

        private func success(_ record: RightRecord?, cause: String, extra: [(String, String)] = []) -> Frame {
            var keys = extra
            if let record {
                keys += [("requirement", record.requirement.rawValue), ("public_key", Crypto.hex(record.publicKey))]
            }
            return HelperResult.frame(code: ResultCode.successValue, name: "success", cause: cause, extra: keys)
        }
    }
}
