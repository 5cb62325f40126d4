// swift-tools-version:5.9
// The second port of Apple-platform code: the shape most iOS apps give their biometric
// unlock (an `LAContextProtocol` test seam with `NSErrorPointer`, a switch on `kLAError…`
// codes, the "did the fingers change?" domain-state check), written as iOS developers write
// it and built unchanged against this repository's LocalAuthentication product, by path.
// scripts/test builds it; Tests/integration/test_app_example.py runs it as an ordinary user.
import PackageDescription

let package = Package(
    name: "SecondPort",
    dependencies: [.package(name: "localauth", path: "../..")],
    targets: [
        .executableTarget(name: "second-port",
                          dependencies: [.product(name: "LocalAuthentication", package: "localauth")]),
    ]
)
