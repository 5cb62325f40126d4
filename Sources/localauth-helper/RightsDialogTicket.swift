#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// The rights dialog's ticket (DialogTickets): created before polkitd is asked, so that
/// only matches of this dialog's time can be in it, read once polkitd answered, removed
/// when the dialog ends. Tickets of dialogs that ended without removing theirs (a kill,
/// the hard deadline) are swept first.
extension RightsMode.Context {
    func openTicket() throws -> String {
        let tickets = DialogTickets(stateDirectory: options.stateDir)
        tickets.sweep(isAlive: DialogMatch.isAlive)
        guard let me = ProcStat(pid: getpid()) else {
            throw RightsMode.Refusal.unavailable("the helper's own start time cannot be read")
        }
        let ticket = DialogTicket(user: request.user.value, createdAt: BootClock.nanos(),
                                  dialog: .init(pid: getpid(), startTime: me.startTime))
        do { return try tickets.create(ticket) } catch {
            throw RightsMode.Refusal.unavailable("no ticket for the dialog: \(error)")
        }
    }

    func readTicket(_ path: String) throws -> DialogTicket {
        do { return try DialogTickets(stateDirectory: options.stateDir).read(path) } catch {
            throw RightsMode.Refusal.unavailable("the dialog's ticket cannot be read: \(error)")
        }
    }

    func closeTicket(_ path: String) {
        DialogTickets(stateDirectory: options.stateDir).remove(path)
    }
}
