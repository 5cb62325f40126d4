/// The screen lockers a user runs that the system installed, the one list: the programs whose
/// requests PresenceRule lets scan while their session is locked (`CallerPlace.screenLocker`)
/// and whose answers ScreenLockerAnswers shapes. The helper reads the pinned peer's program
/// (`RootOwned.installedProgram`: a root's file in root's directories, the very file the
/// process runs) and asks `named`; a path alone proves nothing, the file's owner does.
///
/// Only Plasma's are here. Both run as the user with no terminal and set no PAM_TTY or
/// PAM_XDISPLAY; kscreenlocker (in kwin) sets logind's `LockedHint` once the lock is shown.
/// swaylock, hyprlock, i3lock and xscreensaver set no `LockedHint`, so their session looks
/// unlocked and today's rule for a user's program already serves them (`pam.d/screenlocker`);
/// GNOME's lock screen is root's (GDM's worker).
public enum ScreenLocker: String, Equatable, Sendable, CaseIterable {
    /// Plasma 6.3 and earlier (Debian 13's `libkscreenlocker6` 6.3.5): the greeter calls PAM
    /// itself, one thread per service (`kde`, `kde-fingerprint`, `kde-smartcard`), all three
    /// at every lock.
    case plasmaGreeter = "kscreenlocker_greet"
    /// Plasma 6.4 and later: one `kscreenlocker_worker` process per service, a child of the
    /// greeter, driven over a peer-to-peer D-Bus connection.
    case plasmaWorker = "kscreenlocker_worker"

    /// The locker an installed program's path names (by its file name: Debian installs
    /// them in /usr/lib/<triplet>/libexec, Fedora in /usr/libexec, Arch in /usr/lib), or nil.
    public static func named(programPath path: String) -> ScreenLocker? {
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/") else { return nil }
        return ScreenLocker(rawValue: String(path[path.index(after: slash)...]))
    }

    /// What one of the locker's PAM services is for.
    public enum Stack: Equatable, Sendable {
        /// `kde`: the password (common-auth with the profiles); the finger is not its.
        case password
        /// `kde-fingerprint`: the finger, run beside the password stack.
        case finger
        /// Any other (`kde-smartcard`, `kde-face`, ...): as any program's.
        case other
    }

    /// The stack a PAM service of this locker is (PAM_SERVICE as the module sent it).
    public func stack(service: String) -> Stack {
        switch service {
        case "kde": return .password
        case "kde-fingerprint": return .finger
        default: return .other
        }
    }

    /// For the log's words.
    public var description: String {
        switch self {
        case .plasmaGreeter: return "Plasma's lock screen (kscreenlocker_greet)"
        case .plasmaWorker: return "Plasma's lock screen (kscreenlocker_worker)"
        }
    }
}
