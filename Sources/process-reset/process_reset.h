/*
 * What a process that runs on behalf of an untrusted caller must not inherit from it. The
 * module's child uses it on the way to the helper: a caller
 * could otherwise hand the root helper a priority at which it never runs in time (nice 19,
 * SCHED_IDLE, one busy CPU, idle I/O), or limits under which its writes fail and a failed
 * match goes uncounted.
 *
 * Only system calls: safe between fork and execve.
 */
#ifndef LA_PROCESS_RESET_H
#define LA_PROCESS_RESET_H

/* Normal scheduling (SCHED_OTHER, nice 0), every CPU allowed, default I/O priority and
 * timer slack. Best effort: what an unprivileged process may not change stays. */
void la_reset_scheduling(void);

/* FSIZE, CPU, DATA and AS unlimited, NOFILE 1024, CORE 0 (a core could hold a password).
 * Where a limit cannot be raised to that (no CAP_SYS_RESOURCE), the soft limit goes up to
 * the hard one as long as that is still enough. Returns NULL, or the name of the first
 * limit that stays below what the helper needs. */
const char *la_reset_limits(void);

#endif
