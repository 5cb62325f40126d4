// swift-tools-version:5.9
// An application of Apple's LARightStore on Linux: a secret saved behind a right survives
// a restart and comes back only after the owner's finger (or the account password where
// the right's requirement allows it), and the right's key signs. It uses the localauth
// package by path, as any program would.
import PackageDescription

let package = Package(
    name: "SecretVault",
    dependencies: [.package(name: "localauth", path: "../..")],
    targets: [
        .executableTarget(name: "secret-vault",
                          dependencies: [.product(name: "LocalAuthentication", package: "localauth")]),
    ]
)
