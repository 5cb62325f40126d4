#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LocalAuth

/// TouchPurpose: sudo's and su's command lines, polkit's words, the line and the log field.
@Suite struct TouchPurposeTests {
    private func sudo(_ words: String...) -> SudoCommandLine? { SudoCommandLine.parse(["sudo"] + words) }
    private func purpose(_ words: [String], service: String = "sudo", program: String? = "sudo",
                         user: String = "alice", root: Bool = true, cut: Bool = false) -> TouchPurpose {
        TouchPurpose.of(.init(service: service, user: user, rootPeer: root, installedProgram: program,
                              arguments: words, argumentsCut: cut, polkitAgentHelper: false, polkit: nil))
    }

    @Test func sudoRunsItsCommandAsRootByDefault() {
        #expect(sudo("apt", "upgrade") == SudoCommandLine(mode: .run(command: ["apt", "upgrade"]), user: nil, group: nil))
        #expect(purpose(["sudo", "apt", "upgrade"]) == .runCommand(command: "apt upgrade", user: "root"))
        #expect(purpose(["sudo", "apt", "upgrade"]).text(Language.english) == "Touch the reader to run `apt upgrade` as root")
        #expect(purpose(["sudo", "apt", "upgrade"]).logField == "approves=\"run `apt upgrade` as root\"")
    }

    @Test func sudoOptionsInEveryForm() {
        for words in [["-u", "bob", "id"], ["-ubob", "id"], ["--user=bob", "id"], ["--user", "bob", "id"], ["--us=bob", "id"],
                      ["-n", "-E", "-H", "-k", "-u", "bob", "id"], ["-nEHu", "bob", "id"], ["-D", "/tmp", "-C", "5", "-p", "P: ",
                      "-r", "role", "-t", "type", "-T", "10", "-u", "bob", "-hhost", "--", "id"], ["-A", "-S", "-b", "-u", "bob", "id"]] {
            #expect(sudo(words)?.mode == .run(command: ["id"]), "\(words)")
            #expect(sudo(words)?.user == "bob", "\(words)")
        }
        // Options stop at the command: its own options are its.
        #expect(sudo("ls", "-u", "x")?.mode == .run(command: ["ls", "-u", "x"]))
        #expect(sudo("--", "-weird")?.mode == .run(command: ["-weird"]))
        #expect(sudo("FOO=1", "env")?.mode == .run(command: ["FOO=1", "env"]))
    }

    private func sudo(_ words: [String]) -> SudoCommandLine? { SudoCommandLine.parse(["sudo"] + words) }

    @Test func sudoShellsEditsListsAndValidates() {
        #expect(purpose(["sudo", "-i"]) == .shell(user: "root"))
        #expect(purpose(["sudo", "-s", "-u", "bob"]) == .shell(user: "bob"))
        #expect(purpose(["sudo", "-i", "make", "install"]) == .runCommand(command: "make install", user: "root"))
        #expect(purpose(["sudoedit", "/etc/hosts"], program: "sudo") == .edit(files: "/etc/hosts", user: "root"))
        #expect(purpose(["sudo", "-e", "/etc/a b"]) == .edit(files: "'/etc/a b'", user: "root"))
        #expect(purpose(["sudo", "-l"]) == .sudoOther(.list))
        #expect(purpose(["sudo", "-v"]) == .sudoOther(.validate))
        #expect(purpose(["sudo", "-g", "adm", "id"]) == .runCommand(command: "id", user: "alice:adm"))
        #expect(purpose(["sudo", "-u", "bob", "-g", "adm", "id"]) == .runCommand(command: "id", user: "bob:adm"))
    }

    @Test func whatSudoWouldRefuseNamesNothing() {
        #expect(sudo("--bogus", "id") == nil)
        #expect(sudo("-X", "id") == nil)
        #expect(sudo("-u") == nil)
        #expect(sudo("-h") == nil)
        #expect(sudo("-V") == nil)
        #expect(sudo("-e") == nil)
        #expect(sudo("-k") == nil)
        #expect(sudo("--p", "x") == nil)   // --preserve-env or --preserve-groups or --prompt
        #expect(purpose(["sudo", "--bogus"]) == .unknown(service: "sudo"))
    }

    @Test func onlyTheSystemsSudoUnderSudosService() {
        #expect(purpose(["sudo", "id"], program: nil) == .unknown(service: "sudo"))
        #expect(purpose(["sudo", "id"], program: "python3") == .unknown(service: "sudo"))
        #expect(purpose(["sudo", "id"], service: "passwd") == .unknown(service: "passwd"))
        #expect(purpose(["sudo", "id"], root: false) == .unknown(service: "sudo"))
        #expect(purpose(["sudo", "id"], service: "sudo-i") == .runCommand(command: "id", user: "root"))
    }

    @Test func controlsAndLengthInACommandGiveOneShortLine() {
        let shown = purpose(["sudo", "echo", "\u{1B}[2J", "a\rb", "c\nd", "\u{202E}txt"])
        // An argument that held a control is quoted, the control a space.
        #expect(shown == .runCommand(command: "echo ' [2J' 'a b' 'c d' txt", user: "root"))
        let long = purpose(["sudo", "echo"] + Array(repeating: String(repeating: "z", count: 100), count: 100))
        guard case .runCommand(let command, _) = long else { Issue.record("\(long)"); return }
        #expect(command.unicodeScalars.count == TouchPurpose.partLimit && command.hasSuffix("..."))
        #expect(!long.text(.english).contains("\n") && !long.logField.contains("\n"))
        // A command line read in part is marked so, however short what was read.
        #expect(purpose(["sudo", "id"], cut: true) == .runCommand(command: "id...", user: "root"))
    }

    @Test func suNamesTheTargetAndItsCommand() {
        let su = { (words: [String]) in self.purpose(["su"] + words, service: "su", program: "su", user: "bob") }
        #expect(su(["bob"]) == .switchUser(user: "bob", command: nil))
        #expect(su(["-", "bob"]) == .switchUser(user: "bob", command: nil))
        #expect(su(["-c", "id -u", "bob"]) == .switchUser(user: "bob", command: "id -u"))
        #expect(su(["bob", "-c", "id"]) == .switchUser(user: "bob", command: "id"))
        #expect(su(["--command=make install", "bob"]) == .switchUser(user: "bob", command: "make install"))
        #expect(su(["-l", "-s", "/bin/sh", "bob", "-c", "x\ny"]) == .switchUser(user: "bob", command: "x y"))
        #expect(su(["-cid", "bob"]) == .switchUser(user: "bob", command: "id"))
        #expect(su(["bob", "script.sh", "a b"]) == .switchUser(user: "bob", command: "script.sh 'a b'"))
        #expect(su(["--bogus", "bob"]) == .unknown(service: "su"))
        #expect(su(["-c", "id", "bob"]).text(.english) == "Touch the reader to run `id` as bob")
        #expect(su(["bob"]).text(.english) == "Touch the reader to switch to bob")
        #expect(purpose(["su", "bob"], service: "su", program: "busybox", user: "bob") == .unknown(service: "su"))
    }

    @Test func polkitIsNamedOnlyFromRootsWords() {
        let words = PolkitPurpose(action: "org.freedesktop.policykit.exec",
                                  message: "Authentication is needed to run `/usr/bin/true' as\nthe super user",
                                  program: "/usr/bin/true")
        func facts(helper: Bool, root: Bool = true, service: String = "polkit-1") -> TouchPurpose {
            TouchPurpose.of(.init(service: service, user: "alice", rootPeer: root, installedProgram: "polkit-agent-helper-1",
                                  arguments: [], argumentsCut: false, polkitAgentHelper: helper, polkit: words))
        }
        guard let words else { Issue.record("no words"); return }
        #expect(words.message == "Authentication is needed to run '/usr/bin/true' as the super user")
        #expect(facts(helper: true) == .polkit(words))
        #expect(facts(helper: true).text(.english) == "Touch the reader to approve \"Authentication is needed to run "
            + "'/usr/bin/true' as the super user\" (org.freedesktop.policykit.exec, /usr/bin/true)")
        #expect(facts(helper: true).logField == "approves=\"polkit org.freedesktop.policykit.exec for /usr/bin/true: "
            + "Authentication is needed to run '/usr/bin/true' as the super user\"")
        // Not polkit's agent helper: the words are never used.
        #expect(facts(helper: false) == .unknown(service: "polkit-1"))
        #expect(facts(helper: true, service: "sudo") == .unknown(service: "sudo"))
        let unnamed = TouchPurpose.of(.init(service: "polkit-1", user: "alice", rootPeer: true, installedProgram: nil,
                                            arguments: [], argumentsCut: false, polkitAgentHelper: true, polkit: nil))
        #expect(unnamed == .polkitUnnamed)
        #expect(unnamed.logField == "approves=\"a polkit request\"")
    }

    @Test func polkitsHandoffLinesRoundTripAndRefuseOthers() {
        guard let words = PolkitPurpose(action: "a.b", message: nil, program: "/usr/bin/x") else { Issue.record("nil"); return }
        #expect(words.handoffLines == ["polkit", "a.b", "", "/usr/bin/x"])
        #expect(PolkitPurpose(handoffLines: words.handoffLines.map { Substring($0) }) == words)
        #expect(PolkitPurpose(handoffLines: ["polkit", "", "m", "p"]) == nil)
        #expect(PolkitPurpose(handoffLines: ["ssh-agent", "a", "m", "p"]) == nil)
        #expect(PolkitPurpose(handoffLines: ["polkit", "a", "m"]) == nil)
        #expect(PolkitPurpose(action: "a\u{1B}]0;x\u{7}", message: "\n", program: nil)?.action == "a ]0;x")
        #expect(PolkitPurpose(action: "a", message: " \n ", program: "\u{202E}")?.message == nil)
    }

    @Test func locksAndGreetersShowNothingNew() {
        #expect(purpose([], service: "kde-fingerprint", root: false) == .unlock)
        #expect(!TouchPurpose.unlock.isShown)
        #expect(purpose([], service: "gdm-password", program: "gdm-session-worker", user: "alice") == .login(service: "gdm-password"))
        #expect(!TouchPurpose.login(service: "login").isShown)
        #expect(!TouchPurpose.unknown(service: "passwd").isShown)
        #expect(TouchPurpose.polkitUnnamed.isShown && TouchPurpose.app(program: "/usr/bin/x").isShown)
        #expect(purpose([], service: "my\nservice\"x", root: false).logField == "approves=\"my?service'x request\"")
        #expect(purpose([], service: "lock result=success", root: false).logField == "approves=\"lock?result?success request\"")
    }

    @Test func everyLineSaysTouchTheReader() {
        let all: [TouchPurpose] = [.runCommand(command: "id", user: "root"), .shell(user: "root"), .edit(files: "f", user: "root"),
                                   .sudoOther(.list), .sudoOther(.validate), .switchUser(user: "bob", command: nil),
                                   .switchUser(user: "bob", command: "id"), .polkitUnnamed, .app(program: "/usr/bin/x"),
                                   .unknown(service: "passwd")]
        for p in all {
            #expect(p.text(.english).hasPrefix("Touch the reader to"), "\(p)")
            #expect(!p.text(.english).contains("%"), "\(p)")
        }
    }

    @Test func theCommandLineIsReadFromProcAndKeptOnlyWhileTheCallerRuns() {
        let (words, cut) = ProcCommandLine.read(pid: getpid())
        #expect(!words.isEmpty && !cut)
        #expect(words == CommandLine.arguments)
        let kept = TouchPurpose.read(service: "sudo", user: "alice", rootPeer: true, pid: getpid(), stillRuns: { true })
        #expect(kept.arguments == CommandLine.arguments)
        let gone = TouchPurpose.read(service: "sudo", user: "alice", rootPeer: true, pid: getpid(), stillRuns: { false })
        #expect(gone.arguments.isEmpty && gone.installedProgram == nil)
        let notRoot = TouchPurpose.read(service: "sudo", user: "alice", rootPeer: false, pid: getpid(), stillRuns: { true })
        #expect(notRoot.arguments.isEmpty)
        #expect(TouchPurpose.of(gone) == .unknown(service: "sudo"))
    }
}
