import Foundation
import LocalAuthProtocol
#if canImport(Glibc)
import Glibc
#endif

/// One `canEvaluatePolicy` or `evaluatePolicy` on the root side: connects to localauthd,
/// relays its lines and password prompt to the user interface and the user's buttons back,
/// and reads its result. `cancel()` (invalidate, a cancelled task) may come from any thread: the
/// root side is told (end of file), stops the reader and answers `appCancel`.
///
/// `@unchecked Sendable`: `lock` guards `connection` and `cancelled`, the rest is constant;
/// `run()` is called once, on the evaluation's queue, and the user interface is called as
/// its contract allows (`dismiss` from any thread, the rest from that queue).
final class Evaluation: @unchecked Sendable {
    let request: AppRequest
    private let prompt: LAPrompt?
    private let ui: LAUserInterface?
    private let lock = NSLock()
    private var connection: RootConnection?
    private var cancelled = false

    init(request: AppRequest, prompt: LAPrompt?, ui: LAUserInterface?) {
        self.request = request
        self.prompt = prompt
        self.ui = ui
    }

    var isCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return cancelled
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let open = connection
        lock.unlock()
        open?.hangUp()
        ui?.dismiss()
    }

    /// Runs to the end; blocks the calling thread.
    func run() -> AppResult {
        let result = runToEnd()
        // Whatever happened on the way, an evaluation the application ended is its cancel.
        if isCancelled && request.operation == .evaluate {
            return AppResult(error: .make(.appCancel, debug: "the context was invalidated or the task cancelled"))
        }
        return result
    }

    private func runToEnd() -> AppResult {
        let connection: RootConnection
        do { connection = try start() } catch { return AppResult(error: error) }
        defer { connection.finish() }
        guard connection.send(request.frame()) else {
            return AppResult(error: .make(.biometryNotAvailable, debug: "the root side went away before the request"))
        }
        if let prompt, let ui {
            ui.evaluationWillBegin(prompt) { [weak self] choice in self?.choose(choice) }
        }
        let result = converse(connection)
        ui?.evaluationDidEnd()
        return result
    }

    private func start() throws(LAError) -> RootConnection {
        lock.lock()
        defer { lock.unlock() }
        if cancelled { throw .make(.appCancel, debug: "cancelled before it started") }
        let c: RootConnection
        switch ServiceSocket.connect() {
        case .connected(let fd): c = RootConnection(service: fd)
        case .absent:
            throw .make(.biometryNotAvailable,
                        debug: "localauthd is not running (no socket at \(ServiceSocket.path)): the reader is reached only through it")
        case .failed(let why): throw .make(.biometryNotAvailable, debug: why)
        }
        connection = c
        return c
    }

    private func converse(_ connection: RootConnection) -> AppResult {
        while true {
            let frame: Frame
            do { frame = try connection.receive() } catch {
                return AppResult(error: .make(.biometryNotAvailable,
                                              debug: "localauthd (\(ServiceSocket.path)) ended without a result: \(error)"))
            }
            switch frame.kind {
            case .started:
                continue  // the helper has the request
            case .info, .error:
                ui?.show(frame.text ?? "", isError: frame.kind == .error)
            case .promptEchoOff, .promptEchoOn:
                answer(frame.text ?? "", on: connection)
            case .result:
                return AppResult(frame)
            default:
                connection.hangUp()
                return AppResult(error: .make(.biometryNotAvailable, debug: "unexpected frame \(frame.kind) from the root side"))
            }
        }
    }

    /// The password prompt: the typed bytes cross once and are wiped; a cancel is `C cancel`.
    private func answer(_ prompt: String, on connection: RootConnection) {
        guard !isCancelled, let ui, var password = ui.askPassword(prompt) else {
            connection.send(Frame(.cancel, text: "cancel"))
            return
        }
        defer { password.withUnsafeMutableBytes { if let p = $0.baseAddress { explicit_bzero(p, $0.count) } } }
        connection.send(Frame(.answer, password))
    }

    /// A button while the reader waits.
    private func choose(_ choice: LAUserChoice) {
        lock.lock()
        let open = connection
        lock.unlock()
        open?.send(Frame(.cancel, text: choice == .fallback ? "fallback" : "cancel"))
    }
}
