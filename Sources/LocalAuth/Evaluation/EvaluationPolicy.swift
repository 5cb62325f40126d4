/// What an evaluation must establish: Apple's two policies that the root side evaluates,
/// with Apple's raw values (`LAPolicy` of the LocalAuthentication library has every one).
public enum EvaluationPolicy: Int, Sendable {
    /// Fingerprint only; offering the password is the caller's own choice
    /// (a `localizedFallbackTitle` of `""` hides it).
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// Fingerprint first, then the account password.
    case deviceOwnerAuthentication = 2
}

/// The kind of sensor present, Apple's `LABiometryType` cases and raw values (the result
/// frame's `biometry` key); on Linux a fingerprint reader reports `.touchID`, the
/// fingerprint case.
public enum BiometryType: Int, Sendable {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4
}
