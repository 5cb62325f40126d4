#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// `doctor`'s look at the installed files other than the helper: the PAM module where libpam
/// finds it, and no setuid launcher left by an earlier version.
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
            let looked = candidates.joined(separator: ", ")
            return [Finding(.problem, "module.missing",
                            { l in tr(l, "module pam_localauth.so: not found (looked at %s)", looked) },
                            fix: DoctorCommand.install)]
        }
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            return [Finding(.problem, "module.not-regular", { l in tr(l, "module %s: not a regular file", path) },
                            fix: DoctorCommand.reinstall)]
        }
        let bits = st.st_mode & 0o7777, mode = DoctorCommand.octal(bits), uid = st.st_uid
        if uid != 0 || bits & 0o022 != 0 {
            return [Finding(.problem, "module.writable", { l in
                tr(l, "module %s: owned by uid %s, mode %s: someone other than root can change what runs inside sudo and login",
                   path, uid, mode)
            }, fix: DoctorCommand.verbatim("chown root:root \(path); chmod 0644 \(path)"))]
        }
        if bits & 0o004 == 0 {
            return [Finding(.warning, "module.not-readable", { l in
                tr(l, "module %s: mode %s, not readable by others (a screen locker running as the user cannot load it)",
                   path, mode)
            }, fix: DoctorCommand.verbatim("chmod 0644 \(path)"))]
        }
        return [Finding(.ok, "module.ok", { l in tr(l, "module %s: root's, mode %s", path, mode) })]
    }

    /// Earlier versions installed a setuid-root launcher for callers that are not root;
    /// localauthd serves them now, and a setuid program nothing uses is only attack surface
    /// (the package removes it on upgrade; a `scripts/install` of an older version left it).
    private func launcherFile() -> [Finding] {
        let launcher = self.launcher
        var st = stat()
        guard lstat(launcher, &st) == 0 else { return [] }
        return [Finding(.warning, "launcher.leftover", { l in
            tr(l, "launcher %s: left by an earlier version; nothing uses it (localauthd serves callers that are not root)",
               launcher)
        }, fix: DoctorCommand.verbatim("rm \(launcher)"))]
    }

    static func glob(_ pattern: String) -> [String] {
        var g = glob_t()
        defer { globfree(&g) }
        guard Glibc.glob(pattern, 0, nil, &g) == 0 else { return [] }
        return (0..<Int(g.gl_pathc)).compactMap { g.gl_pathv[$0].map { String(cString: $0) } }
    }
}
