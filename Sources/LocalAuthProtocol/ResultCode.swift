/// The codes a result frame's `code` key carries for a failure: Apple's LocalAuthentication
/// raw values, so that a number means the same thing on every platform (docs/ARCHITECTURE.md §6).
/// The one table of them: the root side's `EvaluationError` (LocalAuth) and Apple's
/// `LAError.Code` for applications (LocalAuthentication) are both this type.
///
/// Every code of Apple's current SDK is here. The root side never gives the three that
/// need something this system does not have (a companion device, a paired accessory, a
/// view of Apple's own): those exist so that an application's code using them compiles.
public enum ResultCode: Int, CaseIterable, Sendable {
    /// The tries of one prompt were used up without a match.
    case authenticationFailed = -1
    /// The user cancelled the whole authentication.
    case userCancel = -2
    /// The user chose the password instead.
    case userFallback = -3
    /// The system interrupted: a signal, the reader taken by another session, the bus gone.
    case systemCancel = -4
    /// The user has no usable password, so biometrics may not be used.
    case passcodeNotSet = -5
    /// No reader, fprintd absent or not answering, or disabled by configuration.
    case biometryNotAvailable = -6
    /// The user has no enrolled fingerprints.
    case biometryNotEnrolled = -7
    /// Too many consecutive failures (or another rule): the password must come first.
    case biometryLockout = -8
    /// The calling application ended the authentication.
    case appCancel = -9
    /// The context was invalidated before use.
    case invalidContext = -10
    /// Apple's: no companion device (watch, Mac) is near. Never from the root side.
    case companionNotAvailable = -11
    /// Apple's: no biometric accessory is paired. Never from the root side.
    case biometryNotPaired = -12
    /// The reader went away during the scan.
    case biometryDisconnected = -13
    /// Apple's: a view of the wrong size. Never from the root side.
    case invalidDimensions = -14
    /// Nobody can scan: remote session, no terminal, or silent where a prompt is needed.
    case notInteractive = -1004

    /// Apple's case name: the `name` key of a result frame and `result=` in the log lines.
    public var name: String {
        switch self {
        case .authenticationFailed: return "authenticationFailed"
        case .userCancel: return "userCancel"
        case .userFallback: return "userFallback"
        case .systemCancel: return "systemCancel"
        case .passcodeNotSet: return "passcodeNotSet"
        case .biometryNotAvailable: return "biometryNotAvailable"
        case .biometryNotEnrolled: return "biometryNotEnrolled"
        case .biometryLockout: return "biometryLockout"
        case .appCancel: return "appCancel"
        case .invalidContext: return "invalidContext"
        case .companionNotAvailable: return "companionNotAvailable"
        case .biometryNotPaired: return "biometryNotPaired"
        case .biometryDisconnected: return "biometryDisconnected"
        case .invalidDimensions: return "invalidDimensions"
        case .notInteractive: return "notInteractive"
        }
    }

    /// `code` of a result frame for a success (the finger matched, or the password).
    public static let successValue = 0
    /// `code` of a result frame for "fingerprint login is off for this user", which only
    /// the PAM module receives (it answers PAM_AUTHINFO_UNAVAIL).
    public static let notOptedInValue = 1

    /// Apple's codes the root side never gives (they need what this system does not have);
    /// the module's table leaves them out.
    public static let neverFromRootSide: Set<ResultCode> = [.companionNotAvailable, .biometryNotPaired,
                                                            .invalidDimensions]

    /// Every code a result frame may carry, with its name, in the module's order: success,
    /// not opted in, then Apple's that the root side gives. The module's table
    /// (`Sources/pam_localauth/result_map.c`) must be exactly this one (ResultTableTests).
    public static var wireTable: [(code: Int, name: String)] {
        [(successValue, "success"), (notOptedInValue, "notOptedIn")]
            + allCases.filter { !neverFromRootSide.contains($0) }.map { ($0.rawValue, $0.name) }
    }
}
