/// Who may use a saved right (`mode=right`, the helper's RightsMode): the checks that decide,
/// as pure functions of the record, its grant, the process asking and the enrolled set. The
/// helper reads them (RightsStore, /proc, fprintd) and performs what they allow; the tests
/// give them every case (`Tests/LocalAuthTests/RightsRuleTests.swift`).
///
/// * A right's secret and signature leave only for the process it was authorized for: the
///   grant's pid and start time, on this boot, on a connection accepted after the grant (a
///   connection opened before the program was exec'd in place, and handed to a child, would
///   carry the program's grant), and the request presents the capability the authorization
///   returned (the right object that was authorized, not any code of the process that asks
///   for the same identifier).
/// * A `biometryCurrentSet` right is void once the enrolled set differs from the one it was
///   saved with (as on Apple's platforms): checked before any scan and again after the
///   match. A void right can never be authorized again and its bytes are out of everyone's
///   reach, so removing or replacing it needs no authorization.
/// * A right whose requirement allows the password is authorized by the device owner's
///   policy; any other by the finger only.
public enum RightsRule {
    /// The process asking, as the helper pinned it.
    public struct Asker: Equatable, Sendable {
        public var pid: Int32
        /// Its start time (/proc/PID/stat).
        public var startTime: UInt64
        /// This boot's id (nil: not read: then no grant is this process's).
        public var bootID: String?
        /// When localauthd accepted its connection (CLOCK_BOOTTIME ns).
        public var acceptedAt: UInt64

        public init(pid: Int32, startTime: UInt64, bootID: String?, acceptedAt: UInt64) {
            self.pid = pid
            self.startTime = startTime
            self.bootID = bootID
            self.acceptedAt = acceptedAt
        }
    }

    /// The enrolled set now, as far as it is known.
    public enum EnrolledSet: Equatable, Sendable {
        /// Its domain state; nil when no finger is enrolled.
        case known(String?)
        /// fprintd could not say.
        case unknown
    }

    /// Why a right may not be used.
    public enum Refusal: Error, Equatable, Sendable {
        /// No right under this identifier for this program.
        case notFound
        /// A `biometryCurrentSet` right whose enrolled set changed.
        case invalidated
        /// No grant, or one for another process (or connection).
        case notAuthorizedForProcess
        /// The grant is this process's, the capability presented is not its.
        case capabilityNotPresented
    }

    /// A grant for this very process (the asker's pid and start time, this boot), on a
    /// connection accepted after it.
    public static func isThisProcess(_ grant: RightGrant, _ asker: Asker) -> Bool {
        grant.pid == asker.pid && grant.startTime == asker.startTime
            && asker.bootID != nil && grant.bootID == asker.bootID && grant.grantedAt < asker.acceptedAt
    }

    /// Whether the right's enrolled set still holds: always for a right that does not bind
    /// one; for `biometryCurrentSet`, the set now (nil: none enrolled) is the saved one.
    public static func stillValid(_ record: RightRecord, enrolledNow: String?) -> Bool {
        record.requirement != .biometryCurrentSet || enrolledNow == record.domainState
    }

    /// Void: a `biometryCurrentSet` right whose set is known to have changed. When the set
    /// cannot be known, no right counts as void.
    public static func isVoid(_ record: RightRecord, enrolled: EnrolledSet) -> Bool {
        guard record.requirement == .biometryCurrentSet, case .known(let now) = enrolled else { return false }
        return now != record.domainState
    }

    /// Whether the asker may read the secret or sign with the right: `record` and `grant` as
    /// read together under the store's lock; `enrolledNow` consulted only for a
    /// `biometryCurrentSet` right (nil: none enrolled); `capability` as the request sent it.
    /// nil when it may.
    public static func useRefusal(_ record: RightRecord?, grant: RightGrant?, asker: Asker, capability: String?,
                                  enrolledNow: String?) -> Refusal? {
        guard let record else { return .notFound }
        guard stillValid(record, enrolledNow: enrolledNow) else { return .invalidated }
        guard let grant, isThisProcess(grant, asker) else { return .notAuthorizedForProcess }
        guard grant.admits(capability: capability) else { return .capabilityNotPresented }
        return nil
    }

    /// Whether one right may go in a `remove_all`: authorized for this process with one of
    /// the capabilities presented, or void.
    public static func mayRemoveInAll(_ record: RightRecord, grant: RightGrant?, asker: Asker,
                                      presented: [String], enrolled: EnrolledSet) -> Bool {
        (grant.map { g in isThisProcess(g, asker) && presented.contains(where: g.admits(capability:)) } ?? false)
            || isVoid(record, enrolled: enrolled)
    }

    /// The evaluation that authorizes the right: `deviceOwnerAuthentication` where its
    /// requirement allows the password, else `deviceOwnerAuthenticationWithBiometrics`.
    public static func policy(_ requirement: RightRequirement) -> EvaluationPolicy {
        requirement.allowsPassword ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics
    }

    /// After a match: whether it authorizes the right (a `biometryCurrentSet` right's set must
    /// be the one the match came from).
    public static func matchAuthorizes(_ record: RightRecord, matchedDomainState: String?) -> Bool {
        record.requirement != .biometryCurrentSet || matchedDomainState == record.domainState
    }
}

// MARK: - The program a right is bound to

extension RightsRule {
    /// A file as stat(2) gives it, as far as the binding asks.
    public struct FileFacts: Equatable, Sendable {
        public var device: UInt64
        public var inode: UInt64
        public var regular: Bool
        /// Owned by root and writable by nobody else (RootOwned.isRootsFile).
        public var rootsFile: Bool

        public init(device: UInt64, inode: UInt64, regular: Bool, rootsFile: Bool) {
            self.device = device
            self.inode = inode
            self.regular = regular
            self.rootsFile = rootsFile
        }
    }

    /// Why the caller's executable, as the kernel names it (/proc/PID/exe; nil when it cannot
    /// be read), can hold no right; nil when it may go on to be checked.
    public static func executableRefusal(_ exe: String?) -> String? {
        guard let exe else { return "its executable cannot be read from /proc" }
        return exe.hasSuffix(" (deleted)") ? "its executable was deleted or replaced" : nil
    }

    /// Why the file `path` names now cannot be the program a right is bound to: it must be
    /// the very file the process runs (`running`; device and inode), a regular file owned by
    /// root and writable by nobody else, or the user could swap what runs under that path.
    /// nil when it can.
    public static func fileRefusal(_ path: String, named: FileFacts, running: FileFacts) -> String? {
        guard named.regular, named.device == running.device, named.inode == running.inode else {
            return "\(LogWords.word(path)) is not the file the program runs"
        }
        guard named.rootsFile else { return "\(LogWords.word(path)) must be owned by root and writable by nobody else" }
        return nil
    }

    /// An interpreter or a loader holds no right unless `rights_interpreters = yes`: its rights
    /// would be every script's it runs. `exe`: the path as named; `isInterpreter`: what
    /// Interpreters says of the file.
    public static func interpreterRefusal(_ exe: String, isInterpreter: Bool, allowed: Bool) -> String? {
        guard isInterpreter, !allowed else { return nil }
        return "\(LogWords.word(exe)) is an interpreter or a loader: its rights would be every script's it runs "
            + "(rights_interpreters = yes allows it)"
    }
}
