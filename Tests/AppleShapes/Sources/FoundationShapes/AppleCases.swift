import LocalAuthentication

/// What the application tells the user for a code.
public protocol Advising {
    func advice(for code: LAError.Code) -> String
}

/// A switch over Apple's `LAError.Code` as it is written against Apple's SDK: its cases (the
/// deprecated `touchID…` and `watchNotAvailable` among them), no `default`. It compiles
/// only if these are the cases here too. Deprecated, as the cases it names are; called
/// through `Advising`.
public struct AppleSwitch: Advising {
    public init() {}

    @available(*, deprecated, message: "names the deprecated cases of LAError.Code")
    public func advice(for code: LAError.Code) -> String {
    switch code {
    case .authenticationFailed: return "try again"
    case .userCancel, .appCancel, .systemCancel: return "cancelled"
    case .userFallback: return "use the password"
    case .passcodeNotSet: return "set a password"
    case .touchIDNotAvailable: return "no reader"
    case .touchIDNotEnrolled: return "enroll a finger"
    case .touchIDLockout: return "locked out: use the password"
    case .invalidContext: return "start again"
    case .notInteractive: return "not here"
    case .watchNotAvailable: return "no companion"
    case .biometryNotPaired, .biometryDisconnected: return "connect the reader"
    case .invalidDimensions: return "never"
    }
    }
}

/// The current names are the same codes.
public let currentNamesAreAliases: Bool =
    LAError.Code.biometryNotAvailable.rawValue == -6 && LAError.Code.biometryNotEnrolled.rawValue == -7
    && LAError.Code.biometryLockout.rawValue == -8 && LAError.Code.companionNotAvailable.rawValue == -11
