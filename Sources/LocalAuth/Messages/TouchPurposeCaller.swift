/// Which TouchPurpose a PAM request has, from facts root gathered (the helper's
/// CallerPurpose): the PAM items of a root peer, the pinned caller's executable and command
/// line, polkit's words from localauthd. The one place that decides; pure.
extension TouchPurpose {
    public struct CallerFacts: Sendable {
        /// PAM_SERVICE.
        public var service: String
        /// PAM_USER: sudo's invoking user, su's target.
        public var user: String
        /// The peer is root (the module inside sudo, su, polkit's agent helper, a greeter):
        /// its PAM items are the host's. From any other peer nothing but the service is named.
        public var rootPeer: Bool
        /// The file name of the caller's executable when it is a program the system installed
        /// (root's file in root's directories); nil otherwise.
        public var installedProgram: String?
        /// The caller's command line, `argv[0]` first, as /proc gave it.
        public var arguments: [String]
        /// The command line was read in part (longer than what is read).
        public var argumentsCut: Bool
        /// The caller is polkit's agent helper (PolkitAgent).
        public var polkitAgentHelper: Bool
        /// polkit's words from localauthd, for this agent's one pending authentication.
        public var polkit: PolkitPurpose?

        public init(service: String, user: String, rootPeer: Bool, installedProgram: String?,
                    arguments: [String], argumentsCut: Bool, polkitAgentHelper: Bool, polkit: PolkitPurpose?) {
            self.service = service
            self.user = user
            self.rootPeer = rootPeer
            self.installedProgram = installedProgram
            self.arguments = arguments
            self.argumentsCut = argumentsCut
            self.polkitAgentHelper = polkitAgentHelper
            self.polkit = polkitAgentHelper ? polkit : nil
        }
    }

    /// PAM services of sudo and su (Debian's, Fedora's, Arch's names).
    static let sudoServices: Set<String> = ["sudo", "sudo-i"]
    static let suServices: Set<String> = ["su", "su-l"]
    /// Greeters and login: they say what they are for themselves.
    static let loginServices: Set<String> = ["login", "gdm-password", "gdm-fingerprint", "gdm-autologin", "sddm",
                                             "lightdm", "greetd", "lxdm", "xdm", "kdm", "cosmic-greeter"]
    /// Lock screens' services (a lock screen runs as the user: any peer).
    static let unlockServices: Set<String> = ["kde", "kde-fingerprint", "kde-smartcard", "gnome-screensaver",
                                              "swaylock", "hyprlock", "i3lock", "xscreensaver", "cinnamon-screensaver",
                                              "mate-screensaver", "xfce4-screensaver", "xsecurelock", "gtklock"]

    public static func of(_ facts: CallerFacts) -> TouchPurpose {
        let service = facts.service
        if facts.rootPeer, facts.polkitAgentHelper, service == "polkit-1" {
            return facts.polkit.map { .polkit($0) } ?? .polkitUnnamed
        }
        if facts.rootPeer, sudoServices.contains(service), ["sudo", "sudoedit"].contains(facts.installedProgram),
           let line = SudoCommandLine.parse(facts.arguments) {
            return line.purpose(invokingUser: facts.user, cut: facts.argumentsCut)
        }
        if facts.rootPeer, suServices.contains(service), facts.installedProgram == "su",
           let purpose = SuCommandLine.purpose(facts.arguments, user: facts.user, cut: facts.argumentsCut) {
            return purpose
        }
        if unlockServices.contains(service) { return .unlock }
        if facts.rootPeer, loginServices.contains(service) { return .login(service: clean(service)) }
        return .unknown(service: clean(service))
    }
}
