// swift-tools-version:5.9
// An application of Apple's LocalAuthentication API on Linux: the seeds' "log in with
// fingerprint" switch (seed 004) and their check for a changed set of fingers (seed 003),
// as a command-line program. It uses the localauth package by path, as any program would.
import PackageDescription

let package = Package(
    name: "FingerprintSwitch",
    dependencies: [.package(name: "localauth", path: "../..")],
    targets: [
        .executableTarget(name: "fingerprint-switch",
                          dependencies: [.product(name: "LocalAuthentication", package: "localauth")]),
    ]
)
