#if canImport(Glibc)
import Glibc
#endif
import SystemBus

/// One piece of work on a thread of its own, waited for once. The helper is otherwise
/// single-threaded: this lets the bus start-up run while the main thread reads files.
/// Nothing is shared while it runs; `join()` hands the results over (it synchronises).
final class BackgroundThread {
    private var thread = pthread_t()
    private var running = false

    /// Starts `work`; nil when no thread could be made (the caller does without). Sendable:
    /// what it touches is the other thread's until `join()`.
    init?(_ work: @escaping @Sendable () -> Void) {
        var attributes = pthread_attr_t()
        guard pthread_attr_init(&attributes) == 0 else { return nil }
        defer { pthread_attr_destroy(&attributes) }
        // sd-bus and the reply handlers need little stack; 8 MiB of address space is
        // reserved otherwise.
        _ = pthread_attr_setstacksize(&attributes, 512 << 10)
        let box = Unmanaged.passRetained(WorkBox(work))
        guard pthread_create(&thread, &attributes, backgroundEntry, box.toOpaque()) == 0 else {
            box.release()
            return nil
        }
        running = true
    }

    /// Waits for the work to end. Once only; later calls return at once.
    func join() {
        guard running else { return }
        running = false
        pthread_join(thread, nil)
    }

    deinit { join() }
}

private final class WorkBox {
    let work: @Sendable () -> Void
    init(_ work: @escaping @Sendable () -> Void) { self.work = work }
}

private let backgroundEntry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { arg in
    guard let arg else { return nil }
    let box = Unmanaged<WorkBox>.fromOpaque(arg).takeRetainedValue()
    // Signals are the main thread's business (the helper's deadline, the module's cancel).
    var all = sigset_t()
    sigfillset(&all)
    pthread_sigmask(SIG_BLOCK, &all, nil)
    box.work()
    return nil
}
