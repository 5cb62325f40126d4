/// The release, as in packaging/changelog (a test keeps the two the same).
enum Version {
    static let text = "0.1.0"
}
