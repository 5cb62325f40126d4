import Foundation
import LocalAuthProtocol

/// The error domain of every `LAError`, Apple's string, so that code comparing domains
/// works unchanged.
public let LAErrorDomain = "com.apple.LocalAuthentication"

/// Apple's `LAError`: a struct that wraps an `NSError` in `LAErrorDomain`, with `Code`
/// holding Apple's raw values. As on Apple's platforms:
///
///     catch LAError.userCancel { … }                       // pattern matching an Error
///     switch (error as NSError).code { case LAError.userCancel.rawValue: … }
///     if let e = error as? LAError, e.code == .biometryLockout { … }
///     var error: NSError?                                  // the preflight's NSError
///     if !context.canEvaluatePolicy(policy, error: &error), let e = error as? LAError { … }
///
/// `localizedDescription` is Apple's English text for the code; `NSDebugDescription` in
/// `userInfo` says what happened here (the line the helper logged).
public struct LAError: _BridgedStoredNSError, Hashable, Sendable {
    public let _nsError: NSError

    public init(_nsError error: NSError) {
        // Apple's overlay traps here too: an LAError is always in LAErrorDomain.
        precondition(error.domain == LAErrorDomain, "LAError from an NSError of domain \(error.domain)")
        _nsError = error
    }

    /// An error with this code; `localizedDescription` is Apple's English text unless
    /// `userInfo` sets `NSLocalizedDescriptionKey`.
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        var info = userInfo
        if info[NSLocalizedDescriptionKey] == nil { info[NSLocalizedDescriptionKey] = code.appleDescription }
        self.init(_nsError: NSError(domain: LAErrorDomain, code: code.rawValue, userInfo: info))
    }

    public static var errorDomain: String { LAErrorDomain }
    public static var _nsErrorDomain: String { LAErrorDomain }

    /// Apple's `LAError.Code`, as Swift imports Apple's `LAError` enum: where two names share
    /// a raw value, the one Apple's header lists first is the case and the later one a
    /// static alias. So `touchIDNotAvailable`, `touchIDNotEnrolled`, `touchIDLockout` and
    /// `watchNotAvailable` are the cases (deprecated, as there), `biometryNotAvailable`,
    /// `biometryNotEnrolled`, `biometryLockout` and `companionNotAvailable` the aliases, and
    /// a `switch` that is exhaustive against Apple's SDK is exhaustive here. The raw values
    /// are those of `ResultCode` (LocalAuthProtocol), the table the root side's result frame
    /// carries; `init(_:)` maps one to the other.
    public enum Code: Int, Sendable {
        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        @available(*, deprecated, renamed: "biometryNotAvailable")
        case touchIDNotAvailable = -6
        @available(*, deprecated, renamed: "biometryNotEnrolled")
        case touchIDNotEnrolled = -7
        @available(*, deprecated, renamed: "biometryLockout")
        case touchIDLockout = -8
        case appCancel = -9
        case invalidContext = -10
        case notInteractive = -1004
        @available(*, deprecated, renamed: "companionNotAvailable")
        case watchNotAvailable = -11
        case biometryNotPaired = -12
        case biometryDisconnected = -13
        case invalidDimensions = -14

        public static var biometryNotAvailable: Code { Code(ResultCode.biometryNotAvailable) }
        public static var biometryNotEnrolled: Code { Code(ResultCode.biometryNotEnrolled) }
        public static var biometryLockout: Code { Code(ResultCode.biometryLockout) }
        public static var companionNotAvailable: Code { Code(ResultCode.companionNotAvailable) }

        /// The code of a result frame's code (the same raw value; both tables list every
        /// code of Apple's, ErrorBridgingTests checks it).
        init(_ result: ResultCode) {
            self = Code(rawValue: result.rawValue)!
        }

        /// The code as the root side names it (Apple's current name: `biometryLockout`,
        /// not `touchIDLockout`).
        var name: String { ResultCode(rawValue: rawValue)!.name }
    }

    // Apple's static members, so that `LAError.userCancel` is a `Code` (for `catch`,
    // `case` and `.rawValue`).
    public static var authenticationFailed: Code { .authenticationFailed }
    public static var userCancel: Code { .userCancel }
    public static var userFallback: Code { .userFallback }
    public static var systemCancel: Code { .systemCancel }
    public static var passcodeNotSet: Code { .passcodeNotSet }
    public static var biometryNotAvailable: Code { .biometryNotAvailable }
    public static var biometryNotEnrolled: Code { .biometryNotEnrolled }
    public static var biometryLockout: Code { .biometryLockout }
    public static var appCancel: Code { .appCancel }
    public static var invalidContext: Code { .invalidContext }
    public static var companionNotAvailable: Code { .companionNotAvailable }
    public static var biometryNotPaired: Code { .biometryNotPaired }
    public static var biometryDisconnected: Code { .biometryDisconnected }
    public static var invalidDimensions: Code { .invalidDimensions }
    public static var notInteractive: Code { .notInteractive }
    @available(*, deprecated, renamed: "biometryNotAvailable")
    public static var touchIDNotAvailable: Code { .biometryNotAvailable }
    @available(*, deprecated, renamed: "biometryNotEnrolled")
    public static var touchIDNotEnrolled: Code { .biometryNotEnrolled }
    @available(*, deprecated, renamed: "biometryLockout")
    public static var touchIDLockout: Code { .biometryLockout }
    @available(*, deprecated, renamed: "companionNotAvailable")
    public static var watchNotAvailable: Code { .companionNotAvailable }
}

/// What makes the code an error code of `LAError`: `catch LAError.userCancel` matches an
/// `LAError` of that code (the standard library's `~=` for such codes), and an `NSError` of
/// `LAErrorDomain` too, by the bridging below.
extension LAError.Code: _ErrorCodeProtocol {
    public typealias _ErrorType = LAError
}

/// The bridge Apple's overlay gets from the Objective-C runtime, which Linux has not: with
/// it, the Swift runtime casts an `NSError` of `LAErrorDomain` to `LAError`, so that
///
///     var error: NSError?
///     if !context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error),
///        let e = error as? LAError { … }
///
/// works as on Apple's platforms, and `catch LAError.userCancel` matches such an `NSError`
/// thrown or passed on by the program. An `NSError` of another domain does not cast.
extension LAError: _ObjectiveCBridgeable {
    public func _bridgeToObjectiveC() -> NSError { _nsError }

    public static func _forceBridgeFromObjectiveC(_ source: NSError, result: inout LAError?) {
        result = LAError(_nsError: source)
    }

    public static func _conditionallyBridgeFromObjectiveC(_ source: NSError, result: inout LAError?) -> Bool {
        guard source.domain == LAErrorDomain, Code(rawValue: source.code) != nil else {
            result = nil
            return false
        }
        result = LAError(_nsError: source)
        return true
    }

    /// The runtime gives no nil here (there are no Objective-C nil returns on Linux); were
    /// one to come, an error that says so rather than a trap.
    public static func _unconditionallyBridgeFromObjectiveC(_ source: NSError?) -> LAError {
        source.map { LAError(_nsError: $0) }
            ?? .make(.invalidContext, debug: "an LAError was made from no NSError")
    }
}

extension LAError.Code {
    /// The English text Apple's framework gives for the code (as its errors print it:
    /// `Error Domain=com.apple.LocalAuthentication Code=-2 "Canceled by user."`). Apple words
    /// some codes differently by cause and OS version; apps should switch on the code.
    public var appleDescription: String {
        switch ResultCode(rawValue: rawValue)! {
        case .authenticationFailed: return "Application retry limit exceeded."
        case .userCancel: return "Canceled by user."
        case .userFallback: return "Fallback authentication mechanism selected."
        case .systemCancel: return "UI canceled by system."
        case .passcodeNotSet: return "Passcode not set."
        case .biometryNotAvailable: return "Biometry is not available on this device."
        case .biometryNotEnrolled: return "No identities are enrolled."
        case .biometryLockout: return "Biometry is locked out."
        case .appCancel: return "Invalidated by client."
        case .invalidContext: return "Invalid context."
        case .companionNotAvailable: return "No companion device available."
        case .biometryNotPaired: return "No biometric accessory is paired."
        case .biometryDisconnected: return "The biometric accessory is not connected."
        case .invalidDimensions: return "Invalid dimensions."
        case .notInteractive: return "User interaction is required."
        }
    }
}

/// Apple's `NSDebugDescriptionKey` (not exported by Foundation on Linux).
let debugDescriptionKey = "NSDebugDescription"

extension LAError {
    /// An error as this library reports it: Apple's description, and what happened here
    /// under `NSDebugDescription`.
    static func make(_ code: Code, debug: String) -> LAError {
        var info: [String: Any] = [:]
        if !debug.isEmpty { info[debugDescriptionKey] = debug }
        return LAError(code, userInfo: info)
    }
}
