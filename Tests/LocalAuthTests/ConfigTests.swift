import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import LocalAuth

/// The one option table, read from the config file and from module arguments.
@Suite struct ConfigTests {
    @Test func defaultsAreApplesNumbers() {
        let o = Options()
        #expect(o.maxTries == 3)
        #expect(o.lockoutThreshold == 5)
        #expect(o.reuseDuration == 0)
        #expect(o.passwordAfterIdleHours == 48)
        #expect(o.passwordStaleHours == 156)
        #expect(o.fingerprintStaleHours == 4)
        #expect(o.busTimeout == 2)
        #expect(o.scanTimeout == 30)
        #expect(o.stateDir == "/var/lib/localauth")
    }

    @Test func commentsAfterValuesAndBareFlagsAsInFaillockConf() {
        var o = Options()
        var lines: [String: Int] = [:]
        let text = "max_tries = 2   # two is enough\nreason = Touch #1\ndebug\nrequire_presence\t# on\nfallback_title = Use the password#now\n"
        let issues = ConfigParser.apply(fileText: text, source: "f", to: &o, set: { lines[$0] = $1 })
        #expect(issues.isEmpty)
        #expect(o.maxTries == 2)
        #expect(o.reason == "Touch")
        #expect(o.debug == true && o.requirePresence == true)
        #expect(o.fallbackTitle == "Use the password#now")  // no space before `#`: part of the value
        #expect(lines == ["max_tries": 1, "reason": 2, "debug": 3, "require_presence": 4, "fallback_title": 5])
        // A bare word that is not a yes/no option is still an error.
        #expect(ConfigParser.apply(fileText: "max_tries\n", source: "f", to: &o).count == 1)
    }

    @Test func oneConfigurationPerInstallation() {
        #expect(ConfigFile.path(forExecutable: "/usr/bin/localauthctl") == "/etc/security/localauth.conf")
        #expect(ConfigFile.path(forExecutable: "/usr/libexec/localauth/localauth-helper")
                == "/etc/security/localauth.conf")
        #expect(ConfigFile.path(forExecutable: "/opt/la/bin/localauthctl") == "/opt/la/etc/security/localauth.conf")
        #expect(ConfigFile.path(forExecutable: "/opt/la/libexec/localauth/localauth-helper")
                == "/opt/la/etc/security/localauth.conf")
        #expect(ConfigFile.path(forExecutable: "/x/.build/debug/localauthPackageTests.xctest")
                == "/etc/security/localauth.conf")
    }

    @Test func aConfigFileSetsOptionsAndReportsBadLinesWithFileAndLine() {
        var o = Options()
        let text = """
        # localauth
        max_tries = 2
          lockout_threshold=7   
        scan_timeout = 0.5
        reuse_duration = 301
        policy = sometimes
        frobnicate = 1
        this line has no equals sign
        debug = yes
        reason = Unlock the vault
        """
        let issues = ConfigParser.apply(fileText: text, source: "/etc/security/localauth.conf", to: &o)
        #expect(o.maxTries == 2)
        #expect(o.lockoutThreshold == 7)
        #expect(o.debug)
        #expect(o.reason == "Unlock the vault")
        #expect(o.scanTimeout == 30)      // kept: below the minimum
        #expect(o.reuseDuration == 0)     // kept: above Apple's 300 s
        #expect(o.policy == .owner)       // kept
        #expect(issues.map(\.description) == [
            "/etc/security/localauth.conf:4: `scan_timeout` must be a number from 1 to 600, not `0.5`; it stays `30`",
            "/etc/security/localauth.conf:5: `reuse_duration` must be a number from 0 to 300, not `301`; it stays `0`",
            "/etc/security/localauth.conf:6: `policy` must be owner or biometrics, not `sometimes`; it stays `owner`",
            "/etc/security/localauth.conf:7: unknown option `frobnicate`",
            "/etc/security/localauth.conf:8: expected `key = value`, found `this line has no equals sign`",
        ])
    }

    /// A file of root's that others can write, a symlink, a drop-in (or its directory)
    /// that cannot be trusted: not read, and the whole configuration is untrusted.
    @Test func aFileThatCannotBeTrustedMakesTheConfigurationUntrusted() throws {
        let dir = "/tmp/la-config-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(dir, 0o755) == 0)
        defer { _ = try? removeTree(dir) }
        let conf = dir + "/localauth.conf"
        try write(conf, "max_tries = 1\n", mode: 0o644)
        var report = Options.resolve(configPath: conf)
        #expect(report.options.maxTries == 1 && report.options.untrustedConfiguration == nil)
        #expect(chmod(conf, 0o664) == 0)
        report = Options.resolve(configPath: conf)
        #expect(report.options.untrustedConfiguration == "\(conf) has mode 0664: its group can write it")
        #expect(report.problems.map(\.1) == ["\(conf) has mode 0664: its group can write it: not read; "
                                              + "fingerprint sign-in is off until it is fixed (the password only)"])
        #expect(chmod(conf, 0o644) == 0)
        #expect(mkdir(conf + ".d", 0o755) == 0)
        try write(conf + ".d/10-site.conf", "max_tries = 2\n", mode: 0o606)
        report = Options.resolve(configPath: conf)
        #expect(report.options.maxTries == 1)  // the drop-in was not read
        #expect(report.options.untrustedConfiguration == "\(conf).d/10-site.conf has mode 0606: every user can write it")
        #expect(chmod(conf + ".d/10-site.conf", 0o644) == 0)
        #expect(chmod(conf + ".d", 0o775) == 0)
        #expect(Options.resolve(configPath: conf).options.untrustedConfiguration
                == "\(conf).d has mode 0775: its group can write it")
        #expect(chmod(conf + ".d", 0o755) == 0)
        report = Options.resolve(configPath: conf)
        #expect(report.options.maxTries == 2 && report.options.untrustedConfiguration == nil)
        // A missing file is no problem: the defaults are what the site chose by leaving it out.
        #expect(Options.resolve(configPath: dir + "/absent.conf").options.untrustedConfiguration == nil)
    }

    private func write(_ path: String, _ text: String, mode: mode_t) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode)
        #expect(fd >= 0)
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        _ = fchmod(fd, mode)
        close(fd)
    }

    private func removeTree(_ dir: String) throws {
        for name in ["localauth.conf.d/10-site.conf", "localauth.conf.d", "localauth.conf"] {
            let path = dir + "/" + name
            if unlink(path) != 0 { _ = rmdir(path) }
        }
        _ = rmdir(dir)
    }

    @Test func moduleArgumentsOverrideTheFile() {
        var o = Options()
        _ = ConfigParser.apply(fileText: "max_tries = 2\n", source: "f", to: &o)
        let issues = ConfigParser.apply(arguments: ["max_tries=1", "debug", "authsucc", "policy=biometrics",
                                                    "max_tries=x", "nonsense"], to: &o)
        #expect(o.maxTries == 1)
        #expect(o.debug)
        #expect(o.policy == .biometrics)
        #expect(issues.map(\.description) == [
            "module arguments:5: `max_tries` must be a whole number from 1 to 10, not `x`; it stays `1`",  // the earlier argument's, not the default
            "module arguments:6: unknown option `nonsense`",
        ])
    }

    @Test func valuesAreBoundedAndControlCharactersRefused() {
        var o = Options()
        let issues = ConfigParser.apply(arguments: [
            "max_tries=11", "lockout_threshold=0", "max_tries=-1", "bus_timeout=nan", "state_dir=relative",
            "state_dir=/var/../etc", "reason=a\u{1b}[2Jb", "dbus_address=tcp:host=1.2.3.4",
            "max_tries=99999999999999999999999"], to: &o)
        #expect(issues.count == 9)
        #expect(o == Options())
        #expect(issues[6].description.contains("`a?[2Jb`"))  // logged safely
    }

    @Test func privilegedKeysCanBeRefusedPerSource() {
        var o = Options()
        let issues = ConfigParser.apply(arguments: ["state_dir=/tmp/x", "max_tries=2"], to: &o,
                                        allowing: { !Options.privilegedKeys.contains($0) })
        #expect(o.stateDir == "/var/lib/localauth")
        #expect(o.maxTries == 2)
        #expect(issues.first?.message == "option `state_dir` is ignored here (only root's configuration may set it)")
    }

    /// `localauthctl doctor` says a config line's issue and an untrusted file in the user's
    /// language; the file, line, key and values stay as written, and logs stay English.
    @Test func issuesAndUntrustedFilesAreSaidInEachLanguageWithWhatWasWritten() {
        #expect(Catalogues.ready)
        var o = Options()
        let path = "/etc/security/localauth.conf"
        let issues = ConfigParser.apply(fileText: "max_tries = 20\nbogus = 1\n", source: path, to: &o)
        #expect(issues.map(\.description) == [
            "\(path):1: `max_tries` must be a whole number from 1 to 10, not `20`; it stays `3`",
            "\(path):2: unknown option `bogus`"])
        #expect(issues[0].located(.simplifiedChinese) == "\(path):1: `max_tries` 必须是介于 1 和 10 之间的整数，而不是 `20`；仍为 `3`")
        #expect(issues[1].located(.traditionalChinese) == "\(path):2: 未知選項 `bogus`")
        let unsafe = ConfigFile.Problem.unsafe(.writable(path, mode: "0664", group: true, others: false))
        #expect(unsafe.description == "\(path) has mode 0664: its group can write it")
        #expect(unsafe.text(.simplifiedChinese) == "\(path) 的权限为 0664，其属组能写入")
        #expect(unsafe.text(.traditionalChinese) == "\(path) 的權限為 0664，其群組能寫入")
    }

    @Test func everyKeyIsInTheTableOnce() {
        #expect(Set(Options.allKeys).count == Options.allKeys.count)
        #expect(Options.privilegedKeys.isSubset(of: Set(Options.allKeys)))
    }
}
