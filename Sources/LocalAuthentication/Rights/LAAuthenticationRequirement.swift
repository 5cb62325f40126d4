import Foundation

/// Apple's `LAAuthenticationRequirement` (macOS 13, iOS 16): what authorizes a right.
/// Here a finger on the reader (fprintd), or the account password where it may stand in,
/// judged by the root side with the rules `sudo` obeys.
///
/// `@unchecked Sendable`: NSObject is not checked; the one property is a constant.
public class LAAuthenticationRequirement: NSObject, @unchecked Sendable {
    /// The root side's word for it (docs/PROTOCOL.md, "Rights").
    let word: String

    required init(word: String) {
        self.word = word
    }

    /// The user, by a finger or the account password.
    public class var `default`: LAAuthenticationRequirement { LAAuthenticationRequirement(word: "default") }
    /// A finger, of any set enrolled now.
    public class var biometry: LAAuthenticationRequirement { LAAuthenticationRequirement(word: "biometry") }
    /// A finger of the set enrolled when the right was saved: adding or removing a finger
    /// invalidates the right for good.
    public class var biometryCurrentSet: LAAuthenticationRequirement {
        LAAuthenticationRequirement(word: "biometry-current-set")
    }

    /// A finger, or `fallback` (the account password for `.devicePasscode`).
    public class func biometry(fallback: LABiometryFallbackRequirement) -> Self {
        Self(word: fallback.allowsPassword ? "biometry-or-password" : "biometry")
    }

    /// The password may stand in for the finger.
    var allowsPassword: Bool { word == "default" || word == "biometry-or-password" }

    public override func isEqual(_ object: Any?) -> Bool {
        (object as? LAAuthenticationRequirement)?.word == word
    }

    public override var hash: Int { word.hashValue }
}

/// Apple's `LABiometryFallbackRequirement`.
///
/// `@unchecked Sendable`: NSObject is not checked; the one property is a constant.
public class LABiometryFallbackRequirement: NSObject, @unchecked Sendable {
    let allowsPassword: Bool

    init(allowsPassword: Bool) {
        self.allowsPassword = allowsPassword
    }

    /// No fallback: the finger only.
    public class var `default`: LABiometryFallbackRequirement { LABiometryFallbackRequirement(allowsPassword: false) }
    /// The device passcode: here the account password, checked by the root side.
    public class var devicePasscode: LABiometryFallbackRequirement { LABiometryFallbackRequirement(allowsPassword: true) }
}
