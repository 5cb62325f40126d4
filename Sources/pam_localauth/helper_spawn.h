/*
 * Starting, talking to and ending the helper process, the way Linux-PAM starts unix_chkpwd:
 * absolute path checked before use, fork + execve with a fixed environment and only fds
 * 0-2, one uid, the caller's scheduling and limits reset, watched through a pidfd (the
 * host's SIGCHLD disposition is left alone), always reaped unless the host reaps it first.
 */
#ifndef LA_HELPER_SPAWN_H
#define LA_HELPER_SPAWN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct la_helper {
    pid_t pid;             /* -1 when not running or already reaped */
    int pidfd;             /* the helper's pidfd; -1 where the kernel has none */
    int to_helper;         /* its fd 0; non-blocking on our side */
    int from_helper;       /* its fd 1 */
    bool gone;             /* a write met a closed pipe: the helper has ended */
    bool service;          /* a connection to localauthd (service.c), not a child: both fds
                            * are the one socket, and there is no process to reap */
};

/* How a helper ended, as far as the module could see. */
enum la_reap {
    LA_REAP_STATUS,        /* reaped: the wait status is known */
    LA_REAP_EXITED,        /* it exited, but the host reaped it (its status is unknown) */
    LA_REAP_LOST,          /* it could not be seen to end (killed in vain: not ours to kill) */
    LA_REAP_SERVICE,       /* localauthd's helper: the service reaps it; closing the
                            * connection ends its request */
};

/* Milliseconds on the monotonic clock: all helper timing, never the wall clock. */
int64_t la_clock_ms(void);

/*
 * True when path names a regular file owned by root that neither group nor others may
 * write; otherwise false with a reason in why[0..cap).
 */
bool la_helper_path_trusted(const char *path, char *why, size_t cap);

/*
 * Starts the helper. On failure returns false with a reason, and nothing is left running.
 */
bool la_helper_start(struct la_helper *h, const char *path, char *why, size_t cap);

/*
 * Writes one frame, waiting at most *budget_ms (which is charged for the wait) for room
 * in the pipe. SIGPIPE is ignored during the write and restored. The frame buffer is
 * zeroed afterwards because an answer may be a secret. False with a reason on failure.
 */
bool la_helper_send(struct la_helper *h, uint8_t type, const void *payload, size_t len,
                    int64_t *budget_ms, char *why, size_t cap);

/* Closes the pipe to the helper (or our sending side of the service's connection): it
 * sees end of file on its fd 0. */
void la_helper_close_input(struct la_helper *h);

/* Closes our ends of both pipes. */
void la_helper_close_pipes(struct la_helper *h);

/*
 * Waits up to grace_ms for the helper to exit, then kills it (SIGKILL) and waits a bounded
 * time for it. *status is the wait status when LA_REAP_STATUS; *killed says whether the
 * kill was needed.
 */
enum la_reap la_helper_reap(struct la_helper *h, int64_t grace_ms, int *status, bool *killed);

/* Describes a wait status: "exit status 3", "killed by signal 11". */
void la_helper_describe_status(int status, char *out, size_t cap);

#endif
