import Foundation

/// What the application keeps between runs, as the seeds keep it in UserDefaults and the
/// keychain: the switch, and the enrolled set's domain state when it was turned on.
struct Settings: Codable {
    var fingerprintLogin = false
    /// `evaluatedPolicyDomainState` at the time the switch was turned on (base64 in the file).
    var domainState: Data?

    static var defaultPath: String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (env["HOME"] ?? NSHomeDirectory()) + "/.config"
        return base + "/fingerprint-switch.json"
    }

    static func load(_ path: String) -> Settings {
        guard let data = FileManager.default.contents(atPath: path),
              let settings = try? JSONDecoder().decode(Settings.self, from: data) else { return Settings() }
        return settings
    }

    func save(_ path: String) throws {
        let dir = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try JSONEncoder().encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
