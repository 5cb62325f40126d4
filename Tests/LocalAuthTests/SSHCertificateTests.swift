import Foundation
import Testing
@testable import LocalAuth

/// Host certificates made by ssh-keygen -s: the embedded key's signatures verify under the
/// certificate, a certificate whose CA signature is broken is malformed, and known_hosts
/// "@cert-authority" lines name the destinations ssh would accept it for.
@Suite struct SSHCertificateTests {
    struct Made {
        var certificate: [UInt8]
        var hostKey: [UInt8]
        var ca: [UInt8]
        var signature: [UInt8]
        var data: [UInt8]
    }

    /// A CA, a host key certified by it (`options`: ssh-keygen -s flags), and a signature by
    /// the host key.
    static func make(hostType: String = "ed25519", options: [String]) throws -> Made {
        try SSHTool.inDirectory { dir in
            let ca = try SSHTool.newKey(in: dir, type: "ecdsa", bits: 384)
            let host = try SSHTool.newKey(in: dir, type: hostType, bits: hostType == "rsa" ? 2048 : nil)
            let signed = try SSHTool.keygen(["-q", "-s", ca.path, "-I", "test host"] + options + [host.path + ".pub"])
            guard signed.status == 0 else { throw SSHTool.Failure(description: "ssh-keygen -s: \(signed.stderr)") }
            let line = try String(contentsOfFile: host.path + "-cert.pub", encoding: .utf8)
            let cert = try #require(SSHPublicKey.parseLine(line.trimmingCharacters(in: .whitespacesAndNewlines)))
            let message = Array("exchange hash".utf8)
            let sig = try SSHTool.sign(message: message, key: host.path, namespace: "file")
            return Made(certificate: cert.blob, hostKey: host.blob, ca: ca.blob, signature: sig.signature,
                        data: SSHTool.signedData(message: message, namespace: "file", hashAlgorithm: sig.hashAlgorithm))
        }
    }

    static let now = UInt64(Date().timeIntervalSince1970)

    @Test(arguments: ["ed25519", "ecdsa", "rsa"])
    func theCertifiedKeysSignaturesVerifyUnderTheCertificate(hostType: String) throws {
        let made = try Self.make(hostType: hostType, options: ["-h", "-n", "host.example.org"])
        let cert = try SSHCertificate(blob: made.certificate)
        #expect(cert.publicKey == made.hostKey && cert.signatureKey == made.ca)
        #expect(cert.certificateType == SSHCertificate.hostType && cert.principals == ["host.example.org"])
        #expect(cert.keyID == "test host" && cert.typeName.hasSuffix("-cert-v01@openssh.com"))
        #expect(throws: Never.self) { try HostKeySignature.verify(hostKey: made.certificate, signature: made.signature, data: made.data) }
        #expect(!HostKeySignature.isValid(hostKey: made.certificate, signature: made.signature, data: made.data + [1]))
    }

    @Test func aCertificateWithABrokenCASignatureIsMalformed() throws {
        let made = try Self.make(options: ["-h", "-n", "host.example.org"])
        var broken = made.certificate
        broken[broken.count - 1] ^= 0x01
        #expect(throws: HostKeySignature.Failure.self) { try SSHCertificate(blob: broken) }
        #expect(!HostKeySignature.isValid(hostKey: broken, signature: made.signature, data: made.data))
        // A principal changed after signing.
        let at = try #require(findSubsequence(Array("host.example.org".utf8), in: made.certificate))
        var renamed = made.certificate
        renamed[at] = UInt8(ascii: "g")
        #expect(throws: HostKeySignature.Failure.self) { try SSHCertificate(blob: renamed) }
        for cut in [0, 10, made.certificate.count / 2, made.certificate.count - 1] {
            #expect(throws: HostKeySignature.Failure.self) { try SSHCertificate(blob: Array(made.certificate.prefix(cut))) }
        }
        #expect(throws: HostKeySignature.Failure.self) { try SSHCertificate(blob: made.certificate + [0]) }
    }

    func findSubsequence(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }

    @Test func hostValidityFollowsSSHsRules() throws {
        let made = try Self.make(options: ["-h", "-n", "host.example.org,*.example.net", "-V", "-5m:+1h"])
        let cert = try SSHCertificate(blob: made.certificate)
        #expect(cert.isValidHostCertificate(for: "host.example.org", now: Self.now))
        #expect(cert.isValidHostCertificate(for: "git.example.net", now: Self.now))
        #expect(!cert.isValidHostCertificate(for: "other.example.org", now: Self.now))
        #expect(!cert.isValidHostCertificate(for: "host.example.org", now: cert.validAfter - 1))
        #expect(!cert.isValidHostCertificate(for: "host.example.org", now: cert.validBefore))
        let user = try SSHCertificate(blob: try Self.make(options: ["-n", "host.example.org"]).certificate)
        #expect(user.certificateType == 1 && !user.isValidHostCertificate(for: "host.example.org", now: Self.now))
        let critical = try SSHCertificate(blob: try Self.make(options: ["-h", "-n", "host.example.org", "-O", "force-command=true"]).certificate)
        #expect(critical.hasCriticalOptions && !critical.isValidHostCertificate(for: "host.example.org", now: Self.now))
    }

    @Test func aCertificateAuthorityLineNamesTheCandidatesTheCertificateIsValidFor() throws {
        let made = try Self.make(options: ["-h", "-n", "host.example.org,git.example.org", "-V", "-5m:+1h"])
        let caLine = "@cert-authority *.example.org ecdsa-sha2-nistp384 \(SSHBase64.encode(made.ca))"
        func names(_ text: String, _ candidates: [String], now: UInt64? = Self.now) throws -> KnownHosts.Match {
            try KnownHosts.match(text: text, hostKey: made.certificate, candidates: candidates, now: now)
        }
        #expect(try names(caLine, ["host.example.org"]).names == ["host.example.org"])
        // A port's lookup name must match the line's patterns, as ssh looks it up; the
        // principal is checked against the bare host.
        #expect(try names(caLine, ["[git.example.org]:2222", "other.example.org"]).names == [])
        let portLine = "@cert-authority [*.example.org]:2222 ecdsa-sha2-nistp384 \(SSHBase64.encode(made.ca))"
        #expect(try names(portLine, ["[git.example.org]:2222", "[other.example.org]:2222"]).names == ["[git.example.org]:2222"])
        #expect(try names(caLine, ["host.example.org"], now: nil).names == [])
        #expect(try names(caLine, ["host.example.org"], now: Self.now + 7200).names == [])
        #expect(try names("@cert-authority *.example.net ecdsa-sha2-nistp384 \(SSHBase64.encode(made.ca))",
                          ["host.example.org"]).names == [])
        // Not as a plain key: a CA's key on a plain line names nothing for the certificate.
        #expect(try names("*.example.org ecdsa-sha2-nistp384 \(SSHBase64.encode(made.ca))", ["host.example.org"]).names == [])
        // The embedded key on a plain line names as it would for that key.
        #expect(try names("plain.example ssh-ed25519 \(SSHBase64.encode(made.hostKey))", []).names == ["plain.example"])
        // A revoked CA or embedded key names nothing.
        for revoked in [made.ca, made.hostKey] {
            let type = SSHPublicKey.typeName(of: revoked)!
            let text = caLine + "\n@revoked * \(type) \(SSHBase64.encode(revoked))"
            #expect(try names(text, ["host.example.org"]) == .init(names: [], revoked: true))
        }
    }
}
