import LocalAuth

/// `doctor`'s look at the control of every line of ours, in every stack that reaches one.
/// libpam answers a module it cannot load with PAM_MODULE_UNKNOWN: once the package is
/// removed, a `required` line of ours fails its stack ("sudo: PAM account management
/// error: Module is unknown") and nobody gets in through it, root's sudo included. So no
/// line may count a missing module as a failure, except the finger-only conversation
/// (`policy=biometrics`, GDM's gdm-fingerprint), whose failing costs nobody their login and
/// whose module being ignored would let the stack succeed on the lines around it. The
/// `authsucc` line always answers PAM_AUTHINFO_UNAVAIL, so its control must ignore that too.
struct PamControlCheck {
    typealias Finding = DoctorCommand.Finding

    let directory: String
    let names: [String]

    func findings() -> [Finding] {
        var reader = PamStackReader(directory: directory)
        var order: [(type: String, rule: PamRule)] = []
        var services: [String: [String]] = [:]
        for name in names where !name.hasPrefix("common-") {
            for type in ["auth", "account"] {
                for rule in reader.stack(name, type: type) ?? [] where rule.isLocalauth {
                    let key = type + " " + rule.location
                    if services[key] == nil { order.append((type, rule)) }
                    services[key, default: []].append(name)
                }
            }
        }
        return order.compactMap { finding($0.rule, type: $0.type, usedBy: services[$0.type + " " + $0.rule.location]!) }
    }

    /// Whether `control` counts PAM_MODULE_UNKNOWN as a failure. A bracketed control
    /// without that value or `default` treats it as `bad`, as libpam does.
    static func failsWhenMissing(_ control: PamControl) -> Bool {
        switch control.action(for: "module_unknown") {
        case .ignore, .jump: return false
        default: return true
        }
    }

    private func finding(_ rule: PamRule, type: String, usedBy: [String]) -> Finding? {
        let where_ = "\(rule.location) `\(rule.text)`", control = rule.control.text
        let who = usedBy.joined(separator: ", ")
        let managed = rule.file.hasSuffix("/common-auth") || rule.file.hasSuffix("/common-account")
        if type == "auth", rule.isAuthsucc {
            let unavailable = rule.control.action(for: "authinfo_unavail")
            if unavailable != .ignore, !isJump(unavailable) {
                return Finding(.problem, "pam.authsucc-fails-every-sign-in", { l in
                    tr(l, "%s fails every sign-in through %s: the authsucc line always answers PAM_AUTHINFO_UNAVAIL, and `%s` counts it as a failure",
                       where_, who, control)
                }, fix: managed
                    ? { l in tr(l, "%s (the profile's line is `optional`)", "pam-auth-update --package") }
                    : { l in tr(l, "write it %s", "`auth optional pam_localauth.so authsucc`") })
            }
        }
        guard PamControlCheck.failsWhenMissing(rule.control) else { return nil }
        if type == "auth", rule.isFirstLine {
            // The finger-only conversation is meant to fail without its module.
            if rule.arguments.contains("policy=biometrics") { return nil }
            // A control that already refuses the password when the finger fails is the
            // module line's own problem (ServiceCheck), with its own fix.
            if [rule.control.action(for: "authinfo_unavail"), rule.control.action(for: "auth_err")]
                .contains(where: { $0 == .bad || $0 == .die }) { return nil }
        }
        let fix: DoctorCommand.Text
        switch (type, managed) {
        case (_, true): fix = { l in tr(l, "%s (the profiles' lines ignore a missing module)", "pam-auth-update --package") }
        case ("account", false):
            fix = { l in tr(l, "make it %s (the line judges no account)", "`account optional pam_localauth.so`") }
        default: fix = { l in tr(l, "make it %s", "`auth sufficient pam_localauth.so`") }
        }
        return Finding(.problem, "pam.fails-without-module", { l in
            tr(l, "%s fails its stack once the module is missing (the package removed): libpam answers %s and `%s` counts it as a failure, so nobody signs in through %s",
               where_, "\"Module is unknown\"", control, who)
        }, fix: fix)
    }

    private func isJump(_ action: PamAction) -> Bool {
        if case .jump = action { return true }
        return false
    }
}
