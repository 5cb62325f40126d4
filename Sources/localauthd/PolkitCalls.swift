#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import SystemBus

/// What PolkitWatch reads of the calls its monitor copies (their shapes are polkit's D-Bus
/// API), and what it asks the bus daemon about their processes.
extension PolkitWatch {
    /// One message the monitor copied: polkitd's call to an agent, an answer to polkitd, or
    /// pkexec's CheckAuthorization; anything else is left alone.
    func take(_ message: Message) {
        guard let owner = currentOwner else { return }
        switch message.kind {
        case .methodCall where message.interface == Self.agentInterface:
            guard message.sender == owner else {
                noteForged(message)
                return
            }
            switch message.member {
            case "BeginAuthentication"?: began(message)
            case "CancelAuthentication"?:
                if let cookie = try? message.readString() { table.cancelled(cookie: cookie) }
            default: break
            }
        case .methodCall where message.interface == Self.authorityInterface && message.member == "CheckAuthorization":
            // Addressed to polkitd by its well-known name or its unique one.
            guard message.destination == Self.service || message.destination == owner else { return }
            checkAuthorization(message)
        case .methodReturn, .error:
            guard message.destination == owner, let serial = message.replyCookie, let sender = message.sender else { return }
            table.answered(serial: serial, by: sender)
        default: break
        }
    }

    private func began(_ message: Message) {
        guard let agent = message.destination, agent.hasPrefix(":") else { return }
        // BeginAuthentication(s action_id, s message, s icon_name, a{ss} details, s cookie, ...)
        let action: String, text: String, details: [String: String], cookie: String
        do throws(BusError) {
            action = try message.readString()
            text = try message.readString()
            _ = try message.readString()
            details = try message.readStringDictionary()
            cookie = try message.readString()
        } catch {
            log.log(.warning, "a BeginAuthentication of polkitd's could not be read: \(error.summary)")
            return
        }
        let entry = PolkitPending.Authentication(agent: agent, serial: message.cookie, cookie: cookie,
                                                 action: action, message: text, program: details["program"],
                                                 callerPID: details["polkit.caller-pid"].flatMap { Int32($0) }, seenAt: MonotonicClock.millis())
        let (dropped, ask) = table.began(entry)
        if let dropped {
            log.log(.warning, "polkit: more than \(PolkitPending.capacity) authentications pending; the oldest "
                    + "(\(LogWords.word(dropped.action)) for agent \(dropped.agent)) forgotten: its agent's touches are not named")
        }
        if ask { askProcess(of: agent) { [weak self] in self?.table.agent(agent, is: $0) } }
    }

    /// CheckAuthorization((sa{sv}) subject, s action_id, a{ss} details, u flags, s id) of
    /// pkexec's action: its `program` detail kept against the caller's unique name.
    private func checkAuthorization(_ message: Message) {
        guard let sender = message.sender, sender.hasPrefix(":") else { return }
        let details: [String: String]
        do throws(BusError) {
            try message.skip("(sa{sv})")
            guard try message.readString() == Self.execAction else { return }
            details = try message.readStringDictionary()
        } catch {
            return
        }
        guard let program = details["program"] else { return }
        if table.checked(PolkitPending.Program(sender: sender, program: program, seenAt: MonotonicClock.millis())) {
            askProcess(of: sender) { [weak self] in self?.table.caller(sender, is: $0) }
        }
    }

    /// GetConnectionUnixProcessID of a connection (an agent's, a caller's), its answer given
    /// to `answer` from `follow()` (nil: none).
    func askProcess(of name: String, _ answer: @escaping (Int32?) -> Void) {
        do {
            let call = try asker.methodCall(destination: NameOwner.busDriver, path: "/org/freedesktop/DBus",
                                            interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID")
            try call.append(name)
            try asker.callAsync(call) { result in
                switch result {
                case .success(let reply): answer((try? reply.readUInt32()).map { Int32(bitPattern: $0) })
                case .failure: answer(nil)
                }
            }
        } catch {
            answer(nil)
        }
    }

    private func noteForged(_ message: Message) {
        guard let count = forged.note(now: MonotonicMicros.now()) else { return }
        log.log(.warning, "polkit: \(count) call(s) on the agent interface not sent by polkitd ignored since the last such line "
                + "(the last: \(LogWords.word(message.member ?? "?")) from \(LogWords.word(message.sender ?? "no sender")) "
                + "to \(LogWords.word(message.destination ?? "?")))")
    }
}
