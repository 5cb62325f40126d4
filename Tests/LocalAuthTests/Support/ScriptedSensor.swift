#if canImport(Glibc)
import Glibc
#endif
@testable import LocalAuth

/// A sensor whose answers are scripted by the test, recording every call it gets.
/// `events` are returned by `nextEvent` in order; `.woken(-1)` in the script means
/// "block until a wake-up descriptor is readable" (to test invalidate and cancel).
final class ScriptedSensor: FingerprintSensor {
    var enrolled: Result<EnrolledSet, EvaluationError> = .success(EnrolledSet(
        deviceIdentity: "virtual_device/0", deviceName: "Virtual reader", fingers: ["right-index-finger"]))
    var claimError: EvaluationError?
    var events: [SensorEvent] = []
    /// Called each time the engine waits for the reader (to look at the store mid-scan).
    var whileWaiting: (() -> Void)?
    private(set) var calls: [String] = []

    var scansStarted: Int { calls.filter { $0 == "startVerify" }.count }

    func enrolledSet(for user: String) throws(EvaluationError) -> EnrolledSet {
        calls.append("enrolledSet")
        return try enrolled.get()
    }

    func claim(user: String) throws(EvaluationError) {
        calls.append("claim")
        if let claimError { throw claimError }
    }

    /// With `answersLater`, the claim's error comes at `awaitClaim` or `startVerify`, as
    /// fprintd's answer does; `whileClaiming` runs between the request and the answer.
    var answersLater = false
    var whileClaiming: (() -> Void)?
    private var pendingClaimError: EvaluationError?

    func requestClaim(user: String) throws(EvaluationError) {
        guard answersLater else { return try claim(user: user) }
        calls.append("requestClaim")
        pendingClaimError = claimError
        whileClaiming?()
    }

    func awaitClaim() throws(EvaluationError) {
        calls.append("awaitClaim")
        if let error = pendingClaimError { pendingClaimError = nil; throw error }
    }

    func startVerify() throws(EvaluationError) -> VerifyStarted {
        if let error = pendingClaimError { pendingClaimError = nil; throw error }
        calls.append("startVerify")
        return VerifyStarted(finger: "right-index-finger", scanType: .press)
    }

    func nextEvent(deadline: Int64, wakeOn: [Int32]) -> SensorEvent {
        calls.append("nextEvent")
        whileWaiting?()
        guard !events.isEmpty else { return .timeout }
        let next = events.removeFirst()
        if next == .woken(-1) { return blockUntilWoken(wakeOn) }
        return next
    }

    /// What `collectVerdict` reports as already received (a verdict racing a cancel).
    var verdictAtStop: SensorEvent?

    func collectVerdict() -> SensorEvent? {
        defer { verdictAtStop = nil }
        return verdictAtStop
    }

    func stopVerify() { calls.append("stopVerify") }
    func release() { calls.append("release") }

    private func blockUntilWoken(_ fds: [Int32]) -> SensorEvent {
        var polls = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while poll(&polls, nfds_t(polls.count), 5000) < 0 && errno == EINTR {}
        if let ready = polls.first(where: { $0.revents != 0 }) { return .woken(ready.fd) }
        return .timeout
    }
}

final class FixedClock: Clock {
    var time: Timestamp
    init(_ time: Timestamp) { self.time = time }
    func now() -> Timestamp { time }
}

final class FakeSystem: SystemFacts {
    var boot: String? = "boot-1"
    var usablePassword: Bool? = true
    func bootID() -> String? { boot }
    func hasUsablePassword(_ user: UserName) -> Bool? { usablePassword }
}

/// Records what the user would see, and answers password prompts.
final class RecordingUI: AuthenticationUI {
    private(set) var shown: [UserMessage] = []
    var password: String? = "secret"
    private(set) var passwordPrompts = 0

    func show(_ message: UserMessage, error: Bool) { shown.append(message) }
    func askPassword(prompt: String) -> [UInt8]? {
        passwordPrompts += 1
        return password.map { Array($0.utf8) }
    }
    var texts: [String] { shown.map { $0.text(.english) } }
}

final class FixedPassword: PasswordVerifier {
    func verify(user: UserName, password: [UInt8]) -> Bool { password == Array("secret".utf8) }
}

/// A fresh state directory under /tmp, removed by `remove()`.
final class TempDir {
    let path: String
    init() {
        var template = Array("/tmp/localauth-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = String(cString: made!)
    }
    /// Removes the directory and what the tests put in it (one level of subdirectories).
    func remove() { removeTree(path) }

    private func removeTree(_ dir: String) {
        if let d = opendir(dir) {
            while let entry = readdir(d) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
                }
                if name == "." || name == ".." { continue }
                let child = dir + "/" + name
                var st = stat()
                if lstat(child, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR {
                    chmod(child, 0o700)
                    removeTree(child)
                } else {
                    unlink(child)
                }
            }
            closedir(d)
        }
        rmdir(dir)
    }
}
