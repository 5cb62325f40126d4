// swift-tools-version:6.2
// The shapes of Apple's LocalAuthentication API that applications' biometric code relies on
// beyond the symbols themselves, each in the language mode such code is written in, built
// against this repository's LocalAuthentication product by path with every warning an
// error: Foundation's names through `import LocalAuthentication` alone, `NSError` to
// `LAError`, `catch LAError.x`, a switch exhaustive over Apple's cases, the async calls
// from a `@MainActor` type in the Swift 6 language mode, `@preconcurrency import`, and
// `LASecret.rawData`. One target alone keeps its warnings: the completion-handler forms'
// closures capturing what is not Sendable in the Swift 6 mode, which Apple's SDK answers
// with warnings, not errors (CompletionShapes). scripts/test builds it and runs
// `apple-shapes`, which exercises what needs no fingerprint reader (the preflights and
// calls that fail before the root side is asked, and one without a root side) and exits 0
// when every check holds.
import PackageDescription

let library: Target.Dependency = .product(name: "LocalAuthentication", package: "localauth")
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "AppleShapes",
    dependencies: [.package(name: "localauth", path: "../..")],
    targets: [
        // Code as most applications' is: the Swift 5 language mode.
        .target(name: "FoundationShapes", dependencies: [library],
                swiftSettings: [.swiftLanguageMode(.v5)] + strict),
        // A view model on the main actor, in the Swift 6 language mode.
        .target(name: "ActorShapes", dependencies: [library],
                swiftSettings: [.swiftLanguageMode(.v6)] + strict),
        // `@preconcurrency import LocalAuthentication` in the Swift 6 language mode.
        .target(name: "PreconcurrencyShapes", dependencies: [library],
                swiftSettings: [.swiftLanguageMode(.v6)] + strict),
        // A class that is not Sendable captured in the completion-handler forms' closures,
        // in the Swift 6 language mode with a plain import: warnings at most, as with
        // Apple's SDK (its Objective-C completion handlers are `@preconcurrency`), so
        // without warnings-as-errors.
        .target(name: "CompletionShapes", dependencies: [library],
                swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(name: "apple-shapes",
                          dependencies: [library, "FoundationShapes", "ActorShapes", "PreconcurrencyShapes",
                                         "CompletionShapes"],
                          swiftSettings: [.swiftLanguageMode(.v5)] + strict),
    ]
)
