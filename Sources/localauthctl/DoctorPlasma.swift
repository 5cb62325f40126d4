#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// `doctor`'s look at KDE Plasma's services, where Plasma is installed (its lock screen's
/// `kde` service, in /etc/pam.d or, as Debian's libkscreenlocker6 ships it, the vendor
/// directory /usr/lib/pam.d, which libpam reads for a service /etc/pam.d does not have):
/// whether the lock screen's finger stack `kde-fingerprint` is localauth's or the stock
/// pam_fprintd; that `kde` (the password, common-auth with the profiles) uses the module,
/// which stands aside there and clears a lockout after the password; and SDDM's login.
struct DoctorPlasma {
    typealias Finding = DoctorCommand.Finding

    /// The directory doctor reads (`--pam-dir`, /etc/pam.d).
    let directory: String

    /// The vendor directory libpam reads after `directory`: /usr/lib/pam.d beside /etc/pam.d
    /// (under the same root, so a test's `ROOT/etc/pam.d` has `ROOT/usr/lib/pam.d`); none
    /// for a directory elsewhere.
    var vendorDirectory: String? {
        let trimmed = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        guard trimmed.hasSuffix("/etc/pam.d") else { return nil }
        return String(trimmed.dropLast("/etc/pam.d".count)) + "/usr/lib/pam.d"
    }

    /// The file libpam reads for `service`: /etc/pam.d's, else the vendor directory's.
    func effective(_ service: String) -> String? {
        for dir in [directory] + (vendorDirectory.map { [$0] } ?? []) {
            var st = stat()
            if stat(dir + "/" + service, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG { return dir + "/" + service }
        }
        return nil
    }

    func check() -> [Finding] {
        guard let kde = effective("kde") else { return [] }  // Plasma's lock screen is not installed
        var reader = PamStackReader(directory: directory)
        let installed = Finding(.ok, "plasma.installed", { l in tr(l, "KDE Plasma's lock screen is installed (%s)", kde) })
        return [installed] + fingerStack(&reader) + passwordStack(kde, &reader) + sddm(&reader)
    }

    /// The service file the README tells the administrator to install.
    static let example = "/usr/share/doc/localauth/examples/pam.d/kde-fingerprint"

    private func fingerStack(_ reader: inout PamStackReader) -> [Finding] {
        let target = directory + "/kde-fingerprint"
        let install: DoctorCommand.Text = { l in
            tr(l, "install %s as %s (it takes precedence over the vendor's file)", DoctorPlasma.example, target)
        }
        guard let path = effective("kde-fingerprint"), let rules = reader.authStack(path) else {
            return [Finding(.warning, "plasma.fingerprint-missing", { l in
                tr(l, "Plasma's lock screen has no %s service: it asks for the password only", "kde-fingerprint")
            }, fix: install)]
        }
        if rules.contains(where: { $0.isFirstLine }) {
            return [Finding(.ok, "plasma.fingerprint-ours", { l in
                tr(l, "Plasma's lock screen asks for the finger through localauth (%s)", path)
            })]
        }
        if rules.contains(where: { $0.moduleName == "pam_fprintd.so" }) {
            return [Finding(.warning, "plasma.fingerprint-stock", { l in
                tr(l, "%s is the stock pam_fprintd: Plasma's lock screen asks fprintd itself, with none of localauth's rules (no lockout, no password after boot)",
                   path)
            }, fix: install)]
        }
        return [Finding(.warning, "plasma.fingerprint-other", { l in
            tr(l, "%s uses neither pam_localauth.so nor pam_fprintd: Plasma's lock screen gets no finger from localauth", path)
        }, fix: install)]
    }

    /// `kde`: the module there stands aside for the lock screen (its finger is
    /// kde-fingerprint's), and its `authsucc` line is what clears a lockout and records the
    /// password typed at the lock screen.
    private func passwordStack(_ path: String, _ reader: inout PamStackReader) -> [Finding] {
        let rules = reader.authStack(path) ?? []
        guard rules.contains(where: { $0.isAuthsucc }) else {
            return [Finding(.warning, "plasma.password-not-recorded", { l in
                tr(l, "%s has no %s line: the password typed at Plasma's lock screen neither clears a fingerprint lockout nor counts as the password after boot",
                   path, "`authsucc`")
            }, fix: DoctorCommand.verbatim(DoctorPam.enableProfiles))]
        }
        return [Finding(.ok, "plasma.password-stands-aside", { l in
            tr(l, "%s: the module stands aside for Plasma's lock screen (the finger is kde-fingerprint's) and the password typed there clears a lockout",
               path)
        })]
    }

    /// SDDM's login: its greeter takes the password in its own field before sddm-helper runs
    /// PAM (before the session exists: the module's line says `no-session`), so the module in
    /// `sddm` never asks for the finger there; the password opens KWallet and is recorded.
    private func sddm(_ reader: inout PamStackReader) -> [Finding] {
        guard let path = effective("sddm"), let rules = reader.authStack(path),
              rules.contains(where: { $0.isFirstLine }) else { return [] }
        return [Finding(.ok, "plasma.sddm", { l in
            tr(l, "%s: SDDM's greeter takes the password before PAM runs, so its login never asks for the finger; that password opens KWallet and counts as the password after boot",
               path)
        })]
    }
}
