import Foundation

/// Apple's `LAPolicy`, every case and raw value of the current SDK. Here the fingerprint
/// reader (fprintd) is the biometry and the account password is the device passcode; there
/// is no companion device, so the companion and wrist policies fail with
/// `companionNotAvailable`, except `deviceOwnerAuthenticationWithBiometricsOrCompanion`,
/// which behaves as `deviceOwnerAuthenticationWithBiometrics` when no companion is near,
/// as Apple documents.
public enum LAPolicy: Int, CaseIterable, Sendable {
    /// A finger. Fallback (`userFallback`) is the application's own business.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// A finger first, then the account password (checked by the system's root side).
    case deviceOwnerAuthentication = 2
    /// A companion device (Apple Watch, Mac): never available here.
    case deviceOwnerAuthenticationWithCompanion = 3
    /// A finger or a companion device: here, a finger.
    case deviceOwnerAuthenticationWithBiometricsOrCompanion = 4
    /// watchOS wrist detection: never available here.
    case deviceOwnerAuthenticationWithWristDetection = 5

    @available(*, deprecated, renamed: "deviceOwnerAuthenticationWithCompanion")
    public static var deviceOwnerAuthenticationWithWatch: LAPolicy { .deviceOwnerAuthenticationWithCompanion }
    @available(*, deprecated, renamed: "deviceOwnerAuthenticationWithBiometricsOrCompanion")
    public static var deviceOwnerAuthenticationWithBiometricsOrWatch: LAPolicy {
        .deviceOwnerAuthenticationWithBiometricsOrCompanion
    }
}

/// Apple's `LABiometryType`. A fingerprint reader reports `.touchID`, Apple's fingerprint case.
public enum LABiometryType: Int, CaseIterable, Sendable {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4

    @available(*, deprecated, renamed: "none")
    public static var typeNone: LABiometryType { .none }
}

/// Apple's `LACompanionType`. No companion is ever available here.
public enum LACompanionType: Int, CaseIterable, Sendable {
    case watch = 1
    case mac = 2
    case vision = 4
}

/// Apple's `LACredentialType` (for `setCredential(_:type:)`).
public enum LACredentialType: Int, Sendable {
    case applicationPassword = 0
    case smartCardPIN = -3
}

/// The longest `touchIDAuthenticationAllowableReuseDuration` (Apple's value, seconds).
public let LATouchIDAuthenticationMaximumAllowableReuseDuration: TimeInterval = 300
