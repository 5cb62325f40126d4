#if canImport(Glibc)
import Glibc
#endif

/// Services of a user's service manager whose name the system gave: a unit file of that
/// name (or of its template) that root installed for every user's manager. The helper asks
/// this about a polkit agent's unit (PolkitAgent.isTheDesktops), read from the agent's
/// cgroup.
///
/// Why a name with such a file tells a unit that was not made on the fly: systemd refuses
/// to make a transient unit (`systemd-run --user --unit=NAME`) under a name that has a unit
/// file ("was already loaded or has a fragment file"); a template's file counts for every
/// instance of it. So a service that `systemd-run --user` started, from a remote login or
/// anywhere, can never carry one of these names. Files under the user's own directories
/// (~/.config/systemd/user, /run/user/UID/systemd) are never looked at: they are the
/// user's word.
public enum InstalledUserUnit {
    /// The user manager's search path, the system's part of it (systemd.unit(5)), in
    /// systemd's order. /usr/local's count only where /usr/local is root's alone (Debian's is
    /// group-writable by `staff`: RootOwned refuses it).
    public static let directories = [
        "/etc/systemd/user", "/etc/xdg/systemd/user", "/run/systemd/user", "/usr/local/share/systemd/user",
        "/usr/share/systemd/user", "/usr/local/lib/systemd/user", "/usr/lib/systemd/user",
        "/lib/systemd/user",
    ]

    /// The installed unit file that carries `unit`'s name, or nil. Only services: a scope is
    /// always made on the fly. `root` prefixes every directory (tests).
    public static func file(for unit: String, root: String = "") -> String? {
        guard unit.hasSuffix(".service"), unit.count > ".service".count, !unit.contains("/"),
              !unit.hasPrefix("."), !unit.utf8.contains(0) else { return nil }
        var names = [unit]
        if let at = unit.firstIndex(of: "@") { names.append(String(unit[...at]) + ".service") }
        for dir in directories {
            for name in names {
                let path = root + dir + "/" + name
                if isInstalled(path) { return path }
            }
        }
        return nil
    }

    /// A root's file (or a root's symlink: an alias, or a mask, which no transient unit can
    /// take either) in root's directories.
    private static func isInstalled(_ path: String) -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0 else { return false }
        let link = (st.st_mode & S_IFMT) == S_IFLNK && st.st_uid == 0
        return (link || RootOwned.isRootsFile(st)) && RootOwned.firstUntrustedDirectory(above: path) == nil
    }
}
