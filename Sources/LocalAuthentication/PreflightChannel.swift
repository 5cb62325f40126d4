import Foundation
import LocalAuthProtocol
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The preflight's way to localauthd: one connection per process, kept open while the
/// service says so (`kept=1`), so that a `canEvaluatePolicy` is one request and one answer
/// on a socket that is already there (docs/SERVICE.md, "Preflight"). What is kept is the
/// connection, never an answer: each call is answered by the service from root's state at
/// the time.
///
/// A kept connection the service has closed meanwhile (idle, restarted, its limit) fails
/// before any answer has come; the request is then sent once more on a new connection (a
/// preflight changes nothing, so asking twice is harmless). A child after fork does not
/// use its parent's connection: the service knows it as the parent's.
enum PreflightChannel {
    private struct Kept {
        let fd: Int32
        let pid: pid_t
        let path: String
    }

    private static let slot = Mutex<Kept?>(nil)

    /// The service's answer, or its refusal; nil where no service is installed (no socket:
    /// the evaluation's own path says so).
    static func ask(_ request: AppRequest) -> AppResult? {
        let path = ServiceSocket.path
        var question = request
        question.keepConnection = true
        if let fd = take(path) {
            switch exchange(fd, question, path: path) {
            case .answered(let result): return result
            case .lost: break  // closed by the service meanwhile: a new connection
            }
        }
        let fd: Int32
        switch ServiceSocket.connect(path) {
        case .connected(let connected): fd = connected
        case .absent: return nil
        case .failed(let why): return AppResult(error: .make(.biometryNotAvailable, debug: why))
        }
        switch exchange(fd, question, path: path) {
        case .answered(let result): return result
        case .lost:
            return AppResult(error: .make(.biometryNotAvailable,
                                          debug: "localauthd (\(path)) closed the connection without a result"))
        }
    }

    private enum Exchange {
        case answered(AppResult)
        /// Nothing came back: the connection was closed before the answer.
        case lost
    }

    /// One request and its answer; the connection is kept when the service says `kept=1`
    /// and nothing more is pending on it, else closed.
    private static func exchange(_ fd: Int32, _ request: AppRequest, path: String) -> Exchange {
        let connection = RootConnection(service: fd)
        guard connection.send(request.frame()) else {
            close(fd)
            return .lost
        }
        var heard = false
        while true {
            let frame: Frame
            do { frame = try connection.receive() } catch {
                close(fd)
                return heard ? .answered(AppResult(error: .make(.biometryNotAvailable,
                                                                debug: "localauthd ended without a result: \(error)")))
                             : .lost
            }
            heard = true
            switch frame.kind {
            case .started:
                continue
            case .result:
                let result = AppResult(frame)
                if result.values["kept"] == "1", connection.isDrained {
                    put(Kept(fd: fd, pid: getpid(), path: path))
                } else {
                    close(fd)
                }
                return .answered(result)
            default:
                close(fd)
                return .answered(AppResult(error: .make(.biometryNotAvailable,
                                                        debug: "unexpected frame \(frame.kind) from localauthd to a preflight")))
            }
        }
    }

    /// The kept connection to `path` of this process, taken out of the slot (one caller at
    /// a time uses it; another thread meanwhile opens its own). One inherited across fork,
    /// or to another path, is closed: this process's copy only.
    private static func take(_ path: String) -> Int32? {
        guard let kept = slot.withLock({ value -> Kept? in
            defer { value = nil }
            return value
        }) else { return nil }
        guard kept.pid == getpid(), kept.path == path else {
            close(kept.fd)
            return nil
        }
        return kept.fd
    }

    private static func put(_ kept: Kept) {
        let extra = slot.withLock { value -> Int32? in
            if value == nil {
                value = kept
                return nil
            }
            return kept.fd
        }
        if let extra { close(extra) }
    }
}
