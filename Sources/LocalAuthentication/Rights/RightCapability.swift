import Foundation

/// The capability an authorization returned (docs/PROTOCOL.md, "Rights"). The root side
/// keeps only its hash, with the process it was granted to, and gives a right's bytes only
/// to a request of that process that presents it: so the right object that was authorized
/// reads its secret and signs, and another object for the same identifier, elsewhere in the
/// program, must authorize itself, as on Apple's platforms.
///
/// `@unchecked Sendable`: `lock` guards `value`.
final class RightCapability: @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?

    var current: String? { lock.withLock { value } }

    func set(_ capability: String?) { lock.withLock { value = capability } }
}

/// The newest capability of each identifier this process authorized, for the store's calls
/// that name an identifier rather than a right object (`removeRight(forIdentifier:)`,
/// `removeAllRights()`, saving over an existing right). They still need an authorization
/// made in this process.
enum AuthorizedRights {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var newest: [String: String] = [:]

    static func note(_ identifier: String, _ capability: String) {
        lock.withLock { newest[identifier] = capability }
    }

    /// Forgets `identifier`'s capability, if it is still `capability` (nil: whatever it is).
    static func forget(_ identifier: String, _ capability: String? = nil) {
        lock.withLock {
            if capability == nil || newest[identifier] == capability { newest[identifier] = nil }
        }
    }

    static func capability(of identifier: String) -> String? { lock.withLock { newest[identifier] } }

    static var all: [String] { lock.withLock { Array(newest.values) } }

    static var identifiers: [String] { lock.withLock { Array(newest.keys) } }
}
