import LocalAuth
import LocalAuthProtocol

/// The result frame: the code (`ResultCode`: Apple's raw value of the failure, or success,
/// or "not opted in", which the module answers with PAM_AUTHINFO_UNAVAIL), its name, and
/// one line for the log.
enum HelperResult {
    static func frame(_ outcome: EvaluationMachine.Outcome) -> Frame {
        switch outcome {
        case .success(let method):
            return frame(code: ResultCode.successValue, name: "success", cause: "matched (\(method.rawValue))")
        case .notOptedIn:
            return frame(code: ResultCode.notOptedInValue, name: "notOptedIn", cause: "fingerprint login is off for this user",
                         reason: "not-opted-in")
        case .failure(let e):
            return frame(code: e.code.rawValue, name: e.code.name, cause: e.cause, reason: e.reason.key)
        }
    }

    /// `reason` names the rule that applied (EvaluationError.Reason.key): biometryLockout is Apple's
    /// one code for the lockout and every "password first" rule, the log says which.
    /// `extra`: keys after those the module reads (an application's domain state).
    static func frame(code: Int, name: String, cause: String, reason: String = "",
                      extra: [(String, String)] = []) -> Frame {
        Answer(code: code, name: name, reason: reason, cause: cause, extra: KeyValues(extra)).frame
    }
}
