/// Moments an administrator audits, as pam_faillock reports them: a lockout begins, and a
/// lockout is lifted by the password or by `localauthctl reset`. The executables write them
/// to the audit log and the journal (SystemEvents); tests collect them.
public protocol SecurityEvents: AnyObject {
    func lockoutBegan(_ user: UserName, failures: Int, threshold: Int, context: EventContext)
    func lockoutCleared(_ user: UserName, failures: Int, by: ClearedBy, context: EventContext)
}

public enum ClearedBy: String, Sendable {
    case password, reset
}

/// Where the authentication came from, for the records.
public struct EventContext: Sendable {
    public var service = ""
    public var tty = ""
    public var rhost = ""
    public var ruser = ""
    /// Who acted (the real uid of `localauthctl reset`); nil for an authentication.
    public var actorUID: UInt32?

    public init(service: String = "", tty: String = "", rhost: String = "", ruser: String = "",
                actorUID: UInt32? = nil) {
        self.service = service
        self.tty = tty
        self.rhost = rhost
        self.ruser = ruser
        self.actorUID = actorUID
    }
}
