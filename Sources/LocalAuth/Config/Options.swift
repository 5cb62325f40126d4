/// The one option table: `/etc/security/localauth.conf`, the module arguments, the helper
/// and `localauthctl` all go through it (ConfigParser.swift). Bad values are reported and
/// the option keeps the value it had before; numbers are bounded.
public struct Options: Equatable, Sendable {
    public enum PolicyChoice: String, Sendable { case biometrics, owner }
    public enum OptIn: String, Sendable { case required, optional }
    public enum PromptMode: String, Sendable { case sequential, concurrent }
    public enum LidClosedChoice: String, Sendable { case password, scan }

    /// `policy`: `owner` (fingerprint, then the password module) or `biometrics`.
    public var policy: PolicyChoice = .owner
    /// `max_tries`: failed matches that end one prompt.
    public var maxTries = 3
    /// `lockout_threshold`: consecutive failed matches that lock fingerprints out.
    public var lockoutThreshold = 5
    /// `scan_timeout`: seconds to wait for a finger on each try.
    public var scanTimeout = 30.0
    /// `bus_timeout`: seconds any one D-Bus call may take.
    public var busTimeout = 2.0
    /// `reuse_duration`: seconds a fingerprint success is reused in the same terminal session.
    public var reuseDuration = 0.0
    /// `reason`: the text shown with the prompt; empty means the built-in one.
    public var reason = ""
    /// `fallback_title`: how skipping to the password is offered; empty hides the offer.
    public var fallbackTitle: String? = nil
    /// `opt_in`: whether a user must turn fingerprint login on first.
    public var optIn: OptIn = .optional
    /// `debug`: more log lines.
    public var debug = false
    /// `state_dir`: where per-user state lives.
    public var stateDir = "/var/lib/localauth"
    /// `dbus_address`: the system bus; other values are for tests and only from root.
    public var dbusAddress = "unix:path=/run/dbus/system_bus_socket"
    /// `password_after_reboot`: the password is required once after each boot.
    public var passwordAfterReboot = true
    /// `password_after_idle`: hours without any successful authentication (0: off).
    public var passwordAfterIdleHours = 48.0
    /// `password_stale`: hours without the password, combined with `fingerprint_stale`.
    public var passwordStaleHours = 156.0
    /// `fingerprint_stale`: hours without a fingerprint, combined with `password_stale`.
    public var fingerprintStaleHours = 4.0
    /// `prompt`: `sequential` (finger, then password) or `concurrent` (both at once).
    public var prompt: PromptMode = .sequential
    /// `lid_path`: a file whose text contains `closed` when the laptop lid is closed.
    public var lidPath = "/proc/acpi/button/lid/LID0/state"
    /// `polkit_agent_socket`: where polkit 127+'s agent helper is started from (its
    /// polkit-agent-helper.socket). Only an agent helper whose stdin was accepted there is
    /// judged for the peer of that stdin.
    public var polkitAgentSocket = "/run/polkit/agent-helper.socket"
    /// `rights_interpreters`: whether a right may be saved for a program that is an
    /// interpreter or a loader (python3, bash, node, ld.so ...). Off: such a right would
    /// belong to every script that interpreter runs, whoever wrote it.
    public var rightsInterpreters = false
    /// `lid_closed`: what a closed lid means (logind's `LidClosed`, or `lid_path` without
    /// logind): `password` (the reader is in the lid: nobody can reach it), `scan` (the
    /// reader is elsewhere, a closed lid does not stop it).
    public var lidClosed = LidClosedChoice.password
    /// `require_presence`: no scan unless someone can be at the reader (a terminal on the
    /// conversation, or a graphical session). Off only for unusual setups.
    public var requirePresence = true
    /// `remote_login_guard`: after a remote login of the user (root's record of it), only a
    /// virtual console, the greeter and the lock screen get the finger until the next local
    /// unlock (PresenceRule). Off: a remote login counts only while its session is open.
    public var remoteLoginGuard = true
    /// `fprint_dir`: fprintd's print storage, hashed into the domain state when readable.
    public var fprintDir = "/var/lib/fprint"
    /// `helper`: the helper's path (read by the module only, listed so it is not unknown).
    public var helper = ""
    /// The module's `service=`: localauthd's socket, or `none` (read by the module only).
    public var service = ""
    /// `config`: another configuration file, read instead of the default (root's module
    /// arguments only; applied before the other arguments).
    public var config = ConfigFile.defaultPath
    /// `helper_timeout`: seconds the module waits for the helper in all (read by the module).
    public var helperTimeout = 120.0
    /// Not an option: why the configuration cannot be trusted (a file or the drop-in
    /// directory not root's, writable by others, a symlink, unreadable), set by
    /// `Options.resolve`. While it is set no fingerprint is tried at all (Rules.refusal):
    /// the defaults are no stand-in for a site policy that could not be read.
    public var untrustedConfiguration: String? = nil

    public init() {}

    /// The reuse duration as Apple bounds it.
    public static let maxReuseDuration = 300.0
}

/// One row of the option table: its key, what it accepts, and how it sets `Options`.
struct OptionSpec: Sendable {
    let key: String
    /// A short phrase for errors: "a whole number from 1 to 10", in a language (put into
    /// words only when asked, like the key paths below).
    func accepts(_ l: Language) -> String { describe(l) }
    var accepts: String { describe(.english) }
    /// A yes/no option, which a bare `debug` line or argument turns on.
    let isYesNo: Bool
    private let describe: @Sendable (Language) -> String
    /// Returns false when the value is not accepted; the options are then unchanged.
    let apply: @Sendable (inout Options, String) -> Bool
    /// The value as the file would write it.
    var show: @Sendable (Options) -> String

    init(key: String, accepts: @escaping @Sendable (Language) -> String, isYesNo: Bool = false,
         apply: @escaping @Sendable (inout Options, String) -> Bool,
         show: @escaping @Sendable (Options) -> String = { _ in "" }) {
        self.key = key
        self.describe = accepts
        self.isYesNo = isYesNo
        self.apply = apply
        self.show = show
    }
}

/// The key paths come as autoclosures: a key path is built at run time when first used
/// (swift_getKeyPath demangles its types), and a helper given five options should not
/// build all of the table's: that was a third of its work before the bus start-up.
extension OptionSpec {
    static func int(_ key: String, _ range: ClosedRange<Int>,
                    _ path: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Int>) -> OptionSpec {
        OptionSpec(key: key, accepts: { l in tr(l, "a whole number from %s to %s", range.lowerBound, range.upperBound) },
                   apply: {
            guard let n = Int(trimmed($1)), range.contains(n) else { return false }
            $0[keyPath: path()] = n
            return true
        }, show: { String($0[keyPath: path()]) })
    }

    static func seconds(_ key: String, _ range: ClosedRange<Double>,
                        _ path: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Double>) -> OptionSpec {
        OptionSpec(key: key, accepts: { l in tr(l, "a number from %s to %s", format(range.lowerBound), format(range.upperBound)) },
                   apply: {
            guard let x = Double(trimmed($1)), x.isFinite, range.contains(x) else { return false }
            $0[keyPath: path()] = x
            return true
        }, show: { format($0[keyPath: path()]) })
    }

    static func bool(_ key: String, _ path: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Bool>) -> OptionSpec {
        OptionSpec(key: key, accepts: { l in tr(l, "yes or no") }, isYesNo: true, apply: {
            switch trimmed($1).lowercased() {
            case "yes", "true", "1", "on": $0[keyPath: path()] = true
            case "no", "false", "0", "off": $0[keyPath: path()] = false
            default: return false
            }
            return true
        }, show: { $0[keyPath: path()] ? "yes" : "no" })
    }

    static func choice<T: RawRepresentable & Sendable>(_ key: String, _ path: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, T>,
                                            _ all: [T]) -> OptionSpec where T.RawValue == String {
        OptionSpec(key: key, accepts: { l in oneOf(all.map(\.rawValue), l) }, apply: {
            guard let v = T(rawValue: trimmed($1)) else { return false }
            $0[keyPath: path()] = v
            return true
        }, show: { $0[keyPath: path()].rawValue })
    }

    static let plainText: @Sendable (Language) -> String = { l in tr(l, "text of at most 256 bytes without control characters") }

    /// "a or b" (or "a, b or c") in `l`: the values as written.
    static func oneOf(_ values: [String], _ l: Language) -> String {
        guard let last = values.last else { return "" }
        let rest = values.dropLast()
        return rest.isEmpty ? last : tr(l, "%s or %s", rest.joined(separator: ", "), last)
    }

    /// Text of at most 256 bytes without control characters.
    static func text(_ key: String, _ path: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, String>) -> OptionSpec {
        OptionSpec(key: key, accepts: plainText, apply: {
            guard isPlainText($1) else { return false }
            $0[keyPath: path()] = $1
            return true
        }, show: { $0[keyPath: path()] })
    }

    /// An absolute path without `..` components or control characters.
    static func path(_ key: String, _ path: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, String>) -> OptionSpec {
        OptionSpec(key: key, accepts: { l in tr(l, "an absolute path") }, apply: {
            let v = trimmed($1)
            guard v.hasPrefix("/"), isPlainText(v), !v.split(separator: "/").contains("..")
            else { return false }
            $0[keyPath: path()] = v
            return true
        }, show: { $0[keyPath: path()] })
    }
}

extension Options {
    /// The table. Keys are the same in the config file and in module arguments.
    static let table: [OptionSpec] = [
        .choice("policy", \.policy, [PolicyChoice.owner, .biometrics]),
        .int("max_tries", 1...10, \.maxTries),
        .int("lockout_threshold", 1...100, \.lockoutThreshold),
        .seconds("scan_timeout", 1...600, \.scanTimeout),
        .seconds("bus_timeout", 0.1...30, \.busTimeout),
        .seconds("reuse_duration", 0...maxReuseDuration, \.reuseDuration),
        .text("reason", \.reason),
        OptionSpec(key: "fallback_title", accepts: OptionSpec.plainText, apply: {
            guard isPlainText($1) else { return false }
            $0.fallbackTitle = $1
            return true
        }, show: { $0.fallbackTitle ?? "Use Password" }),
        .choice("opt_in", \.optIn, [OptIn.optional, .required]),
        .bool("debug", \.debug),
        .path("state_dir", \.stateDir),
        OptionSpec(key: "dbus_address",
                   accepts: { l in tr(l, "a D-Bus address such as %s", "unix:path=/run/dbus/system_bus_socket") },
                   apply: {
            let v = trimmed($1)
            guard v.hasPrefix("unix:"), isPlainText(v) else { return false }
            $0.dbusAddress = v
            return true
        }, show: { $0.dbusAddress }),
        .bool("password_after_reboot", \.passwordAfterReboot),
        .seconds("password_after_idle", 0...100_000, \.passwordAfterIdleHours),
        .seconds("password_stale", 0...100_000, \.passwordStaleHours),
        .seconds("fingerprint_stale", 0...100_000, \.fingerprintStaleHours),
        .choice("prompt", \.prompt, [PromptMode.sequential, .concurrent]),
        .path("lid_path", \.lidPath),
        .path("polkit_agent_socket", \.polkitAgentSocket),
        .bool("rights_interpreters", \.rightsInterpreters),
        .choice("lid_closed", \.lidClosed, [LidClosedChoice.password, .scan]),
        .bool("require_presence", \.requirePresence),
        .bool("remote_login_guard", \.remoteLoginGuard),
        .path("fprint_dir", \.fprintDir),
        .path("helper", \.helper),
        OptionSpec(key: "service", accepts: { l in tr(l, "an absolute path, or none") }, apply: {
            let v = trimmed($1)
            guard v == "none" || (v.hasPrefix("/") && isPlainText(v) && !v.split(separator: "/").contains(".."))
            else { return false }
            $0.service = v
            return true
        }, show: { $0.service }),
        .path("config", \.config),
        .seconds("helper_timeout", 1...3600, \.helperTimeout),
    ]

    /// Keys that change where the product reads or writes, or what it talks to. On the
    /// unprivileged path they are taken from root's configuration only.
    public static let privilegedKeys: Set<String> = ["state_dir", "dbus_address", "helper", "service", "lid_path",
                                                     "polkit_agent_socket", "fprint_dir", "config"]

    /// Keys only the module reads, from its arguments; the config file cannot set them.
    public static let moduleOnlyKeys: Set<String> = ["helper", "service", "helper_timeout", "config"]

    static func spec(for key: String) -> OptionSpec? {
        table.first { $0.key == key }
    }

    /// What `key` accepts, in words ("a number from 0.1 to 30"); nil for an unknown key.
    public static func accepts(_ key: String, in l: Language = .english) -> String? { spec(for: key)?.accepts(l) }

    public static var allKeys: [String] { table.map(\.key) }

    /// The value of `key` as a config file would write it; nil for an unknown key.
    public func text(of key: String) -> String? { Options.spec(for: key)?.show(self) }
}

func trimmed(_ s: String) -> String {
    var chars = Substring(s)
    while let f = chars.first, f == " " || f == "\t" { chars.removeFirst() }
    while let l = chars.last, l == " " || l == "\t" { chars.removeLast() }
    return String(chars)
}

func isPlainText(_ s: String) -> Bool {
    s.utf8.count <= 256 && !s.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f }
}

private func format(_ x: Double) -> String {
    x == x.rounded() ? String(Int(x)) : String(x)
}
