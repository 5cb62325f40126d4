/// What an evaluation must establish, with Apple's raw values.
public enum LAPolicy: Int, Sendable {
    /// Fingerprint only; offering the password is the caller's own choice
    /// (a `localizedFallbackTitle` of `""` hides it).
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// Fingerprint first, then the account password.
    case deviceOwnerAuthentication = 2
}

/// The kind of sensor present. Apple's names are kept; on Linux a fingerprint reader
/// reports `.touchID`, the fingerprint case.
public enum LABiometryType: Int, Sendable {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4
}
