import Foundation
import Testing
@testable import LocalAuthentication

/// LAError, LAPolicy and LABiometryType against Apple's current SDK, written out here
/// independently of the library's enums: every name with its raw value, the domain and code
/// an NSError carries, and the forms Apple's Swift overlay accepts.
@Suite struct ErrorBridgingTests {
    /// Apple's LAError.Code: (name, raw value, English description).
    static let appleCodes: [(String, Int, String)] = [
        ("authenticationFailed", -1, "Application retry limit exceeded."),
        ("userCancel", -2, "Canceled by user."),
        ("userFallback", -3, "Fallback authentication mechanism selected."),
        ("systemCancel", -4, "UI canceled by system."),
        ("passcodeNotSet", -5, "Passcode not set."),
        ("biometryNotAvailable", -6, "Biometry is not available on this device."),
        ("biometryNotEnrolled", -7, "No identities are enrolled."),
        ("biometryLockout", -8, "Biometry is locked out."),
        ("appCancel", -9, "Invalidated by client."),
        ("invalidContext", -10, "Invalid context."),
        ("companionNotAvailable", -11, "No companion device available."),
        ("biometryNotPaired", -12, "No biometric accessory is paired."),
        ("biometryDisconnected", -13, "The biometric accessory is not connected."),
        ("invalidDimensions", -14, "Invalid dimensions."),
        ("notInteractive", -1004, "User interaction is required."),
    ]

    @Test func everyCodeBridgesToAnNSErrorWithApplesDomainAndCode() throws {
        // Every raw value of the range is Apple's, or no code.
        let known = (-1100...0).filter { LAError.Code(rawValue: $0) != nil }
        #expect(known.sorted() == Self.appleCodes.map(\.1).sorted())
        for (name, raw, text) in Self.appleCodes {
            let code = try #require(LAError.Code(rawValue: raw), "no code \(raw)")
            #expect(code.name == name)
            let error: Error = LAError(code)
            let ns = error as NSError
            #expect(ns.domain == "com.apple.LocalAuthentication")
            #expect(ns.code == raw)
            #expect(error._code == raw && error._domain == LAErrorDomain)
            #expect(error.localizedDescription == text)
            #expect((error as? LAError)?.code == code)
        }
        #expect(LAErrorDomain == "com.apple.LocalAuthentication")
        #expect(LAError.errorDomain == LAErrorDomain)
    }

    @Test func staticMembersAndDeprecatedAliasesHaveApplesRawValues() {
        let members: [(LAError.Code, Int)] = [
            (LAError.authenticationFailed, -1), (LAError.userCancel, -2), (LAError.userFallback, -3),
            (LAError.systemCancel, -4), (LAError.passcodeNotSet, -5), (LAError.biometryNotAvailable, -6),
            (LAError.biometryNotEnrolled, -7), (LAError.biometryLockout, -8), (LAError.appCancel, -9),
            (LAError.invalidContext, -10), (LAError.companionNotAvailable, -11),
            (LAError.biometryNotPaired, -12), (LAError.biometryDisconnected, -13),
            (LAError.invalidDimensions, -14), (LAError.notInteractive, -1004),
        ]
        for (member, raw) in members { #expect(member.rawValue == raw) }
        #expect(Deprecated.aliases.map(\.rawValue) == [-6, -7, -8, -11, -6, -7, -8, -11])
    }

    @Test func anErrorMatchesApplesPatterns() {
        func fail(_ code: LAError.Code) throws { throw LAError(code) }
        var caught = ""
        do { try fail(.userCancel) } catch LAError.userCancel { caught = "userCancel" } catch { caught = "other" }
        #expect(caught == "userCancel")

        let error: Error = LAError(.userFallback)
        switch error {
        case LAError.userCancel: Issue.record("matched the wrong code")
        case LAError.userFallback: break
        default: Issue.record("no match")
        }
        switch (error as NSError).code {
        case LAError.userFallback.rawValue: break
        default: Issue.record("no match on the raw value")
        }
        let lockout: Error = LAError(.biometryLockout)
        #expect(Deprecated.matchesTouchIDLockout(lockout))
    }

    /// Apple's `LAError` is bridged by the Objective-C runtime; here by the Swift runtime,
    /// through `_ObjectiveCBridgeable`: an NSError of the domain casts, others do not.
    @Test func anNSErrorOfTheDomainCastsToLAErrorAndMatchesCatch() {
        let ns = NSError(domain: LAErrorDomain, code: -2, userInfo: ["why": "the test"])
        let error: Error = ns
        #expect((error as? LAError)?.code == .userCancel)
        #expect(((ns as Any) as? LAError)?.userInfo["why"] as? String == "the test")
        #expect((NSError(domain: "other", code: -2) as Error) as? LAError == nil)
        #expect((NSError(domain: LAErrorDomain, code: 7) as Error) as? LAError == nil)
        var caught = ""
        do { throw ns } catch LAError.userFallback { caught = "fallback" } catch LAError.userCancel { caught = "cancel" } catch {}
        #expect(caught == "cancel")
        // Both ways: the LAError's NSError is the one it wraps.
        #expect((LAError(_nsError: ns) as NSError) === ns)
        #expect((LAError(.biometryLockout) as NSError).code == -8)
    }

    /// As Swift imports Apple's header: the first name of a raw value is the case, the later
    /// one a static alias, so a switch listing the `touchID…` cases needs no `default`.
    @Test func applesFirstNamesAreTheCasesAndTheCurrentNamesAliases() {
        #expect(Deprecated.appleSwitch(.biometryNotAvailable) == "touchIDNotAvailable")
        #expect(Deprecated.appleSwitch(.biometryNotEnrolled) == "touchIDNotEnrolled")
        #expect(Deprecated.appleSwitch(.biometryLockout) == "touchIDLockout")
        #expect(Deprecated.appleSwitch(.companionNotAvailable) == "watchNotAvailable")
        #expect(Deprecated.appleSwitch(.notInteractive) == "notInteractive")
        // The current names are what the library reports and prints.
        #expect(LAError.Code.biometryLockout.name == "biometryLockout")
        #expect(LAError(.biometryLockout).code == LAError.biometryLockout)
    }

    @Test func userInfoCarriesTheCauseAndMayOverrideTheText() {
        let custom = LAError(.systemCancel, userInfo: [NSLocalizedDescriptionKey: "mine"])
        #expect(custom.localizedDescription == "mine")
        #expect(LAError(.systemCancel).code == .systemCancel)
        #expect(LAError(.systemCancel) != LAError(.userCancel))
    }

    @Test func policiesAndBiometryTypesHaveApplesRawValues() {
        let policies: [(LAPolicy, Int)] = [
            (.deviceOwnerAuthenticationWithBiometrics, 1), (.deviceOwnerAuthentication, 2),
            (.deviceOwnerAuthenticationWithCompanion, 3), (.deviceOwnerAuthenticationWithBiometricsOrCompanion, 4),
            (.deviceOwnerAuthenticationWithWristDetection, 5),
        ]
        for (policy, raw) in policies { #expect(policy.rawValue == raw) }
        #expect(LAPolicy.allCases.count == policies.count)
        #expect(Deprecated.watchPolicies.map(\.rawValue) == [3, 4])
        let types: [(LABiometryType, Int)] = [(.none, 0), (.touchID, 1), (.faceID, 2), (.opticID, 4)]
        for (type, raw) in types { #expect(type.rawValue == raw) }
        #expect(Deprecated.typeNone == LABiometryType.none)
        #expect(LACompanionType.allCases.map(\.rawValue) == [1, 2, 4])
        #expect(LACredentialType.applicationPassword.rawValue == 0 && LACredentialType.smartCardPIN.rawValue == -3)
        #expect(LATouchIDAuthenticationMaximumAllowableReuseDuration == 300)
    }
}

/// The deprecated spellings, used where their warnings are expected (seed code uses them).
enum Deprecated {
    @available(*, deprecated)
    static var aliases: [LAError.Code] {
        [LAError.touchIDNotAvailable, LAError.touchIDNotEnrolled, LAError.touchIDLockout, LAError.watchNotAvailable,
         LAError.Code.touchIDNotAvailable, LAError.Code.touchIDNotEnrolled, LAError.Code.touchIDLockout,
         LAError.Code.watchNotAvailable]
    }

    @available(*, deprecated)
    static func matchesTouchIDLockout(_ error: Error) -> Bool {
        if case LAError.touchIDLockout = error { return true }
        return false
    }

    /// Exhaustive over Apple's cases, no `default`.
    @available(*, deprecated)
    static func appleSwitch(_ code: LAError.Code) -> String {
        switch code {
        case .authenticationFailed: return "authenticationFailed"
        case .userCancel: return "userCancel"
        case .userFallback: return "userFallback"
        case .systemCancel: return "systemCancel"
        case .passcodeNotSet: return "passcodeNotSet"
        case .touchIDNotAvailable: return "touchIDNotAvailable"
        case .touchIDNotEnrolled: return "touchIDNotEnrolled"
        case .touchIDLockout: return "touchIDLockout"
        case .appCancel: return "appCancel"
        case .invalidContext: return "invalidContext"
        case .notInteractive: return "notInteractive"
        case .watchNotAvailable: return "watchNotAvailable"
        case .biometryNotPaired: return "biometryNotPaired"
        case .biometryDisconnected: return "biometryDisconnected"
        case .invalidDimensions: return "invalidDimensions"
        }
    }

    @available(*, deprecated)
    static var watchPolicies: [LAPolicy] {
        [.deviceOwnerAuthenticationWithWatch, .deviceOwnerAuthenticationWithBiometricsOrWatch]
    }

    @available(*, deprecated)
    static var typeNone: LABiometryType { .typeNone }
}
