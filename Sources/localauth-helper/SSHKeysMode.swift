#if canImport(Glibc)
import Glibc
#endif
import FprintdClient
import LocalAuth
import LocalAuthProtocol

/// `mode=ssh`: the user's SSH keys on root's side (`localauthctl ssh`), through localauthd
/// only, for a peer that is not root: each uid reaches its own keys only (SSHKeyStore under
/// the peer's uid, never a uid the request names). Creating, listing and reading the last
/// uses ask for nothing: nothing secret leaves. Deleting a key and changing its policy are
/// evaluations first (AppMode.authenticate: presence, lockout, tries, the enrolled-set rule;
/// the password only where the key's requirement allows it), prompting on localauthctl's
/// terminal through the frame channel.
enum SSHKeysMode {
    /// A refusal as a result frame: Apple's code, a reason word, a cause for the log.
    struct Refusal: Error {
        let code: EvaluationError.Code
        let reason: String
        let cause: String

        static func notFound(_ name: String) -> Refusal {
            Refusal(code: .invalidContext, reason: "not-found", cause: "no ssh key is named \(name)")
        }

        static func invalid(_ cause: String) -> Refusal {
            Refusal(code: .invalidContext, reason: "invalid", cause: cause)
        }

        static func unavailable(_ cause: String) -> Refusal {
            Refusal(code: .biometryNotAvailable, reason: "store-unavailable", cause: cause)
        }

        var frame: Frame { HelperResult.frame(code: code.rawValue, name: code.name, cause: cause, reason: reason) }
    }

    /// Room for the answer's keys in one frame (Frame.maxLength), with a margin for
    /// `code`, `name` and `cause`.
    static let answerBudget = Frame.maxLength - 600

    static func run(_ request: HelperRequest, launch: Launch, options: Options, channel: FrameChannel,
                    log: LogSink) -> Frame {
        var op = "?"
        var name = "-"
        let frame: Frame
        do {
            guard case .unprivileged(let caller) = launch else {
                throw Refusal.unavailable("ssh keys are kept for ordinary users (through localauthd)")
            }
            guard case .ssh(_, let ssh) = request.wire else { throw Refusal.invalid("mode=ssh needs a known op") }
            op = ssh.op
            name = ssh.name.map(LogWords.word) ?? "-"
            let context = Context(request: request, caller: caller, options: options, channel: channel, log: log)
            frame = try context.perform(ssh)
        } catch let refusal as Refusal {
            frame = refusal.frame
        } catch let answered as Answered {
            frame = answered.frame
        } catch let failure as SSHKeyStore.Failure {
            frame = storeRefusal(failure).frame
        } catch {
            frame = Refusal.unavailable("\(error)").frame
        }
        log.log(.info, "user \(LogWords.word(request.user.value)) (pid \(request.callerPID.map(String.init) ?? "?"))"
            + " ssh \(op) \(name): \(AppMode.summary(frame))")
        return frame
    }

    static func storeRefusal(_ failure: SSHKeyStore.Failure) -> Refusal {
        switch failure {
        case .badName(let why): return .invalid(why)
        case .exists: return Refusal(code: .invalidContext, reason: "exists", cause: failure.description)
        case .full: return Refusal(code: .invalidContext, reason: "full", cause: failure.description)
        case .damaged: return Refusal(code: .invalidContext, reason: "damaged", cause: failure.description)
        case .unsafe, .io: return .unavailable(failure.description)
        }
    }

    /// One request's facts and the operations on them.
    struct Context {
        let request: HelperRequest
        let caller: UnprivilegedCaller
        let options: Options
        let channel: FrameChannel
        let log: LogSink

        var store: SSHKeyStore { SSHKeyStore(stateDirectory: options.stateDir, uid: caller.uid) }

        func perform(_ ssh: Request.SSH) throws -> Frame {
            switch ssh {
            case .create(let name, let requirement, let reuse, let forwarding, let comment):
                return try create(name: name, requirement: requirement, reuse: reuse, forwarding: forwarding,
                                  comment: comment)
            case .list(let after): return try list(after: after)
            case .uses(let skip): return try uses(skip: skip)
            case .delete(let name): return try delete(name: name)
            case .policy(let name, let requirement, let reuse, let forwarding):
                return try policy(name: name, requirement: requirement, reuse: reuse, forwarding: forwarding)
            }
        }

        // MARK: - Operations

        private func create(name: String, requirement text: String, reuse: Int, forwarding: Bool,
                            comment: String) throws -> Frame {
            if let problem = SSHKeyRecord.nameProblem(name) { throw Refusal.invalid(problem) }
            guard let requirement = SSHKeyRequirement(rawValue: text) else {
                throw Refusal.invalid("unknown requirement (biometry, biometry-or-password, biometry-current-set)")
            }
            if let problem = SSHKeyRecord.reuseProblem(reuse) { throw Refusal.invalid(problem) }
            if let problem = SSHKeyRecord.commentProblem(comment) { throw Refusal.invalid(problem) }
            // A damaged record under the name is no key: create moves it aside.
            if (try? store.load(name: name)) ?? nil != nil {
                throw Refusal(code: .invalidContext, reason: "exists", cause: "a key named \(name) exists already")
            }
            // As a right saved with biometryCurrentSet: bound to the set enrolled now.
            let domain = requirement == .biometryCurrentSet ? try currentDomainState() : nil
            var pair = try P256.generate()
            defer { Crypto.wipe(&pair.privateKey) }
            var record = SSHKeyRecord(name: name, uid: caller.uid, requirement: requirement, reuseSeconds: reuse,
                                      forwardingAllowed: forwarding, comment: comment, domainState: domain,
                                      created: Timestamp(time(nil)), privateKey: pair.privateKey,
                                      publicKey: pair.publicKey)
            defer { Crypto.wipe(&record.privateKey) }
            try store.create(record)
            note(name, what: "create the key", outcome: "created")
            return success("created", keys: [("key", SSHKeyListing(record).line)])
        }

        /// The keys after `after` (by name) that fit one frame; `more=1` when others follow.
        /// Damaged records are named on the first page.
        private func list(after: String?) throws -> Frame {
            var keys: [(String, String)] = []
            if after == nil { keys += try store.damagedNames().map { ("damaged", $0) } }
            let records = try store.list().filter { after == nil || $0.name > after! }
            var size = keys.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 }
            for record in records {
                let line = SSHKeyListing(record).line
                size += line.utf8.count + 5
                if size > SSHKeysMode.answerBudget {
                    keys.append(("more", "1"))
                    break
                }
                keys.append(("key", line))
            }
            return success("listed", keys: keys)
        }

        /// The uses older than the `skip` newest, newest first, that fit one frame.
        private func uses(skip: Int) throws -> Frame {
            let all = try store.lastUses()
            var keys: [(String, String)] = []
            var size = 0
            for use in all.reversed().dropFirst(skip) {
                size += use.line.utf8.count + 5
                if size > SSHKeysMode.answerBudget {
                    keys.append(("more", "1"))
                    break
                }
                keys.append(("use", use.line))
            }
            return success("listed", keys: keys)
        }

        private func delete(name: String) throws -> Frame {
            if let problem = SSHKeyRecord.nameProblem(name) { throw Refusal.invalid(problem) }
            let record = try loadOrDamaged(name)
            let damaged = try record == nil && store.damagedNames().contains(name)
            if let record {
                // A void key (its fingers changed) can never sign again: removing it takes
                // nothing from anyone (SSHKeyRule.isVoid). fprintd is asked only for a key
                // bound to the enrolled set.
                let void = record.requirement == .biometryCurrentSet
                    && SSHKeyRule.isVoid(record, enrolled: knownEnrolledSet())
                if !void { try authorize(record, what: "delete the key") }
            } else if damaged {
                // A damaged record's requirement cannot be read: the finger, as the default.
                try authorize(nil, name: name, what: "delete the damaged key")
            } else {
                throw Refusal.notFound(name)
            }
            guard try store.remove(name: name) else { throw Refusal.notFound(name) }
            note(name, what: record == nil ? "delete the damaged key" : "delete the key", outcome: "deleted")
            return success("deleted", keys: [])
        }

        /// The key named; nil when there is none or its record is damaged (`damagedNames`
        /// says which).
        private func loadOrDamaged(_ name: String) throws -> SSHKeyRecord? {
            do { return try store.load(name: name) } catch {
                if case .damaged = error { return nil }
                throw error
            }
        }

        private func policy(name: String, requirement text: String?, reuse: Int?, forwarding: Bool?) throws -> Frame {
            if let problem = SSHKeyRecord.nameProblem(name) { throw Refusal.invalid(problem) }
            var requirement: SSHKeyRequirement?
            if let text {
                guard let r = SSHKeyRequirement(rawValue: text) else {
                    throw Refusal.invalid("unknown requirement (biometry, biometry-or-password, biometry-current-set)")
                }
                requirement = r
            }
            guard let record = try store.load(name: name) else { throw Refusal.notFound(name) }
            if let why = SSHKeyRule.policyChangeRefusal(record, requirement: requirement, reuseSeconds: reuse) {
                throw Refusal.invalid(why)
            }
            if record.requirement == .biometryCurrentSet, !SSHKeyRule.stillValid(record, enrolledNow: try enrolledDomainState()) {
                throw invalidated()
            }
            try authorize(record, what: "change the key's policy")
            guard let changed = try store.setPolicy(name: name, requirement: requirement, reuseSeconds: reuse,
                                                    forwardingAllowed: forwarding) else {
                throw Refusal.notFound(name)
            }
            note(name, what: "change the key's policy", outcome: "policy-changed")
            return success("policy changed", keys: [("key", SSHKeyListing(changed).line)])
        }

        // MARK: - Evaluation

        /// The evaluation of the key's requirement (nil: a damaged record, the finger), on
        /// localauthctl's terminal; throws the refusal's frame as it is.
        private func authorize(_ record: SSHKeyRecord?, name: String? = nil, what: String) throws {
            let requirement = record?.requirement ?? .biometry
            let policy: AppMode.Policy = SSHKeyRule.policy(requirement) == .deviceOwnerAuthentication ? .owner : .biometrics
            switch AppMode.authenticate(request, policy: policy, unprivileged: true, options: options,
                                        channel: channel, log: log) {
            case .refused(let frame):
                note(record?.name ?? name ?? "-", what: what, outcome: "refused")
                throw Answered(frame: frame)
            case .matched(_, let domainState):
                if let record, !SSHKeyRule.matchAuthorizes(record, matchedDomainState: domainState) {
                    note(record.name, what: what, outcome: "refused")
                    throw invalidated()
                }
            }
        }

        // MARK: - The enrolled set

        private func knownEnrolledSet() -> RightsRule.EnrolledSet {
            do { return .known(try enrolledDomainState()) } catch { return .unknown }
        }

        private func enrolledDomainState() throws -> String? {
            do { return try currentDomainState() } catch let refusal as Refusal where refusal.code == .biometryNotEnrolled {
                return nil
            }
        }

        private func currentDomainState() throws -> String {
            do {
                guard let domain = try EnrolledDomain.now(of: request.user.value, options: options, log: log) else {
                    throw Refusal(code: .biometryNotEnrolled, reason: "", cause: "no fingerprints are enrolled")
                }
                return domain
            } catch let e as EvaluationError {
                throw Refusal(code: e.code, reason: e.reason.key, cause: e.cause)
            }
        }

        private func invalidated() -> Refusal {
            Refusal(code: .invalidContext, reason: "key-invalidated",
                    cause: "the enrolled fingerprints changed since the key was created: it can no longer be used")
        }

        // MARK: - Answers

        /// One record in the last uses (what `localauthctl ssh log` shows); a failure to
        /// write it is logged, never the operation's failure.
        private func note(_ name: String, what: String, outcome: String) {
            let use = SSHKeyUse(at: Timestamp(time(nil)), key: name, what: what, outcome: outcome,
                                chain: program)
            do { try store.appendUse(use) } catch { log.log(.notice, "ssh key use not recorded: \(error)") }
        }

        /// The asking program's executable name, as the kernel names it (not its word).
        private var program: String {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink("/proc/\(caller.callerPID)/exe", &buffer, buffer.count - 1)
            guard n > 0 else { return "?" }
            let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return String(path.split(separator: "/").last ?? "?")
        }

        private func success(_ cause: String, keys: [(String, String)]) -> Frame {
            HelperResult.frame(code: ResultCode.successValue, name: "success", cause: cause, extra: keys)
        }
    }

    /// An evaluation's own result frame, passed on as it is.
    struct Answered: Error {
        let frame: Frame
    }
}
