#if canImport(Glibc)
import Glibc
#endif

/// `doctor`'s look at the installed files other than the helper: the PAM module where libpam
/// finds it, and the setuid launcher screen lockers need.
struct DoctorInstall {
    typealias Finding = DoctorCommand.Finding

    /// Where this localauthctl is installed (`/usr`, or a `--prefix` directory).
    let prefix: String
    let moduleOverride: String?
    let launcher: String

    init(prefix: String, moduleOverride: String?, helper: String) {
        self.prefix = prefix
        self.moduleOverride = moduleOverride
        launcher = String(helper.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            .joined(separator: "/")) + "/localauth-launcher"
    }

    func check() -> [Finding] {
        module() + launcherFile()
    }

    /// The system build lives in the multiarch PAM directory; a `--prefix` build in
    /// PREFIX/lib/security (its service lines name it by absolute path).
    private func module() -> [Finding] {
        let candidates: [String]
        if let moduleOverride {
            candidates = [moduleOverride]
        } else if prefix == "/usr" || prefix.isEmpty {
            candidates = DoctorInstall.glob("/usr/lib/*/security/pam_localauth.so")
                + DoctorInstall.glob("/lib/*/security/pam_localauth.so")
                + ["/usr/lib/security/pam_localauth.so", "/lib/security/pam_localauth.so"]
        } else {
            candidates = [prefix + "/lib/security/pam_localauth.so"]
        }
        guard let path = candidates.first(where: { access($0, F_OK) == 0 }) else {
            return [Finding(severity: .problem,
                            message: "module pam_localauth.so: not found (looked at \(candidates.joined(separator: ", ")))",
                            fix: "install it (the localauth package, or scripts/install)")]
        }
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            return [Finding(severity: .problem, message: "module \(path): not a regular file", fix: "reinstall it")]
        }
        let mode = st.st_mode & 0o7777
        if st.st_uid != 0 || mode & 0o022 != 0 {
            return [Finding(severity: .problem,
                            message: "module \(path): owned by uid \(st.st_uid), mode \(DoctorCommand.octal(mode)): "
                                + "someone other than root can change what runs inside sudo and login",
                            fix: "chown root:root \(path); chmod 0644 \(path)")]
        }
        if mode & 0o004 == 0 {
            return [Finding(severity: .warning,
                            message: "module \(path): mode \(DoctorCommand.octal(mode)), not readable by others "
                                + "(a screen locker running as the user cannot load it)",
                            fix: "chmod 0644 \(path)")]
        }
        return [Finding(severity: .ok, message: "module \(path): root's, mode \(DoctorCommand.octal(mode))")]
    }

    /// Callers that are not root (screen lockers) need the launcher setuid root.
    private func launcherFile() -> [Finding] {
        let what = "launcher \(launcher)"
        var st = stat()
        guard stat(launcher, &st) == 0 else {
            return [Finding(severity: .warning,
                            message: "\(what): \(String(cString: strerror(errno))) (screen lockers that run as "
                                + "the user go straight to the password)",
                            fix: "install it (the localauth package, or scripts/install)")]
        }
        let mode = st.st_mode & 0o7777
        if (st.st_mode & S_IFMT) != S_IFREG || st.st_uid != 0 || mode & 0o022 != 0 {
            return [Finding(severity: .problem,
                            message: "\(what): owned by uid \(st.st_uid), mode \(DoctorCommand.octal(mode)): "
                                + "it must be a root-owned file nobody else can write",
                            fix: "chown root:root \(launcher); chmod 4755 \(launcher)")]
        }
        if mode & 0o4000 == 0 || mode & 0o001 == 0 {
            return [Finding(severity: .warning,
                            message: "\(what): mode \(DoctorCommand.octal(mode)), not setuid root and executable by "
                                + "all (screen lockers that run as the user go straight to the password)",
                            fix: "chmod 4755 \(launcher)")]
        }
        return [Finding(severity: .ok, message: "\(what): setuid root, mode \(DoctorCommand.octal(mode))")]
    }

    static func glob(_ pattern: String) -> [String] {
        var g = glob_t()
        defer { globfree(&g) }
        guard Glibc.glob(pattern, 0, nil, &g) == 0 else { return [] }
        return (0..<Int(g.gl_pathc)).compactMap { g.gl_pathv[$0].map { String(cString: $0) } }
    }
}
