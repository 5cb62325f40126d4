/// Whether PAM_RHOST names another machine: RemoteRule's answer (PresenceRule.swift), for
/// the callers that have only PAM_RHOST.
public enum RemoteHost {
    public static func namesAnotherMachine(_ rhost: String) -> Bool {
        RemoteRule.handle(rhost: rhost, tty: "").isAnotherMachine
    }
}
