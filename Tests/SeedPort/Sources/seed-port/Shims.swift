// Stand-ins for the iOS frameworks the seeds use around LocalAuthentication (UIKit,
// SVProgressHUD, SAMKeychain). Only the members the seeds call; they print what an iOS
// screen would show.
import Foundation

final class UIDevice {
    static let current = UIDevice()
    let systemVersion = "17.0"
}

final class UISwitch {
    var isOn = false {
        didSet { print("switch: \(isOn ? "on" : "off")") }
    }
}

enum SVProgressHUD {
    static func showInfo(withStatus status: String) { print("HUD: \(status)") }
    static func dismiss(withDelay delay: TimeInterval) {}
}

/// SAMKeychain's two calls, kept in memory (enough for one run of the port).
enum SAMKeychain {
    private static var items: [String: Data] = [:]
    private static let lock = NSLock()

    @discardableResult
    static func setPasswordData(_ data: Data, forService service: String, account: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        items[service + "/" + account] = data
        return true
    }

    static func passwordData(forService service: String, account: String) -> Data? {
        lock.lock()
        defer { lock.unlock() }
        return items[service + "/" + account]
    }
}
