import Foundation
import LocalAuthProtocol

/// The root side's `mode=right` (docs/PROTOCOL.md, "Rights"), one request per call through
/// localauthd, as `LAContext` reaches `mode=app`. The identifier and the secret travel as
/// hex (any bytes, one line); nothing here decides anything: the root side keeps the rights,
/// checks the program, runs the evaluation and answers with Apple's codes.
enum RightsClient {
    /// One operation; `prompt` (authorize only) shows the reason and the reader's lines on
    /// the terminal and answers a password prompt, as `evaluatePolicy` does.
    static func call(_ operation: Request.Right, prompt: LAPrompt? = nil) async throws -> [String: String] {
        let ui: LAUserInterface? = prompt == nil ? nil : LATerminalInterface()
        var request = AppRequest(operation: .evaluate, policy: "", fallbackTitle: prompt.map { $0.fallbackTitle ?? "" },
                                 canInteract: ui?.canInteract ?? false)
        request.right = operation
        let evaluation = Evaluation(request: request, prompt: prompt, ui: ui)
        let result: AppResult = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: evaluation.run()) }
        }
        if let error = result.error { throw error }
        return result.values
    }

    /// A right's identifier as it travels: hex of its UTF-8, 1 to `maxIdentifierBytes` bytes.
    static func wire(_ identifier: String) throws -> String {
        guard (1...LARightStore.maxIdentifierBytes).contains(identifier.utf8.count) else {
            throw LAError.make(.invalidContext, debug: "an identifier must have 1 to \(LARightStore.maxIdentifierBytes) bytes")
        }
        return hex(Data(identifier.utf8))
    }

    static func hex(_ data: Data) -> String {
        data.map { String(format: "%02x", $0) }.joined()
    }

    static func bytes(_ hex: String?) -> Data? {
        guard let hex else { return nil }
        return hex.isEmpty ? Data() : AppResult.bytes(hex: hex)
    }

    /// Runs an async call for a completion-handler form, on no actor.
    static func complete<T: Sendable>(_ work: @escaping @Sendable () async throws -> T,
                                      _ handler: @escaping @Sendable (T?, Error?) -> Void) {
        Task.detached {
            do { handler(try await work(), nil) } catch { handler(nil, error) }
        }
    }
}
