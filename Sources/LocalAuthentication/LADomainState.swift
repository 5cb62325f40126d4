import Foundation

/// Apple's `LADomainState` (iOS 18, macOS 15): the state of the authentication domains as
/// last seen by the context. There are no companion devices here, so the combined
/// `stateHash` is the biometry's.
///
/// These three are `@unchecked Sendable` only because NSObject, their base, is not checked:
/// every property is a constant of a Sendable type, set in `init`.
open class LADomainState: NSObject, @unchecked Sendable {
    public let biometry: LADomainStateBiometry
    public let companion: LADomainStateCompanion

    init(biometry: LADomainStateBiometry) {
        self.biometry = biometry
        self.companion = LADomainStateCompanion()
    }

    /// The combined hash of every domain: here the enrolled fingers' (nil when unknown).
    open var stateHash: Data? { biometry.stateHash }
}

/// The fingerprint domain: the reader and the enrolled set's hash.
open class LADomainStateBiometry: NSObject, @unchecked Sendable {
    /// `.touchID` once a reader answered, else `.none`.
    public let biometryType: LABiometryType
    /// An opaque hash of the enrolled set (the reader, the finger names and the stored
    /// prints, keyed with a per-installation secret); nil when nothing is enrolled or no
    /// preflight or match has succeeded on this context yet. It changes when a finger is
    /// added, removed or re-enrolled.
    public let stateHash: Data?

    init(biometryType: LABiometryType, stateHash: Data?) {
        self.biometryType = biometryType
        self.stateHash = stateHash
    }
}

/// The companion domain: always empty on Linux.
open class LADomainStateCompanion: NSObject, @unchecked Sendable {
    public let availableCompanionTypes: Set<LACompanionType> = []
    public let stateHash: Data? = nil

    override init() {}

    open func stateHash(for companionType: LACompanionType) -> Data? { nil }
}
