import Testing
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
            "/etc/security/localauth.conf:4: `scan_timeout` must be a number from 1 to 600, not `0.5`; the default is kept",
            "/etc/security/localauth.conf:5: `reuse_duration` must be a number from 0 to 300, not `301`; the default is kept",
            "/etc/security/localauth.conf:6: `policy` must be owner or biometrics, not `sometimes`; the default is kept",
            "/etc/security/localauth.conf:7: unknown option `frobnicate`",
            "/etc/security/localauth.conf:8: expected `key = value`, found `this line has no equals sign`",
        ])
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
            "module arguments:5: `max_tries` must be a whole number from 1 to 10, not `x`; the default is kept",
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

    @Test func everyKeyIsInTheTableOnce() {
        #expect(Set(Options.allKeys).count == Options.allKeys.count)
        #expect(Options.privilegedKeys.isSubset(of: Set(Options.allKeys)))
    }
}
