import Foundation
import Testing
@testable import LocalAuth

/// The names a known_hosts gives a verified host key (sshd(8) "SSH_KNOWN_HOSTS FILE
/// FORMAT"); hashed entries as `ssh-keygen -H` writes them.
@Suite struct SSHKnownHostsTests {
    static func key(_ fill: UInt8) -> [UInt8] {
        var w = SSHWriter()
        w.string("ssh-ed25519")
        w.string([UInt8](repeating: fill, count: 32))
        return w.bytes
    }
    static let host = key(1)
    static let other = key(2)
    static func entry(_ patterns: String, _ blob: [UInt8] = host) -> String {
        "\(patterns) ssh-ed25519 \(SSHBase64.encode(blob))"
    }

    func names(_ text: String, _ candidates: [String] = []) throws -> [String] {
        try KnownHosts.match(text: text, hostKey: Self.host, candidates: candidates).names
    }

    @Test func plainEntriesGiveTheirNames() throws {
        let text = [
            "# a comment", "",
            Self.entry("example.org,192.0.2.1"),
            Self.entry("elsewhere.example", Self.other),
            "\t" + Self.entry("[Example.ORG]:2222") + " a comment\r",
            Self.entry("example.org"),
        ].joined(separator: "\n")
        #expect(try names(text) == ["example.org", "192.0.2.1", "[example.org]:2222"])
        #expect(try KnownHosts.match(text: text, hostKey: Self.other, candidates: []).names == ["elsewhere.example"])
        #expect(try KnownHosts.match(text: text, hostKey: Self.key(3), candidates: []) == .init(names: [], revoked: false))
    }

    @Test func candidatesAreSSHsLookupNames() {
        #expect(KnownHosts.candidate(host: "Git.Example.org") == "git.example.org")
        #expect(KnownHosts.candidate(host: "git.example.org", port: 2222) == "[git.example.org]:2222")
        #expect(KnownHosts.candidate(host: "::1", port: 22) == "::1")
    }

    @Test func wildcardsGiveTheCandidatesTheyMatchAndNegationsExclude() throws {
        let text = Self.entry("*.example.org,!bad.example.org,git?.example.net")
        #expect(try names(text) == [])
        #expect(try names(text, ["git.example.org"]) == ["git.example.org"])
        #expect(try names(text, ["bad.example.org"]) == [])
        #expect(try names(text, ["git1.example.net", "git12.example.net", "example.org"]) == ["git1.example.net"])
        #expect(try names(Self.entry("a.example,!a.example")) == [])
        #expect(try names(Self.entry("a.example,!*.example"), ["b.example"]) == [])
    }

    @Test func aRevokedKeyGivesNoName() throws {
        let text = [Self.entry("example.org"), "@revoked " + Self.entry("*")].joined(separator: "\n")
        #expect(try KnownHosts.match(text: text, hostKey: Self.host, candidates: ["example.org"]) == .init(names: [], revoked: true))
        // Another key's revocation does not touch this one.
        let otherRevoked = [Self.entry("example.org"), "@revoked " + Self.entry("*", Self.other)].joined(separator: "\n")
        #expect(try names(otherRevoked) == ["example.org"])
    }

    @Test func aCertificateAuthorityOrUnknownMarkerGivesNoName() throws {
        #expect(try names("@cert-authority " + Self.entry("*.example.org"), ["a.example.org"]) == [])
        #expect(try names("@other " + Self.entry("example.org")) == [])
    }

    @Test func linesThatLieOrBreakAreSkipped() throws {
        let lying = "example.org ecdsa-sha2-nistp256 \(SSHBase64.encode(Self.host))"
        #expect(try names(lying) == [])
        let text = [
            "example.org", "example.org ssh-ed25519", "example.org ssh-ed25519 !!!!", "@revoked",
            "bad\u{1b}name ssh-ed25519 \(SSHBase64.encode(Self.host))",
            "|1|junk|junk ssh-ed25519 \(SSHBase64.encode(Self.host))",
            "|1|\(SSHBase64.encode([UInt8](repeating: 0, count: 19)))|\(SSHBase64.encode([UInt8](repeating: 0, count: 20)))"
                + " ssh-ed25519 \(SSHBase64.encode(Self.host))",
            Self.entry("good.example"),
        ].joined(separator: "\n")
        #expect(try names(text, ["x"]) == ["good.example"])
    }

    @Test func tooLargeATextIsRefused() {
        let big = [UInt8](repeating: 0x20, count: KnownHosts.maxBytes + 1)
        #expect(throws: KnownHosts.Failure.tooLarge(KnownHosts.maxBytes + 1)) {
            try KnownHosts.match(text: big, hostKey: Self.host, candidates: [])
        }
    }

    @Test func randomLinesNeverTrap() throws {
        var text: [UInt8] = []
        for _ in 0..<3000 {
            text.append([0x20, 0x0a, 0x2c, 0x21, 0x2a, 0x7c, 0x40, 0x41, 0x31, 0x3d, 0xff].randomElement()!)
        }
        text += Array(("\n" + Self.entry("last.example")).utf8)
        #expect(try KnownHosts.match(text: text, hostKey: Self.host, candidates: ["a"]).names.last == "last.example")
    }

    /// ssh-keygen -H hashes the file; only a candidate that is the entry's name comes out,
    /// as ssh-keygen -F finds it.
    @Test func hashedEntriesGiveTheCandidateThatHashes() throws {
        let (hashed, found) = try SSHTool.inDirectory { dir in
            let file = dir.appendingPathComponent("known_hosts")
            let plain = [Self.entry("host.example.org"), Self.entry("[host.example.org]:2222"),
                         Self.entry("someone.example", Self.other)].joined(separator: "\n") + "\n"
            try plain.write(to: file, atomically: true, encoding: .utf8)
            let hashing = try SSHTool.keygen(["-H", "-f", file.path])
            guard hashing.status == 0 else { throw SSHTool.Failure(description: "ssh-keygen -H: \(hashing.stderr)") }
            let found = try SSHTool.keygen(["-F", "[host.example.org]:2222", "-f", file.path])
            return (try String(contentsOf: file, encoding: .utf8), found)
        }
        #expect(hashed.split(separator: "\n").allSatisfy { $0.hasPrefix("|1|") } && !hashed.contains("example"))
        #expect(found.status == 0)
        #expect(try names(hashed) == [])
        #expect(try names(hashed, [KnownHosts.candidate(host: "Host.example.org")]) == ["host.example.org"])
        #expect(try names(hashed, ["elsewhere.example", KnownHosts.candidate(host: "host.example.org", port: 2222)])
                == ["[host.example.org]:2222"])
        #expect(try names(hashed, ["someone.example"]) == [])
        #expect(try KnownHosts.match(text: hashed, hostKey: Self.other, candidates: ["someone.example"]).names == ["someone.example"])
        // Only the first maxCandidates candidates are tried.
        let many = (0..<KnownHosts.maxCandidates).map { "filler\($0)" } + ["host.example.org"]
        #expect(try names(hashed, many) == [])
    }
}
