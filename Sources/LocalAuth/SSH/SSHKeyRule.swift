/// What an SSH key's policy decides, as pure functions of the record, the request's facts
/// and the enrolled set: the one place the agent (signing) and key management (the helper's
/// SSHKeysMode) read them. Tested in Tests/LocalAuthTests/SSHKeyRuleTests.swift.
///
/// * A signature is an evaluation of the key's requirement's policy: the finger only, or
///   the finger or the password for `biometry-or-password`.
/// * An approval is reused only for the same key and the same scope (the agent's words:
///   `host:SHA256:…` for a verified destination, `ns:git` for a namespace, forwarded scopes
///   of their own), in the same boot, within the key's reuse seconds (at most 300; 0 never).
/// * A forwarded request is refused without a scan unless the key allows forwarding.
/// * A `biometry-current-set` key is void once the enrolled set differs from the one it was
///   created with: a match of another set authorizes nothing.
public enum SSHKeyRule {
    /// The evaluation that authorizes a signature, a deletion or a policy change.
    public static func policy(_ requirement: SSHKeyRequirement) -> EvaluationPolicy {
        requirement.allowsPassword ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics
    }

    /// Whether the approval given `last` (for this key and scope, SSHKeyStore.reuse) still
    /// stands `now`: same boot, not in the future, no older than the key's reuse seconds.
    /// No boot id, no reuse.
    public static func reuseApplies(_ record: SSHKeyRecord, last: BootStamp?, now: BootStamp?) -> Bool {
        guard record.reuseSeconds > 0, record.reuseSeconds <= SSHKeyRecord.maxReuseSeconds,
              let last, let now, last.bootID == now.bootID, now.millis >= last.millis else { return false }
        return now.millis - last.millis <= Int64(record.reuseSeconds) * 1000
    }

    /// A forwarded request (a session-bind with is_forwarding on the connection) for a key
    /// that does not allow it: refused before any scan.
    public static func forwardingRefused(_ record: SSHKeyRecord, forwarded: Bool) -> Bool {
        forwarded && !record.forwardingAllowed
    }

    /// After a match: whether it authorizes the key (a `biometry-current-set` key's set must
    /// be the one the match came from).
    public static func matchAuthorizes(_ record: SSHKeyRecord, matchedDomainState: String?) -> Bool {
        record.requirement != .biometryCurrentSet || matchedDomainState == record.domainState
    }

    /// Whether the key can still be used given the enrolled set now (nil: none enrolled);
    /// checked before any scan.
    public static func stillValid(_ record: SSHKeyRecord, enrolledNow: String?) -> Bool {
        record.requirement != .biometryCurrentSet || enrolledNow == record.domainState
    }

    /// Void: a `biometry-current-set` key whose set is known to have changed. It can never
    /// sign again, so deleting it asks for nothing (it would otherwise stay, counted against
    /// the user's limit). When the set cannot be known, no key is void.
    public static func isVoid(_ record: SSHKeyRecord, enrolled: RightsRule.EnrolledSet) -> Bool {
        guard record.requirement == .biometryCurrentSet, case .known(let now) = enrolled else { return false }
        return now != record.domainState
    }

    /// Why a policy change may not be made; nil when it may (after the evaluation of the
    /// key's present requirement). The binding to an enrolled set is fixed when a key is
    /// created, as Apple's access control is: a key does not become one, and one does not
    /// stop being one (a new finger would otherwise revive a void key).
    public static func policyChangeRefusal(_ record: SSHKeyRecord, requirement: SSHKeyRequirement?,
                                           reuseSeconds: Int?) -> String? {
        if let requirement, requirement != record.requirement,
           requirement == .biometryCurrentSet || record.requirement == .biometryCurrentSet {
            return "a key's binding to the enrolled fingers is set when it is created: create a new key"
        }
        if let reuseSeconds, let problem = SSHKeyRecord.reuseProblem(reuseSeconds) { return problem }
        return nil
    }

    // MARK: - Scopes

    /// A verified destination's scope: its host key's fingerprint.
    public static func hostScope(hostKeyFingerprint: String) -> String { "host:" + hostKeyFingerprint }

    /// An SSHSIG namespace's scope (`git` for git's signatures).
    public static func namespaceScope(_ namespace: String) -> String { "ns:" + namespace }

    /// A forwarded request's scope: apart from every local one, per host it came through.
    public static func forwardedScope(_ scope: String, through hostKeyFingerprint: String) -> String {
        "fwd:" + hostKeyFingerprint + ":" + scope
    }
}
