import Foundation

/// Apple's `LARightStore` (macOS 13, iOS 16): rights saved across restarts, with a secret
/// and a private key each, kept by the root side where only root reads them, bound to the
/// user and to this program's executable (docs/API.md, "Rights": what that binding stops
/// and what it does not).
///
/// `@unchecked Sendable`: it has no state; every call is one request to the root side.
open class LARightStore: NSObject, @unchecked Sendable {
    public static let shared = LARightStore()

    override init() {}

    nonisolated(nonsending) open func right(forIdentifier identifier: String) async throws -> LAPersistedRight {
        persisted(identifier, try await RightsClient.call(.get(identifier: try RightsClient.wire(identifier))))
    }

    nonisolated(nonsending) open func saveRight(_ right: LARight, identifier: String) async throws -> LAPersistedRight {
        try await save(right, identifier, secret: Data())
    }

    nonisolated(nonsending) open func saveRight(_ right: LARight, identifier: String, secret: Data) async throws -> LAPersistedRight {
        try await save(right, identifier, secret: secret)
    }

    /// Needs the right authorized in this process (the object given, or another for its
    /// identifier), as reading it does.
    nonisolated(nonsending) open func removeRight(_ right: LAPersistedRight) async throws {
        let capability = right.capability.current ?? AuthorizedRights.capability(of: right.identifier)
        _ = try await RightsClient.call(.remove(identifier: try RightsClient.wire(right.identifier),
                                                   capability: capability ?? ""))
        AuthorizedRights.forget(right.identifier)
    }

    nonisolated(nonsending) open func removeRight(forIdentifier identifier: String) async throws {
        let capability = AuthorizedRights.capability(of: identifier)
        _ = try await RightsClient.call(.remove(identifier: try RightsClient.wire(identifier), capability: capability ?? ""))
        AuthorizedRights.forget(identifier)
    }

    /// Needs every right of the program authorized in this process (the root side removes
    /// all or none).
    nonisolated(nonsending) open func removeAllRights() async throws {
        let capabilities = AuthorizedRights.all.joined(separator: ",")
        guard capabilities.utf8.count <= Self.maxCapabilitiesText else {
            throw LAError.make(.invalidContext, debug: "too many rights are authorized to remove them in one request: remove them one by one")
        }
        _ = try await RightsClient.call(.removeAll(capabilities: AuthorizedRights.all))
        for identifier in AuthorizedRights.identifiers { AuthorizedRights.forget(identifier) }
    }

    // MARK: - Completion-handler forms

    @preconcurrency
    open func right(forIdentifier identifier: String,
                    completion: @escaping @Sendable (LAPersistedRight?, Error?) -> Void) {
        RightsClient.complete({ try await self.right(forIdentifier: identifier) }, completion)
    }

    @preconcurrency
    open func saveRight(_ right: LARight, identifier: String,
                        completion: @escaping @Sendable (LAPersistedRight?, Error?) -> Void) {
        let r = UncheckedRight(right)
        RightsClient.complete({ try await self.saveRight(r.right, identifier: identifier) }, completion)
    }

    @preconcurrency
    open func saveRight(_ right: LARight, identifier: String, secret: Data,
                        completion: @escaping @Sendable (LAPersistedRight?, Error?) -> Void) {
        let r = UncheckedRight(right)
        RightsClient.complete({ try await self.saveRight(r.right, identifier: identifier, secret: secret) }, completion)
    }

    @preconcurrency
    open func removeRight(_ right: LAPersistedRight, completion: @escaping @Sendable (Error?) -> Void) {
        RightsClient.complete({ try await self.removeRight(right) }) { _, e in completion(e) }
    }

    @preconcurrency
    open func removeRight(forIdentifier identifier: String, completion: @escaping @Sendable (Error?) -> Void) {
        RightsClient.complete({ try await self.removeRight(forIdentifier: identifier) }) { _, e in completion(e) }
    }

    @preconcurrency
    open func removeAllRights(completion: @escaping @Sendable (Error?) -> Void) {
        RightsClient.complete({ try await self.removeAllRights() }) { _, e in completion(e) }
    }

    // MARK: - Internals

    /// What one request frame carries (docs/PROTOCOL.md, "Rights").
    static let maxSecretBytes = 1024
    static let maxIdentifierBytes = 256
    /// The capabilities of one `remove_all` (65 bytes each with the comma): what fits in a
    /// request frame beside the other keys, 50 rights.
    static let maxCapabilitiesText = 50 * 65

    private func save(_ right: LARight, _ identifier: String, secret: Data) async throws -> LAPersistedRight {
        guard secret.count <= Self.maxSecretBytes else {
            throw LAError.make(.invalidContext, debug: "a secret of \(secret.count) bytes: at most \(Self.maxSecretBytes) are kept")
        }
        // Saving over an existing right needs it authorized in this process, as reading it does.
        let values = try await RightsClient.call(.save(
            identifier: try RightsClient.wire(identifier), requirement: right.requirement.word,
            secret: RightsClient.hex(secret), capability: AuthorizedRights.capability(of: identifier) ?? ""))
        AuthorizedRights.forget(identifier)   // a new right starts unauthorized
        return persisted(identifier, values)
    }

    private func persisted(_ identifier: String, _ values: [String: String]) -> LAPersistedRight {
        let requirement = LAAuthenticationRequirement(word: values["requirement"] ?? "default")
        return LAPersistedRight(identifier: identifier, requirement: requirement,
                                publicKey: RightsClient.bytes(values["public_key"]) ?? Data())
    }
}

/// LARight is Sendable already; this only keeps the completion forms' closures simple.
private struct UncheckedRight: @unchecked Sendable {
    let right: LARight
    init(_ right: LARight) { self.right = right }
}
