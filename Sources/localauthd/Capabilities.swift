#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LocalAuth

/// What localauthd keeps in effect of root's powers once it has started: only what its own
/// code uses. The unit's CapabilityBoundingSet= holds what the helpers need (a user's
/// terminal, shadow, pidfd_getfd, TIOCSTI, the audit records); the service itself opens its
/// socket, root's state directory and configuration as their owner, and reads the /proc
/// entries of its peers.
///
/// Only the *effective* set is cleared. The permitted set stays whole because the unit
/// sets NoNewPrivileges=: under no_new_privs an exec never gains a capability the process
/// that runs it had not in its permitted set (the kernel intersects the new permitted set
/// with the old one), so a service that dropped them from its permitted set would start
/// helpers without them. So this keeps the service's own calls from using a power by
/// mistake (an open that DAC_OVERRIDE would let through, a terminal ioctl); it is not a
/// wall against code running inside the service, which could raise them again (capset, or
/// exec). That wall is the unit's sandbox and the AppArmor profile (docs/SECURITY.md).
enum Capabilities {
    /// Proving a peer on kernels without SO_PEERPIDFD reads the /proc entries of processes
    /// of other uids and of setuid programs (their status, their open descriptors):
    /// CAP_SYS_PTRACE for the kernel's ptrace access check, CAP_DAC_READ_SEARCH for the
    /// /proc/PID/fd directory, which is its owner's alone (0500).
    static let used: [Int32] = [CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH]

    /// Clears every other capability from the effective set, and logs one line naming
    /// what is kept in effect and what stays permitted for the helpers. Not root (a test
    /// bed's unprivileged service): nothing to clear, and the line says so.
    static func dropUnused(log: LogSink) {
        var caps = la_caps()
        guard la_caps_get(&caps) == 0 else {
            log.log(.error, "capabilities: capget: \(String(cString: strerror(errno))); the service runs with them all in effect")
            return
        }
        let wanted = used.reduce(UInt64(0)) { $0 | (1 << UInt64($1)) }
        caps.effective = caps.effective & wanted
        guard la_caps_set(&caps) == 0 else {
            log.log(.error, "capabilities: capset: \(String(cString: strerror(errno))); the service runs with them all in effect")
            return
        }
        log.log(.info, "capabilities in effect: \(names(caps.effective)); "
                + "permitted (for the helpers, which it starts): \(names(caps.permitted))")
    }

    /// `cap_sys_ptrace cap_audit_write`, as capabilities(7) names them; "none" for none.
    static func names(_ mask: UInt64) -> String {
        let known: [Int32: String] = [
            CAP_CHOWN: "cap_chown", CAP_DAC_OVERRIDE: "cap_dac_override",
            CAP_DAC_READ_SEARCH: "cap_dac_read_search", CAP_FOWNER: "cap_fowner", CAP_KILL: "cap_kill",
            CAP_SETUID: "cap_setuid", CAP_SETGID: "cap_setgid", CAP_NET_ADMIN: "cap_net_admin",
            CAP_SYS_PTRACE: "cap_sys_ptrace", CAP_SYS_ADMIN: "cap_sys_admin", CAP_AUDIT_WRITE: "cap_audit_write",
        ]
        let set = (0..<64).filter { mask & (1 << UInt64($0)) != 0 }
        guard !set.isEmpty else { return "none" }
        return set.map { known[Int32($0)] ?? "cap_\($0)" }.joined(separator: " ")
    }
}
