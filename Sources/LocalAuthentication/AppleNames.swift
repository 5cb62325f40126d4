// Foundation, as Apple's LocalAuthentication module re-exports it: a program that imports
// only LocalAuthentication uses `NSError`, `Data`, `Date` and `DispatchQueue`, and `catch
// LAError.systemCancel` needs Foundation's error bridging in scope.
@_exported import Foundation

// Names Apple's SDK gives every Swift program that imports LocalAuthentication, from
// Objective-C: `NSErrorPointer` (Foundation's on Apple's platforms) and the `kLAError…`
// macros of LAPublicDefines.h, which Swift imports as `Int32` constants. Code ported from
// iOS uses them as written there: `func canEvaluatePolicy(_:error: NSErrorPointer)` in a
// protocol its tests can fake, `case Int(kLAErrorUserCancel):` in a switch on a code.

/// Apple's `NSErrorPointer` for `canEvaluatePolicy(_:error:)`: a pointer to an optional
/// error, nil when the caller does not want one. Foundation on Linux does not declare it
/// (there is no `AutoreleasingUnsafeMutablePointer` without Objective-C); `&error` with a
/// `var error: NSError?` passes as on Apple's platforms.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?

/// Apple's `kLAErrorDomain`.
public let kLAErrorDomain: String = LAErrorDomain

public let kLAErrorAuthenticationFailed: Int32 = Int32(LAError.Code.authenticationFailed.rawValue)
public let kLAErrorUserCancel: Int32 = Int32(LAError.Code.userCancel.rawValue)
public let kLAErrorUserFallback: Int32 = Int32(LAError.Code.userFallback.rawValue)
public let kLAErrorSystemCancel: Int32 = Int32(LAError.Code.systemCancel.rawValue)
public let kLAErrorPasscodeNotSet: Int32 = Int32(LAError.Code.passcodeNotSet.rawValue)
public let kLAErrorBiometryNotAvailable: Int32 = Int32(LAError.Code.biometryNotAvailable.rawValue)
public let kLAErrorBiometryNotEnrolled: Int32 = Int32(LAError.Code.biometryNotEnrolled.rawValue)
public let kLAErrorBiometryLockout: Int32 = Int32(LAError.Code.biometryLockout.rawValue)
public let kLAErrorAppCancel: Int32 = Int32(LAError.Code.appCancel.rawValue)
public let kLAErrorInvalidContext: Int32 = Int32(LAError.Code.invalidContext.rawValue)
public let kLAErrorCompanionNotAvailable: Int32 = Int32(LAError.Code.companionNotAvailable.rawValue)
public let kLAErrorBiometryNotPaired: Int32 = Int32(LAError.Code.biometryNotPaired.rawValue)
public let kLAErrorBiometryDisconnected: Int32 = Int32(LAError.Code.biometryDisconnected.rawValue)
public let kLAErrorInvalidDimensions: Int32 = Int32(LAError.Code.invalidDimensions.rawValue)
public let kLAErrorNotInteractive: Int32 = Int32(LAError.Code.notInteractive.rawValue)
// The older spellings LAPublicDefines.h still defines (same values).
public let kLAErrorTouchIDNotAvailable: Int32 = kLAErrorBiometryNotAvailable
public let kLAErrorTouchIDNotEnrolled: Int32 = kLAErrorBiometryNotEnrolled
public let kLAErrorTouchIDLockout: Int32 = kLAErrorBiometryLockout
public let kLAErrorWatchNotAvailable: Int32 = kLAErrorCompanionNotAvailable

/// Apple's `kLAPolicy…` macros (`LAPolicy`'s raw values), imported as `Int32` too.
public let kLAPolicyDeviceOwnerAuthenticationWithBiometrics: Int32 = 1
public let kLAPolicyDeviceOwnerAuthentication: Int32 = 2
public let kLAPolicyDeviceOwnerAuthenticationWithCompanion: Int32 = 3
public let kLAPolicyDeviceOwnerAuthenticationWithBiometricsOrCompanion: Int32 = 4
public let kLAPolicyDeviceOwnerAuthenticationWithWristDetection: Int32 = 5
