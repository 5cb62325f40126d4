import Foundation
import LocalAuthProtocol
import Testing

/// The module's C against LocalAuthProtocol's table: Tests/protocol/module_wire.c, compiled
/// with the module's own request.c, kv.c, frame.c and result_map.c, prints the frames the
/// module sends and the result codes it knows. Every request must decode as the case this
/// table expects and encode back to the module's very bytes; every code and name must be
/// ResultCode's, and result_map.h's constants must name them. A change to either side alone
/// fails here.
@Suite struct ModuleWireTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let module = repo.appendingPathComponent("Sources/pam_localauth")

    /// What module_wire.c's requests must decode as, by the name it prints.
    static let expected: [String: Request] = [
        "authenticate": .authenticate(.init(
            user: "alice", service: "sudo", tty: "/dev/pts/3", stdinTTY: true, locale: "de_DE.UTF-8", language: "de:en",
            callerUID: 1000, pid: 4242, arguments: ["debug", "prompt=concurrent"])),
        "authenticate-locker": .authenticate(.init(
            user: "bob", service: "swaylock", silent: true, display: true, callerUID: 1001, pid: 77)),
        "authsucc-authtok": .authsucc(.init(
            user: "alice", service: "sudo", tty: "/dev/pts/3", stdinTTY: true, callerUID: 1000, pid: 4242,
            arguments: ["authsucc"]), .init(firstLine: true, proof: .authtok, readerUnreachable: true)),
        "authsucc-account": .authsucc(.init(
            user: "carol", service: "sshd", tty: "ssh", rhost: "192.0.2.7", callerUID: 0, pid: 900),
            .init(proof: .account)),
    ]

    /// module_wire's output lines, split in words; nil (with the reason recorded) when it
    /// could not be built or run.
    static let output: Result<[[String]], Failure> = run()

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func run() -> Result<[[String]], Failure> {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("localauth-module-wire-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = dir.appendingPathComponent("module_wire").path
        let sources = ["request.c", "kv.c", "frame.c", "result_map.c"].map { module.appendingPathComponent($0).path }
        let cc = ProcessInfo.processInfo.environment["CC"] ?? "cc"
        let build = execute("/usr/bin/env", [cc, "-std=c11", "-Wall", "-I", module.path, "-o", binary,
                                              repo.appendingPathComponent("Tests/protocol/module_wire.c").path]
                                + sources + ["-lpam"])
        guard build.status == 0 else { return .failure(Failure(description: "cc failed: \(build.output)")) }
        let ran = execute(binary, [])
        guard ran.status == 0 else { return .failure(Failure(description: "module_wire failed: \(ran.output)")) }
        return .success(ran.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) })
    }

    static func execute(_ path: String, _ arguments: [String]) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (-1, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    static func lines(_ kind: String) throws -> [[String]] {
        try output.get().filter { $0.first == kind }.map { Array($0.dropFirst()) }
    }

    @Test func everyRequestTheModuleSendsDecodesAsTheTableSaysAndEncodesBackToItsBytes() throws {
        let requests = try Self.lines("request")
        #expect(Set(requests.map { $0[0] }) == Set(Self.expected.keys))
        for line in requests {
            let name = line[0]
            let wire = try #require(Hex.decode(line[1]), "\(name): not hex")
            var decoder = FrameDecoder()
            decoder.append(wire)
            let frame = try #require(try decoder.next(), "\(name): not one whole frame")
            #expect(frame.kind == .request && decoder.pending == 0, "\(name)")
            let request = try Request.decode(frame.payload).get()
            #expect(request == Self.expected[name], "\(name)")
            // The Swift encoder writes the module's bytes, key for key and in its order.
            #expect(request.frame.encoded() == wire, "\(name): \(String(decoding: request.encode(), as: UTF8.self))")
        }
    }

    @Test func theModulesResultTableIsResultCodesCodeForCodeAndNameForName() throws {
        let module = try Self.lines("code").map { (Int($0[0]) ?? .min, $0[1]) }
        #expect(module.map { "\($0.0) \($0.1)" }.sorted()
                == ResultCode.wireTable.map { "\($0.code) \($0.name)" }.sorted())
        // Every code Apple's table has that the module's has not is one the root side never gives.
        for code in ResultCode.allCases where !module.contains(where: { $0.0 == code.rawValue }) {
            #expect(ResultCode.neverFromRootSide.contains(code), "\(code.name) is missing from result_map.c")
        }
    }

    /// result_map.h's `LA_CODE_NAME = N` constants: the same numbers under ResultCode's
    /// names (camelCase as UPPER_SNAKE), and no other.
    @Test func resultMapHeaderConstantsAreResultCodesNumbers() throws {
        let header = try String(contentsOf: Self.module.appendingPathComponent("result_map.h"), encoding: .utf8)
        var constants: [String: Int] = [:]
        for line in header.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "=" || $0 == "," }).map(String.init)
            guard words.count == 2, words[0].hasPrefix("LA_CODE_"), let value = Int(words[1]) else { continue }
            constants[words[0]] = value
        }
        var expected: [String: Int] = [:]
        for (code, name) in ResultCode.wireTable { expected["LA_CODE_" + Self.upperSnake(name)] = code }
        #expect(constants == expected)
    }

    static func upperSnake(_ name: String) -> String {
        var out = ""
        for c in name {
            if c.isUppercase { out += "_" }
            out += c.uppercased()
        }
        return out
    }
}
