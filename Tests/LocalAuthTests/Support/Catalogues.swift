import Foundation
@testable import LocalAuth

/// The message catalogues for the unit tests: po/*.po compiled with msgfmt -c into a
/// temporary share/locale (as scripts/build does into build/share/locale), so `swift test`
/// alone checks the translations too.
enum Catalogues {
    static let ready: Bool = {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let locale = FileManager.default.temporaryDirectory
            .appendingPathComponent("localauth-tests-locale-\(getpid())")
        for lang in ["en", "zh_CN", "zh_TW"] {
            let dir = locale.appendingPathComponent("\(lang)/LC_MESSAGES")
            try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let msgfmt = Process()
            msgfmt.executableURL = URL(fileURLWithPath: "/usr/bin/msgfmt")
            msgfmt.arguments = ["-c", "-o", dir.appendingPathComponent("localauth.mo").path,
                                repo.appendingPathComponent("po/\(lang).po").path]
            guard (try? msgfmt.run()) != nil else { return false }
            msgfmt.waitUntilExit()
            guard msgfmt.terminationStatus == 0 else { return false }
        }
        Catalog.directory = locale.path
        return true
    }()
}
