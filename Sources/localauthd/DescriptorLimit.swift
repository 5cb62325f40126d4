#if canImport(Glibc)
import Glibc
#endif
import LocalAuth

/// localauthd's own limit of open descriptors, raised at start to `wanted` where the hard
/// limit allows: systemd gives a service 1024 unless its unit says otherwise, and the
/// ssh-agent connections held for a helper alone may take 2048 (AgentDoor.heldInAll, two
/// each), besides the helpers' pidfds and the main socket's connections. Only raised,
/// never lowered; the helpers it starts inherit it and need nothing of it.
enum DescriptorLimit {
    static let wanted: rlim_t = 8192

    static func raise(log: LogSink) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < wanted else { return }
        let before = limit.rlim_cur
        limit.rlim_cur = min(wanted, limit.rlim_max)
        if limit.rlim_cur > before, setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            limit.rlim_cur = before
        }
        if limit.rlim_cur < wanted {
            log.log(.warning, "open descriptors limited to \(limit.rlim_cur) (hard limit \(limit.rlim_max)): "
                    + "fewer than the \(wanted) the held ssh-agent connections may need; new connections may be refused")
        }
    }
}
