import Foundation
import Testing
@testable import LocalAuth

/// OpenSSH's own tools, for vectors no code here wrote: ssh-keygen makes keys, signs
/// (SSHSIG, -Y sign) and verifies (-Y verify), hashes known_hosts (-H); openssl signs what
/// ssh-keygen will not (rsa-sha2-256). Each call works in a directory of its own, removed after.
enum SSHTool {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    struct Output {
        let status: Int32
        let stdout: [UInt8]
        let stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    static func run(_ path: String, _ arguments: [String], stdin: [UInt8]? = nil) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        try process.run()
        if let stdin {
            input.fileHandleForWriting.write(Data(stdin))
            try input.fileHandleForWriting.close()
        }
        // The tools here write little: stdout then stderr, read to their ends, before waiting.
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: Array(o), stderr: String(decoding: e, as: UTF8.self))
    }

    static func keygen(_ arguments: [String], stdin: [UInt8]? = nil) throws -> Output {
        try run("/usr/bin/ssh-keygen", arguments, stdin: stdin)
    }

    /// A fresh directory, removed when `body` returns or throws.
    static func inDirectory<T>(_ body: (URL) throws -> T) throws -> T {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("localauth-ssh-tests-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: dir) }
        return try body(dir)
    }

    /// A new key pair in `dir` ("ed25519", "ecdsa" with bits 256/384/521, "rsa"): its
    /// private key path and its public blob.
    static func newKey(in dir: URL, type: String, bits: Int? = nil) throws -> (path: String, blob: [UInt8]) {
        let path = dir.appendingPathComponent("key-\(type)-\(bits ?? 0)").path
        var args = ["-q", "-t", type, "-N", "", "-C", "test", "-f", path]
        if let bits { args += ["-b", String(bits)] }
        let made = try keygen(args)
        guard made.status == 0 else { throw Failure(description: "ssh-keygen -t \(type): \(made.stderr)") }
        let line = try String(contentsOfFile: path + ".pub", encoding: .utf8)
        guard let parsed = SSHPublicKey.parseLine(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw Failure(description: "an unreadable public key: \(line)")
        }
        return (path, parsed.blob)
    }

    /// An SSHSIG signature file's fields (PROTOCOL.sshsig "Blob format").
    struct SSHSig {
        var publicKey: [UInt8]
        var namespace: String
        var hashAlgorithm: String
        var signature: [UInt8]
    }

    /// `ssh-keygen -Y sign` of `message` with the key at `path`.
    static func sign(message: [UInt8], key path: String, namespace: String) throws -> SSHSig {
        let signed = try keygen(["-Y", "sign", "-f", path, "-n", namespace], stdin: message)
        guard signed.status == 0 else { throw Failure(description: "ssh-keygen -Y sign: \(signed.stderr)") }
        return try unarmor(signed.text)
    }

    static func unarmor(_ text: String) throws -> SSHSig {
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard let blob = SSHBase64.decode(body) else { throw Failure(description: "not base64: \(text)") }
        var r = SSHReader(blob)
        guard try r.take(6) == Array("SSHSIG".utf8), try r.uint32() == 1 else { throw Failure(description: "not SSHSIG v1") }
        let key = try r.string(limit: 1 << 16)
        let namespace = try r.text(limit: 256)
        _ = try r.string(limit: 1 << 16)
        let hash = try r.text(limit: 64)
        let signature = try r.string(limit: 1 << 16)
        try r.finish()
        return SSHSig(publicKey: key, namespace: namespace, hashAlgorithm: hash, signature: signature)
    }

    static func armor(_ sig: SSHSig) -> String {
        var w = SSHWriter()
        w.raw(Array("SSHSIG".utf8))
        w.uint32(1)
        w.string(sig.publicKey)
        w.string(sig.namespace)
        w.string([UInt8]())
        w.string(sig.hashAlgorithm)
        w.string(sig.signature)
        let base64 = Array(SSHBase64.encode(w.bytes))
        let lines = stride(from: 0, to: base64.count, by: 70).map { String(base64[$0..<min($0 + 70, base64.count)]) }
        return "-----BEGIN SSH SIGNATURE-----\n" + lines.joined(separator: "\n") + "\n-----END SSH SIGNATURE-----\n"
    }

    /// What an SSHSIG signature is over: "SSHSIG", namespace, reserved, hash name, H(message).
    static func signedData(message: [UInt8], namespace: String, hashAlgorithm: String = "sha512") -> [UInt8] {
        let hash = hashAlgorithm == "sha256" ? SSHDigest.hash(.sha256, message)! : SSHDigest.hash(.sha512, message)!
        var w = SSHWriter()
        w.raw(Array("SSHSIG".utf8))
        w.string(namespace)
        w.string([UInt8]())
        w.string(hashAlgorithm)
        w.string(hash)
        return w.bytes
    }
}

@Suite struct SSHToolTests {
    @Test func anArmoredSignatureReadsBackToTheSameFields() throws {
        let sig = SSHTool.SSHSig(publicKey: [1, 2, 3], namespace: "git", hashAlgorithm: "sha512",
                                 signature: [UInt8](repeating: 7, count: 100))
        let back = try SSHTool.unarmor(SSHTool.armor(sig))
        #expect(back.publicKey == sig.publicKey && back.namespace == "git" && back.signature == sig.signature)
    }
}
