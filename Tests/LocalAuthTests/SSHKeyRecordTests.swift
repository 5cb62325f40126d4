import LocalAuth
import Testing

/// An SSH key's record as root keeps it, its public forms (SSHKeyText) and the listing the
/// answers carry (SSHKeyListing).
@Suite struct SSHKeyRecordTests {
    static let point: [UInt8] = [0x04] + (1...64).map { UInt8($0) }

    static func record(requirement: SSHKeyRequirement = .biometryCurrentSet) -> SSHKeyRecord {
        SSHKeyRecord(name: "work", uid: 1000, requirement: requirement, reuseSeconds: 300, forwardingAllowed: true,
                     comment: "alice@laptop (git)",
                     domainState: requirement == .biometryCurrentSet ? String(repeating: "cd", count: 32) : nil,
                     created: 1_765_000_000, privateKey: [UInt8](repeating: 7, count: 32), publicKey: point)
    }

    @Test(arguments: SSHKeyRequirement.allCases)
    func aRecordReadsBackAsItWasWritten(_ requirement: SSHKeyRequirement) throws {
        let record = Self.record(requirement: requirement)
        #expect(try SSHKeyRecord.decode(record.encoded()) == record)
    }

    @Test func aRecordOutOfItsRangesIsDamaged() {
        let good = String(decoding: Self.record().encoded(), as: UTF8.self)
        let broken = [
            good.swappingFirst("reuse=300", "reuse=301"),
            good.swappingFirst("reuse=300", "reuse=-1"),
            good.swappingFirst("forwarding=1", "forwarding=yes"),
            good.swappingFirst("name=work", "name=../work"),
            good.swappingFirst("requirement=biometry-current-set", "requirement=biometry"),  // a domain state without the rule
            good.swappingFirst("requirement=biometry-current-set", "requirement=default"),
            good.swappingFirst("public_key=04", "public_key=02"),
            good.swappingFirst("version=1", "version=2"),
            good + "name=again\n",
            good.swappingFirst("comment=", "comment=0a"),  // a newline in the comment
        ]
        for text in broken {
            #expect(throws: SSHKeyRecord.Damage.self, "\(text)") { try SSHKeyRecord.decode(Array(text.utf8)) }
        }
    }

    @Test func commentsAndReuseWindowsHaveBounds() {
        #expect(SSHKeyRecord.commentProblem("") == nil && SSHKeyRecord.commentProblem("a b@c") == nil)
        #expect(SSHKeyRecord.commentProblem("a\nssh-ed25519 AAAA") != nil)
        #expect(SSHKeyRecord.commentProblem(String(repeating: "c", count: 129)) != nil)
        #expect(SSHKeyRecord.reuseProblem(0) == nil && SSHKeyRecord.reuseProblem(300) == nil)
        #expect(SSHKeyRecord.reuseProblem(301) != nil && SSHKeyRecord.reuseProblem(-1) != nil)
    }

    /// The blob and fingerprint as OpenSSH computes them: the known key below is
    /// `ssh-keygen -lf` of the same line (RFC 5656's encoding, base64 of SHA-256 unpadded).
    @Test func thePublicKeyInOpenSSHsForms() throws {
        let blob = SSHKeyText.blob(point: Self.point)
        #expect(blob.count == 104)
        #expect(Array(blob.prefix(4)) == [0, 0, 0, 19] && String(decoding: blob[4..<23], as: UTF8.self) == "ecdsa-sha2-nistp256")
        #expect(Array(blob[23..<35]) == [0, 0, 0, 8] + Array("nistp256".utf8))
        #expect(Array(blob[35..<39]) == [0, 0, 0, 65] && Array(blob[39...]) == Self.point)
        #expect(SSHKeyText.point(blob: blob) == Self.point)
        var other = blob
        other[10] ^= 1
        #expect(SSHKeyText.point(blob: other) == nil && SSHKeyText.point(blob: blob + [0]) == nil)
        let line = SSHKeyText.openSSHLine(point: Self.point, comment: "c")
        #expect(line.hasPrefix("ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAECAwQF") && line.hasSuffix(" c"))
        #expect(SSHKeyText.openSSHLine(point: Self.point, comment: "").split(separator: " ").count == 2)
        #expect(SSHKeyText.allowedSignersLine(principal: "alice@example.org", point: Self.point)
                == "alice@example.org namespaces=\"git\" " + SSHKeyText.openSSHLine(point: Self.point, comment: ""))
        let fp = SSHKeyText.fingerprint(point: Self.point)
        #expect(fp.hasPrefix("SHA256:") && fp.count == 7 + 43 && !fp.hasSuffix("="))
    }

    @Test func aPrincipalIsOneWord() {
        #expect(SSHKeyText.principalProblem("alice@example.org") == nil)
        for bad in ["", "a b", "a,b", "\"a\"", "#a", "a\nb", String(repeating: "a", count: 257)] {
            #expect(SSHKeyText.principalProblem(bad) != nil, "\(bad)")
        }
    }

    @Test func aListingCarriesThePublicFactsOnly() throws {
        let record = Self.record()
        let listing = SSHKeyListing(record)
        #expect(!listing.line.contains(String(repeating: "07", count: 32)))
        let back = try #require(SSHKeyListing(line: listing.line))
        #expect(back == listing && back.comment == "alice@laptop (git)" && back.reuseSeconds == 300)
        var bare = record
        bare.comment = ""
        #expect(SSHKeyListing(line: SSHKeyListing(bare).line)?.comment == "")
        #expect(SSHKeyListing(line: listing.line + " x") == nil)
        #expect(SSHKeyListing(line: listing.line.swappingFirst(" 300 ", " 999 ")) == nil)
    }
}

extension String {
    func swappingFirst(_ target: String, _ replacement: String) -> String {
        guard let range = firstRange(of: target) else { return self }
        var out = self
        out.replaceSubrange(range, with: replacement)
        return out
    }
}
