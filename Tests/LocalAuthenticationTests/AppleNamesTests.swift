import Foundation
import Testing
import LocalAuthentication

/// The names Apple's SDK brings from Objective-C: `NSErrorPointer` and the `kLAError…`
/// constants, with Apple's raw values.
@Suite struct AppleNamesTests {
    @Test func theObjectiveCCodesAreApplesRawValues() {
        let pairs: [(Int32, LAError.Code)] = [
            (kLAErrorAuthenticationFailed, .authenticationFailed), (kLAErrorUserCancel, .userCancel),
            (kLAErrorUserFallback, .userFallback), (kLAErrorSystemCancel, .systemCancel),
            (kLAErrorPasscodeNotSet, .passcodeNotSet), (kLAErrorBiometryNotAvailable, .biometryNotAvailable),
            (kLAErrorBiometryNotEnrolled, .biometryNotEnrolled), (kLAErrorBiometryLockout, .biometryLockout),
            (kLAErrorAppCancel, .appCancel), (kLAErrorInvalidContext, .invalidContext),
            (kLAErrorCompanionNotAvailable, .companionNotAvailable), (kLAErrorBiometryNotPaired, .biometryNotPaired),
            (kLAErrorBiometryDisconnected, .biometryDisconnected), (kLAErrorInvalidDimensions, .invalidDimensions),
            (kLAErrorNotInteractive, .notInteractive),
        ]
        for (constant, code) in pairs { #expect(Int(constant) == code.rawValue, "\(code)") }
        // Apple's numbers, written out: a table that drifted from both would pass above.
        #expect([kLAErrorUserCancel, kLAErrorBiometryLockout, kLAErrorNotInteractive, kLAErrorTouchIDLockout]
                == [-2, -8, -1004, -8])
        #expect(kLAErrorDomain == "com.apple.LocalAuthentication")
        #expect(kLAPolicyDeviceOwnerAuthenticationWithBiometrics == Int32(LAPolicy.deviceOwnerAuthenticationWithBiometrics.rawValue))
    }

    @Test func canEvaluatePolicyTakesAnNSErrorPointer() {
        let seam: Preflighting = LAContext()
        var error: NSError?
        #expect(!seam.canEvaluatePolicy(.deviceOwnerAuthenticationWithCompanion, error: &error))
        #expect(error?.code == Int(kLAErrorCompanionNotAvailable))
        #expect(!seam.canEvaluatePolicy(.deviceOwnerAuthenticationWithCompanion, error: nil))
    }
}

/// A test seam that copies Apple's declaration; the context satisfies it as it is.
protocol Preflighting { func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool }
extension LAContext: Preflighting {}
