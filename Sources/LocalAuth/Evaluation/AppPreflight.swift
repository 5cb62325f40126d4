import LocalAuthProtocol

/// An application's `canEvaluatePolicy` on the root side: the rules and the enrolled set,
/// never a scan. One code path for the helper (whose sensor asks fprintd) and for
/// localauthd's own answer (whose sensor is the helper's last reading: RecordedEnrollment),
/// so both answer alike (docs/PROTOCOL.md, "Applications").
///
/// The result's keys: `code`, `name`, `reason` (on a failure that names its rule), `cause`,
/// then `domain_state` (the enrolled set's hash, after a success) and `biometry` (`touchID`
/// when a reader answers for the user, whatever the outcome, as Apple sets `biometryType`
/// from the hardware).
public enum AppPreflight {
    public struct Answer {
        public var keys: KeyValues
        /// What the sensor said of the user's enrolled set: the set, nil for none enrolled;
        /// nil when it could not say (a reader or fprintd not there).
        public var enrolled: EnrolledSet??
    }

    public static func run(_ env: EvaluationEnvironment, policy: EvaluationPolicy) -> Answer {
        let enrolled = readEnrolledSet(env)
        let biometry = enrolled == nil ? "none" : "touchID"
        let evaluation = PolicyEvaluation(environment: env)
        var answer: LocalAuthProtocol.Answer
        switch evaluation.preflight(policy) {
        case .success:
            answer = .success(cause: "preflight")
            if let state = evaluation.evaluatedPolicyDomainState {
                answer.extra.add("domain_state", String(decoding: state, as: UTF8.self))
            }
        case .failure(let e):
            answer = LocalAuthProtocol.Answer(code: e.code.rawValue, name: e.code.name, reason: e.reason.key, cause: e.cause)
        }
        answer.extra.add("biometry", biometry)
        return Answer(keys: answer.keyValues, enrolled: enrolled)
    }

    private static func readEnrolledSet(_ env: EvaluationEnvironment) -> EnrolledSet?? {
        do {
            return .some(try env.sensor.enrolledSet(for: env.user.value))
        } catch {
            return error.code == .biometryNotEnrolled ? .some(nil) : nil
        }
    }
}
