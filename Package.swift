// swift-tools-version:6.0
// localauth: fingerprint-first authentication for Linux logins.
// The PAM module itself (Sources/pam_localauth) is C and is built by scripts/build with the
// C compiler, not by this package, so that no Swift runtime is loaded into sudo or login.
import PackageDescription

let package = Package(
    name: "localauth",
    products: [
        .library(name: "LocalAuth", targets: ["LocalAuth"]),
        // Apple's LocalAuthentication API for Swift programs, the system's policy behind it.
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
        .executable(name: "localauth-helper", targets: ["localauth-helper"]),
        .executable(name: "localauthctl", targets: ["localauthctl"]),
        .executable(name: "localauthd", targets: ["localauthd"]),
    ],
    targets: [
        // System C libraries from Debian's -dev packages.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd",
                       providers: [.apt(["libsystemd-dev"])]),
        // libgcrypt: libsystemd loads it anyway, so it is the helper's one crypto library.
        .systemLibrary(name: "CCrypto", pkgConfig: "libgcrypt",
                       providers: [.apt(["libgcrypt20-dev"])]),
        .systemLibrary(name: "CPAM", pkgConfig: "pam",
                       providers: [.apt(["libpam0g-dev"])]),
        .systemLibrary(name: "CCrypt", pkgConfig: "libcrypt",
                       providers: [.apt(["libcrypt-dev"])]),
        .systemLibrary(name: "CAudit", pkgConfig: "audit",
                       providers: [.apt(["libaudit-dev"])]),
        // glibc headers outside Swift's Glibc module (shadow.h).
        .systemLibrary(name: "CLinux"),

        // The root-side engine: PolicyEvaluation (one policy evaluated for one user),
        // EvaluationError, the state machine, the state store, the configuration. Clock,
        // sensor, store and password check are injected.
        .target(name: "LocalAuth", dependencies: ["LocalAuthProtocol", "CCrypto", "CLinux"],
                linkerSettings: [.linkedLibrary("m")]),

        // The helper's D-Bus client (sd-bus), every call bounded in time.
        .target(name: "SystemBus", dependencies: ["CSystemd"]),

        // The sensor side: fprintd on the system bus.
        .target(name: "FprintdClient", dependencies: ["LocalAuth", "SystemBus", "CSystemd"]),

        // Who is at the reader: logind's records (sd-login) and hints (its bus API), as the
        // facts PresenceRule decides from.
        .target(name: "LogindClient", dependencies: ["LocalAuth", "SystemBus", "CSystemd"]),

        // Lockout events to the audit log and the journal (helper and localauthctl).
        .target(name: "SystemEvents", dependencies: ["LocalAuth", "CAudit", "CSystemd"]),

        // O_PATH for the helper (a GNU extension Swift's Glibc module leaves out).
        .target(name: "CPathOpen", cSettings: [.define("_GNU_SOURCE")]),

        // The frames between pam_localauth.so, the helper and the library (docs/PROTOCOL.md),
        // and the one table of result codes (Apple's raw values) both Swift sides use.
        .target(name: "LocalAuthProtocol"),

        // Apple's API for applications (Foundation is fine here: not on the helper's start-up
        // path). A thin client of the root side over the frame protocol; no policy of its own.
        // libgcrypt for the SHA-256 a right's key signs and for verifying its signatures.
        // In the Swift 5 language mode, as Apple's module is built: `@preconcurrency import
        // LocalAuthentication` silences the Sendable diagnostics on its classes only if the
        // module was not built with complete concurrency checking (a module built so marks
        // every class without `Sendable` as explicitly non-Sendable, which the import only
        // downgrades to warnings). scripts/test still compiles it in the Swift 6 mode, with
        // warnings as errors, so its own data races stay compile errors.
        .target(name: "LocalAuthentication", dependencies: ["LocalAuthProtocol", "CCrypto"],
                swiftSettings: [.swiftLanguageMode(.v5)]),

        .executableTarget(name: "localauth-helper",
                          dependencies: ["LocalAuth", "LocalAuthProtocol", "FprintdClient", "LogindClient", "SystemBus",
                                         "CSystemd", "CCrypt", "CLinux", "CPathOpen", "SystemEvents"]),
        // The resident service (docs/ARCHITECTURE.md §1): the socket, who connected, a helper per request.
        .executableTarget(name: "localauthd", dependencies: ["LocalAuth", "SystemBus", "CSystemd", "CLinux"]),
        .executableTarget(name: "localauthctl",
                          dependencies: ["LocalAuth", "LocalAuthProtocol", "FprintdClient", "CPAM", "CLinux",
                                         "SystemEvents"]),

        // Test support: many of these processes hammer one state file at once.
        .executableTarget(name: "store-hammer", dependencies: ["LocalAuth", "CLinux"],
                          path: "Tests/Support/store-hammer"),
        // Test support: an application of the LocalAuthentication API, as the integration
        // tests run it as an ordinary user.
        .executableTarget(name: "la-probe", dependencies: ["LocalAuthentication", "CLinux"],
                          path: "Tests/Support/la-probe"),
        .testTarget(name: "LocalAuthenticationTests", dependencies: ["LocalAuthentication"]),
        .testTarget(name: "SystemBusTests", dependencies: ["SystemBus"]),
        .testTarget(name: "LocalAuthTests", dependencies: ["LocalAuth", "LocalAuthProtocol", "SystemEvents", "store-hammer"]),
    ],
    // Every target in the Swift 6 language mode (the default of these tools): complete
    // concurrency checking, data races are compile errors.
    swiftLanguageModes: [.v6]
)
