/* The helper process; see helper_spawn.h. */
#include "helper_spawn.h"

#include "frame.h"
#include "process_reset.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef P_PIDFD
#define LA_P_PIDFD 3 /* waitid on a pidfd (Linux 5.4); glibc 2.36 has no name for it */
#else
#define LA_P_PIDFD P_PIDFD
#endif

/* How long a killed helper may take to be gone before it is given up on. */
enum { LA_KILL_WAIT_MS = 2000 };

/* The helper's whole environment: nothing of the caller's (LD_*, locale, bus address, ...)
 * reaches a process that runs as root on behalf of an unprivileged user. */
static char *const la_helper_env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };

int64_t la_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool la_helper_path_trusted(const char *path, char *why, size_t cap)
{
    struct stat st;
    if (path[0] != '/') {
        snprintf(why, cap, "helper %s refused: not an absolute path", path);
        return false;
    }
    if (stat(path, &st) != 0) {
        snprintf(why, cap, "helper %s refused: %s", path, strerror(errno));
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, cap, "helper %s refused: not a regular file", path);
        return false;
    }
    if (st.st_uid != 0) {
        snprintf(why, cap, "helper %s refused: owned by uid %u, not root", path,
                 (unsigned)st.st_uid);
        return false;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, cap, "helper %s refused: writable by group or others", path);
        return false;
    }
    return true;
}

/* --- in the child, between fork and execve: async-signal-safe calls only --- */

/* The host may have closed fd 0, 1 or 2, so a pipe can sit exactly where it must go; lift
 * each above 2 first so that dup2 never meets itself (and so clears close-on-exec). */
static int la_child_lift(int fd)
{
    return fcntl(fd, F_DUPFD, 3);
}

static void la_child_close_from_3(int max_fd)
{
    if (close_range(3, ~0U, 0) == 0)
        return;
    for (int fd = 3; fd < max_fd; fd++)
        close(fd);
}

/* Dispositions the host set (ignored SIGPIPE, SIGINT, ...) and its signal mask would
 * survive execve; the helper starts from defaults. */
static void la_child_reset_signals(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP, reserved */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Under setuid sudo ruid != euid. The helper gets one identity, the effective one: it is
 * then not exec'd in secure mode (AT_SECURE), where libraries such as sd-bus quietly
 * ignore their settings, and it cannot be signalled by the invoking user. sudo is setuid
 * but not setgid, so its groups are still the invoking user's: a root helper takes root's
 * group and no supplementary groups, or the files it writes would belong to that user's
 * group. */
static bool la_child_one_identity(void)
{
    uid_t uid = geteuid();
    gid_t gid = uid == 0 ? 0 : getegid();
    if (uid == 0 && setgroups(0, NULL) != 0)
        return false;
    return setresgid(gid, gid, gid) == 0 && setresuid(uid, uid, uid) == 0;
}

static _Noreturn void la_child_exec(const char *path, int in, int out, int err, int max_fd)
{
    in = la_child_lift(in);
    out = la_child_lift(out);
    err = la_child_lift(err);
    if (in < 0 || out < 0 || err < 0)
        _exit(127);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        _exit(127);
    la_child_close_from_3(max_fd);
    la_child_reset_signals();
    /* Its own session: a Ctrl-C on the terminal reaches the module (which sends `C`), not
     * the helper, and the helper cannot open the caller's terminal. */
    if (setsid() < 0)
        _exit(127);
    /* While still root: the caller's nice value, scheduling class, CPU set, I/O priority
     * and limits are not the helper's (localauthd's helpers have the service's own). */
    la_reset_scheduling();
    (void)la_reset_limits();
    if (!la_child_one_identity() || chdir("/") != 0)
        _exit(127);
    umask(022);
    char *const argv[] = { (char *)path, NULL };
    execve(path, argv, la_helper_env);
    _exit(127);
}

/* --- in the module --- */

static void la_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Where the fallback close loop in the child stops; computed here because sysconf is
 * not async-signal-safe. */
static int la_max_fd(void)
{
    long n = sysconf(_SC_OPEN_MAX);
    if (n < 1024)
        return 1024;
    return n > (1 << 20) ? (1 << 20) : (int)n;
}

static bool la_open_fds(int req[2], int resp[2], int *devnull)
{
    if (pipe2(req, O_CLOEXEC) != 0)
        return false;
    if (pipe2(resp, O_CLOEXEC) != 0)
        return false;
    *devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (*devnull < 0)
        return false;
    /* Our write end only: a helper that stops reading must not block us past the timeout. */
    int flags = fcntl(req[1], F_GETFL);
    return flags >= 0 && fcntl(req[1], F_SETFL, flags | O_NONBLOCK) == 0;
}

bool la_helper_start(struct la_helper *h, const char *path, char *why, size_t cap)
{
    int req[2] = { -1, -1 }, resp[2] = { -1, -1 }, devnull = -1;
    h->pid = -1;
    h->pidfd = -1;
    h->to_helper = h->from_helper = -1;
    h->gone = false;
    h->service = false;

    if (!la_open_fds(req, resp, &devnull)) {
        snprintf(why, cap, "could not create pipes for the helper: %s", strerror(errno));
        goto fail;
    }
    int max_fd = la_max_fd();
    pid_t pid = fork();
    if (pid == 0)
        la_child_exec(path, req[0], resp[1], devnull, max_fd);
    if (pid < 0) {
        snprintf(why, cap, "could not start the helper: %s", strerror(errno));
        goto fail;
    }
    h->pid = pid;
    /* The helper is watched through a pidfd, not through SIGCHLD, which stays as the host
     * set it: a host that lets the kernel reap its children (SIG_IGN) or reaps them in a
     * handler keeps doing so, and the helper's pid can never be mistaken for a reused one. */
    h->pidfd = pidfd_open(pid, 0);
    h->to_helper = req[1];
    h->from_helper = resp[0];
    la_close(&req[0]);
    la_close(&resp[1]);
    la_close(&devnull);
    return true;

fail:
    la_close(&req[0]);
    la_close(&req[1]);
    la_close(&resp[0]);
    la_close(&resp[1]);
    la_close(&devnull);
    return false;
}

/* Waits for room in the pipe, charging the wait to the budget. */
static bool la_wait_writable(int fd, int64_t *budget_ms)
{
    if (*budget_ms <= 0)
        return false;
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    int64_t start = la_clock_ms();
    int r = poll(&p, 1, (int)*budget_ms);
    *budget_ms -= la_clock_ms() - start;
    return r > 0 || (r < 0 && errno == EINTR);
}

static bool la_write_all(struct la_helper *h, const uint8_t *buf, size_t len,
                         int64_t *budget_ms, char *why, size_t cap)
{
    int fd = h->to_helper;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN && la_wait_writable(fd, budget_ms))
            continue;
        if (n < 0 && errno == EPIPE)
            h->gone = true;
        if (n < 0 && errno == EAGAIN)
            snprintf(why, cap, "helper timed out: it stopped reading");
        else
            snprintf(why, cap, "could not write to the helper: %s", strerror(errno));
        return false;
    }
    return true;
}

bool la_helper_send(struct la_helper *h, uint8_t type, const void *payload, size_t len,
                    int64_t *budget_ms, char *why, size_t cap)
{
    uint8_t wire[LA_FRAME_WIRE_MAX];
    size_t wire_len;
    enum la_frame_status st = la_frame_encode(type, payload, len, wire, sizeof wire, &wire_len);
    if (st != LA_FRAME_OK) {
        snprintf(why, cap, "could not encode a '%c' frame: %s", type, la_frame_status_text(st));
        return false;
    }
    /* A helper that died turns our write into SIGPIPE, which would kill sudo or login. */
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    bool changed = sigaction(SIGPIPE, NULL, &old) == 0
        && ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_IGN)
        && sigaction(SIGPIPE, &ign, NULL) == 0;
    bool ok = la_write_all(h, wire, wire_len, budget_ms, why, cap);
    if (changed)
        sigaction(SIGPIPE, &old, NULL);
    explicit_bzero(wire, sizeof wire);
    return ok;
}

void la_helper_close_input(struct la_helper *h)
{
    if (h->service && h->to_helper >= 0)
        shutdown(h->to_helper, SHUT_WR);
    la_close(&h->to_helper);
}

void la_helper_close_pipes(struct la_helper *h)
{
    la_close(&h->to_helper);
    la_close(&h->from_helper);
}

/* One waitpid that survives EINTR; returns the pid, 0 (still running) or -1. */
static pid_t la_waitpid(pid_t pid, int *status, int options)
{
    pid_t r;
    do
        r = waitpid(pid, status, options);
    while (r < 0 && errno == EINTR);
    return r;
}

/* Waits up to ms (-1: for ever) for the helper to exit; true when it has. */
static bool la_pidfd_exited(int pidfd, int64_t ms)
{
    int64_t deadline = la_clock_ms() + (ms > 0 ? ms : 0);
    for (;;) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int64_t left = ms < 0 ? -1 : deadline - la_clock_ms();
        int r = poll(&p, 1, left < 0 ? (ms < 0 ? -1 : 0) : (int)left);
        if (r > 0)
            return true;
        if (r == 0)
            return false;
        if (errno != EINTR)
            return false;
    }
}

static enum la_reap la_reap_pid(struct la_helper *h, int64_t grace_ms, int *status,
                                bool *killed);

/* Collects the exit of the helper behind the pidfd: its wait status, or LA_REAP_EXITED
 * when the host's own SIGCHLD handling (SIG_IGN, a handler that waits) took it first. */
static enum la_reap la_pidfd_collect(struct la_helper *h, int *status)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int r;
    do
        r = waitid((idtype_t)LA_P_PIDFD, (id_t)h->pidfd, &info, WEXITED);
    while (r < 0 && errno == EINTR);
    if (r != 0) /* ECHILD: the host reaped it; EINVAL (no P_PIDFD before Linux 5.4): by pid */
        return errno == ECHILD ? LA_REAP_EXITED : la_reap_pid(h, 0, status, &(bool){ false });
    *status = info.si_code == CLD_EXITED ? W_EXITCODE(info.si_status, 0)
                                         : W_EXITCODE(0, info.si_status);
    return LA_REAP_STATUS;
}

static enum la_reap la_reap_pidfd(struct la_helper *h, int64_t grace_ms, int *status,
                                  bool *killed)
{
    if (!la_pidfd_exited(h->pidfd, grace_ms)) {
        /* Should the kill fail, our pipes are closed: it stops at its next read or write,
         * or at its own hard deadline. */
        *killed = true;
        (void)pidfd_send_signal(h->pidfd, SIGKILL, NULL, 0);
        if (!la_pidfd_exited(h->pidfd, LA_KILL_WAIT_MS))
            return LA_REAP_LOST;
    }
    return la_pidfd_collect(h, status);
}

/* Without pidfds (kernels before 5.3): by pid, which is still ours while not reaped. */
static enum la_reap la_reap_pid(struct la_helper *h, int64_t grace_ms, int *status,
                                bool *killed)
{
    int64_t deadline = la_clock_ms() + (grace_ms > 0 ? grace_ms : 0);
    const struct timespec tick = { .tv_sec = 0, .tv_nsec = 2 * 1000 * 1000 };
    for (;;) {
        pid_t r = la_waitpid(h->pid, status, WNOHANG);
        if (r == h->pid)
            return LA_REAP_STATUS;
        if (r < 0)
            return LA_REAP_EXITED; /* the host reaped it: the status is gone */
        if (la_clock_ms() >= deadline) {
            if (*killed)
                return LA_REAP_LOST; /* the kill did not take: it ends on its own */
            kill(h->pid, SIGKILL);
            *killed = true;
            deadline = la_clock_ms() + LA_KILL_WAIT_MS;
        }
        nanosleep(&tick, NULL);
    }
}

enum la_reap la_helper_reap(struct la_helper *h, int64_t grace_ms, int *status, bool *killed)
{
    *status = 0;
    *killed = false;
    if (h->service)
        return LA_REAP_SERVICE;
    if (h->pid <= 0)
        return LA_REAP_LOST;
    enum la_reap r = h->pidfd >= 0 ? la_reap_pidfd(h, grace_ms, status, killed)
                                   : la_reap_pid(h, grace_ms, status, killed);
    if (h->pidfd >= 0)
        close(h->pidfd);
    h->pidfd = -1;
    h->pid = -1;
    return r;
}

void la_helper_describe_status(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(out, cap, "wait status %#x", (unsigned)status);
}
