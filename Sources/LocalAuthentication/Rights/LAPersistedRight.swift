import Foundation

/// Apple's `LAPersistedRight`: a right saved in `LARightStore`, with a secret and a private
/// key that stay on the root side. After `authorize`, this right object (in this process,
/// and no other) may load the secret and sign; `deauthorize` ends that.
///
/// `@unchecked Sendable`: its own properties are constants.
open class LAPersistedRight: LARight, @unchecked Sendable {
    let identifier: String
    /// The right's private key (P-256), kept by the root side.
    public let key: LAPrivateKey
    /// The data saved with the right.
    public let secret: LASecret

    /// What this object's authorization returned, shared with its secret and its key.
    let capability = RightCapability()

    init(identifier: String, requirement: LAAuthenticationRequirement, publicKey: Data) {
        self.identifier = identifier
        key = LAPrivateKey(identifier: identifier, publicKey: LAPublicKey(bytes: publicKey), capability: capability)
        secret = LASecret(identifier: identifier, capability: capability)
        super.init(requirement: requirement)
    }

    override func performAuthorization(_ reason: String) async throws {
        // The reason goes to the root side too: for a program without a terminal, the
        // desktop's polkit dialog shows it (docs/PROTOCOL.md, "Rights").
        let text = RightsClient.hex(Data(reason.utf8.prefix(512)))
        let values = try await RightsClient.call(.authorize(identifier: try RightsClient.wire(identifier),
                                                             localizedReason: text), prompt: prompt(reason))
        guard let granted = values["capability"], !granted.isEmpty else {
            throw LAError.make(.biometryNotAvailable, debug: "the root side sent no capability for the authorization")
        }
        capability.set(granted)
        AuthorizedRights.note(identifier, granted)
    }

    override func performCheck() async throws {
        _ = try await RightsClient.call(.check(identifier: try RightsClient.wire(identifier)))
    }

    override func performDeauthorization() async {
        AuthorizedRights.forget(identifier, capability.current)
        capability.set(nil)
        _ = try? await RightsClient.call(.deauthorize(identifier: try RightsClient.wire(identifier)))
    }
}

/// Apple's `LASecret`: the data saved with a right, given by the root side only to the
/// process the right was authorized for.
///
/// `@unchecked Sendable`: its one property is a constant.
open class LASecret: NSObject, @unchecked Sendable {
    let identifier: String
    let capability: RightCapability

    init(identifier: String, capability: RightCapability) {
        self.identifier = identifier
        self.capability = capability
    }

    /// Apple's async form of `loadData(completion:)`: the bytes, for the authorized process.
    nonisolated(nonsending) open var rawData: Data {
        get async throws { try await loadData() }
    }

    /// The same as `rawData` (kept for programs that call it so).
    nonisolated(nonsending) open func loadData() async throws -> Data {
        let values = try await RightsClient.call(.secret(identifier: try RightsClient.wire(identifier),
                                                         capability: capability.current ?? ""))
        guard let data = RightsClient.bytes(values["secret"]) else {
            throw LAError.make(.biometryNotAvailable, debug: "the root side sent no readable secret")
        }
        return data
    }

    @preconcurrency
    open func loadData(completion: @escaping @Sendable (Data?, Error?) -> Void) {
        RightsClient.complete({ try await self.loadData() }, completion)
    }
}
