import Foundation

/// The error domain of every `LAError`, Apple's string, so that code comparing domains
/// works unchanged.
public let LAErrorDomain = "com.apple.LocalAuthentication"

/// Apple's `LAError`: a struct that wraps an `NSError` in `LAErrorDomain`, with `Code`
/// holding Apple's raw values. As on Apple's platforms:
///
///     catch LAError.userCancel { … }                       // pattern matching an Error
///     switch (error as NSError).code { case LAError.userCancel.rawValue: … }
///     if let e = error as? LAError, e.code == .biometryLockout { … }
///
/// `localizedDescription` is Apple's English text for the code; `NSDebugDescription` in
/// `userInfo` says what happened here (the line the helper logged).
public struct LAError: _BridgedStoredNSError, Hashable, @unchecked Sendable {
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

    /// Apple's `LAError.Code`, every code of the current SDK with its raw value. The
    /// deprecated spellings (`touchIDLockout`, `watchNotAvailable`, …) are aliases, as in
    /// Apple's overlay.
    public enum Code: Int, _ErrorCodeProtocol, CaseIterable, @unchecked Sendable {
        public typealias _ErrorType = LAError

        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        case biometryNotAvailable = -6
        case biometryNotEnrolled = -7
        case biometryLockout = -8
        case appCancel = -9
        case invalidContext = -10
        case companionNotAvailable = -11
        case biometryNotPaired = -12
        case biometryDisconnected = -13
        case invalidDimensions = -14
        case notInteractive = -1004

        @available(*, deprecated, renamed: "biometryNotAvailable")
        public static var touchIDNotAvailable: Code { .biometryNotAvailable }
        @available(*, deprecated, renamed: "biometryNotEnrolled")
        public static var touchIDNotEnrolled: Code { .biometryNotEnrolled }
        @available(*, deprecated, renamed: "biometryLockout")
        public static var touchIDLockout: Code { .biometryLockout }
        @available(*, deprecated, renamed: "companionNotAvailable")
        public static var watchNotAvailable: Code { .companionNotAvailable }
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

extension LAError.Code {
    /// The English text Apple's framework gives for the code (as its errors print it:
    /// `Error Domain=com.apple.LocalAuthentication Code=-2 "Canceled by user."`). Apple words
    /// some codes differently by cause and OS version; apps should switch on the code.
    public var appleDescription: String {
        switch self {
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

    /// Apple's case name (`biometryLockout`), for logs and the example.
    public var name: String { String(describing: self) }
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
