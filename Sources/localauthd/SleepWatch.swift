#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import SystemBus

/// logind's `PrepareForSleep(true)` on the system bus: the machine is about to suspend or
/// hibernate. A scan that stays open across it keeps fprintd's reader claimed, and whoever
/// started it is not at the machine any more; so every running helper is told (SIGUSR1,
/// SleepSignal in the helper) to end its scan now, give the try back and answer
/// `systemCancel`. The password still works when the machine wakes.
final class SleepWatch {
    private let bus: Bus
    private var sleepAnnounced = false
    let fd: Int32

    static let rule = "type='signal',sender='org.freedesktop.login1',path='/org/freedesktop/login1',"
        + "interface='org.freedesktop.login1.Manager',member='PrepareForSleep'"

    private init(bus: Bus, fd: Int32) {
        self.bus = bus
        self.fd = fd
    }

    /// Connected to the bus of root's configuration, the match in place; nil (said once in
    /// the log) where there is no bus to follow.
    static func start(configPath: String, log: LogSink) -> SleepWatch? {
        let options = Options.load(configPath: configPath, log: log)
        do {
            let bus = try Bus(address: options.dbusAddress, timeoutSeconds: max(options.busTimeout, 1))
            guard let fd = bus.fileDescriptor else { throw BusError.disconnected(errno: ENOTCONN) }
            let watch = SleepWatch(bus: bus, fd: fd)
            try bus.addMatch(rule) { [weak watch] message in
                if (try? message.readBool()) == true { watch?.sleepAnnounced = true }
            }
            return watch
        } catch {
            log.log(.notice, "not following logind's sleep signal (\(options.dbusAddress)): \(error)")
            return nil
        }
    }

    /// After `fd` polled readable: whether the system announced it is going to sleep since
    /// the last call. Throws once the connection is gone.
    func takeAnnouncement() throws(BusError) -> Bool {
        try bus.dispatch()
        defer { sleepAnnounced = false }
        return sleepAnnounced
    }
}
