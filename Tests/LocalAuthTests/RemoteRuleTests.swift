import Testing
@testable import LocalAuth

/// "Is it remote?": RemoteRule, the one rule, for a PAM handle and a logind session.
@Suite struct RemoteRuleTests {
    static func handle(_ rhost: String, tty: String = "pts/1", host: String? = "desk") -> Origin {
        RemoteRule.origin(.handle(rhost: rhost, tty: tty, hostName: host))
    }

    @Test(arguments: ["", "localhost", "127.0.0.1", "::1", "desk", "DESK", "Desk"])
    func thisMachineIsNoOtherMachine(_ rhost: String) {
        let origin = Self.handle(rhost)
        #expect(!origin.isAnotherMachine)
        #expect(!origin.fromElsewhere)
        #expect(origin == (rhost.isEmpty ? .here : .namesThisMachine(rhost: rhost)))
    }

    @Test(arguments: ["192.0.2.7", "desk.example.org", "laptop", "127.0.0.2", "::ffff:127.0.0.1"])
    func anyOtherNameIsAnotherMachine(_ rhost: String) {
        let origin = Self.handle(rhost)
        #expect(origin == .anotherMachine(rhost: rhost))
        #expect(origin.isAnotherMachine)
        #expect(origin.fromElsewhere)
        #expect(origin.networked == "PAM_RHOST is set")
    }

    @Test func withoutAHostNameOnlyLoopbackIsThisMachine() {
        #expect(Self.handle("desk", host: nil).isAnotherMachine)
        #expect(!Self.handle("localhost", host: nil).isAnotherMachine)
        #expect(!Self.handle("", host: nil).isAnotherMachine)
    }

    @Test func sshdIsFromElsewhereEvenFromLoopback() {
        let tunnel = Self.handle("127.0.0.1", tty: "ssh")
        #expect(tunnel == .sshd(rhost: "127.0.0.1"))
        #expect(tunnel.fromElsewhere)
        #expect(!tunnel.isAnotherMachine)
        #expect(tunnel.networked == "PAM_RHOST is set")
        let bare = Self.handle("", tty: "ssh")
        #expect(bare == .sshd(rhost: ""))
        #expect(bare.networked == "PAM_TTY is ssh")
        #expect(Self.handle("192.0.2.7", tty: "ssh") == .anotherMachine(rhost: "192.0.2.7"))
    }

    @Test func aLocalHandleIsNotNetworked() {
        #expect(Self.handle("").networked == nil)
        #expect(Self.handle("", tty: "tty2").networked == nil)
        #expect(Self.handle("", tty: ":0").networked == nil)
        // sudo's pam_rhost flag: networked as a handle, no login from elsewhere.
        #expect(Self.handle("desk").networked == "PAM_RHOST is set")
    }

    @Test func theRhostOfAnOrigin() {
        #expect(Self.handle("192.0.2.7").rhost == "192.0.2.7")
        #expect(Self.handle("localhost", tty: "ssh").rhost == "localhost")
        #expect(Self.handle("").rhost == "")
    }

    static func session(remote: Bool?, host: String = "", seat: String = "seat0", cls: String = "user") -> LogindSession {
        LogindSession(id: "4", uid: 1000, remote: remote, remoteHost: host, seat: seat, sessionClass: cls, active: true)
    }

    @Test func sessions() {
        func origin(_ s: LogindSession) -> Origin { RemoteRule.origin(.session(s)) }
        #expect(origin(Self.session(remote: false)) == .here)
        #expect(origin(Self.session(remote: nil)) == .remoteSession(.remoteUnknown))
        #expect(origin(Self.session(remote: nil, host: "192.0.2.7")) == .remoteSession(.remoteUnknown))
        #expect(origin(Self.session(remote: true)) == .remoteSession(.remote(host: "")))
        #expect(origin(Self.session(remote: true, host: "192.0.2.7")) == .remoteSession(.remote(host: "192.0.2.7")))
        // logind calls a loopback tunnel local; its host still names it.
        #expect(origin(Self.session(remote: false, host: "127.0.0.1")) == .remoteSession(.remote(host: "127.0.0.1")))
        #expect(origin(Self.session(remote: false, seat: "")) == .remoteSession(.noSeat))
        #expect(origin(Self.session(remote: false, seat: "", cls: "background")) == .here)
        #expect(origin(Self.session(remote: false, seat: "", cls: "greeter")) == .here)
        for s in [Self.session(remote: nil), Self.session(remote: true), Self.session(remote: false, seat: "")] {
            #expect(origin(s).fromElsewhere)
            #expect(s.reachesFromElsewhere)
            #expect(origin(s).networked == nil)
            #expect(!origin(s).isAnotherMachine)
        }
        #expect(!Self.session(remote: false).reachesFromElsewhere)
    }

    @Test func remoteHostAsksTheRule() {
        #expect(!RemoteHost.namesAnotherMachine(""))
        #expect(!RemoteHost.namesAnotherMachine("localhost"))
        #expect(RemoteHost.namesAnotherMachine("192.0.2.7"))
        #expect(RemoteHost.namesAnotherMachine("192.0.2.7") == RemoteRule.handle(rhost: "192.0.2.7", tty: "").isAnotherMachine)
    }
}
