// swift-tools-version:5.9
// A literal Swift port of the seeds' application code (the five articles in the project's
// seeds), built against this repository's LocalAuthentication product as a dependency by
// path, exactly as a developer porting an iOS app would use it. scripts/test builds it:
// if it stops compiling, the library is no longer source-compatible with Apple's API.
import PackageDescription

let package = Package(
    name: "SeedPort",
    dependencies: [.package(name: "localauth", path: "../..")],
    targets: [
        .executableTarget(name: "seed-port",
                          dependencies: [.product(name: "LocalAuthentication", package: "localauth")]),
    ]
)
