#if canImport(Glibc)
import Glibc
#endif
import LocalAuth
import Synchronization

/// localauthd's word that the system prepares to sleep: SIGUSR1. A scan left open across a
/// suspend keeps fprintd's reader claimed (and the person who started it has walked away),
/// so the wait for a finger ends at once with `systemCancel`, the reader is released and
/// the try, counted before the scan, is given back (EvaluationMachine: an interruption
/// while scanning refunds it). The handler only writes a byte to a pipe, which the wait
/// polls among its other wake sources.
///
/// SIGUSR2 is localauthd's word that a lock screen of this user asks for the reader
/// (LockScreenTurn): the scan ends the same way, or never starts (`pendingStop`).
enum SleepSignal {
    /// The pipe's write end for the handler (-1 before `install`).
    private static let writeEnd = Atomic<Int32>(-1)
    private static let readEnd = Atomic<Int32>(-1)

    /// Before anything waits; SIGUSR1 is unblocked only once its handler is in place.
    static func install() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            signal(SIGUSR1, SIG_IGN)   // no way to hear it: better unheard than fatal
            return
        }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readEnd.store(ends[0], ordering: .relaxed)
        writeEnd.store(ends[1], ordering: .relaxed)
        signal(SIGUSR1) { _ in
            var byte: UInt8 = SleepSignal.sleepByte
            _ = write(SleepSignal.writeEnd.load(ordering: .relaxed), &byte, 1)
        }
        signal(SIGUSR2) { _ in
            var byte: UInt8 = SleepSignal.lockScreenByte
            _ = write(SleepSignal.writeEnd.load(ordering: .relaxed), &byte, 1)
        }
        // localauthd starts its helpers with SIGUSR1 and SIGUSR2 blocked, so one sent before this line
        // waits here instead of ending the helper.
        var usr1 = sigset_t()
        sigemptyset(&usr1)
        sigaddset(&usr1, SIGUSR1)
        sigaddset(&usr1, SIGUSR2)
        pthread_sigmask(SIG_UNBLOCK, &usr1, nil)
    }

    /// The wake source for an evaluation's wait; nil when the pipe could not be made.
    static func wakeSource() -> WakeSource? {
        let fd = readEnd.load(ordering: .relaxed)
        return fd >= 0 ? SleepWakeSource(fd: fd) : nil
    }

    static let sleepByte: UInt8 = 1
    static let lockScreenByte: UInt8 = 2

    /// A word that came before the scan (a helper started while its user's lock screen
    /// asks: the service signals it at once, and the signal waited in its mask until
    /// `install`): no reader is claimed at all. nil when none came.
    static func pendingStop() -> EvaluationError? {
        let fd = readEnd.load(ordering: .relaxed)
        return fd >= 0 ? stop(after: fd) : nil
    }

    /// Why the scan ends, from the bytes the handlers wrote (nil: none); the lock screen's
    /// word wins over the sleep's, which the log would otherwise misname.
    fileprivate static func stop(after fd: Int32) -> EvaluationError? {
        var byte: UInt8 = 0
        var seen: Set<UInt8> = []
        while read(fd, &byte, 1) > 0 { seen.insert(byte) }
        if seen.contains(lockScreenByte) {
            return EvaluationError(.systemCancel, cause: "a lock screen of this user asks for the reader")
        }
        return seen.isEmpty ? nil : EvaluationError(.systemCancel, cause: "the system is going to sleep")
    }
}

private final class SleepWakeSource: WakeSource {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }

    func interruption() -> EvaluationError? {
        SleepSignal.stop(after: fd) ?? EvaluationError(.systemCancel, cause: "the system is going to sleep")
    }
}
