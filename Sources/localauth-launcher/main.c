/*
 * localauth-launcher, installed setuid root (mode 4755). pam_localauth.so starts it instead
 * of the helper when the program calling PAM does not run as root. It takes nothing from
 * its caller: no arguments, no environment, no descriptor but 0-2, no resource limit, no
 * signal setting. The only input it acts on is its real uid, which the kernel vouches for;
 * the helper is told that uid and authenticates that user and no other (docs/PROTOCOL.md,
 * "The unprivileged path").
 */
#include "launch.h"
#include "process_reset.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#ifndef LA_HELPER_PATH
#define LA_HELPER_PATH "/usr/libexec/localauth/localauth-helper"
#endif
#ifndef LA_CONFIG_PATH
#define LA_CONFIG_PATH "/etc/security/localauth.conf"
#endif

static char *const la_env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };

/* The caller's real uid, kept for the log after the switch to root. */
static uid_t la_caller;

/* Logs why, answers the module with a result frame in place of the helper, and waits
 * (bounded) for the module to close the pipe, so that its request never meets a closed
 * pipe. Nothing was started. */
static _Noreturn void la_refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void la_refuse(const char *fmt, ...)
{
    char cause[LA_LAUNCH_CAUSE_MAX + 1];
    unsigned char frame[LA_LAUNCH_CAUSE_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cause, sizeof cause, fmt, ap);
    va_end(ap);
    syslog(LOG_NOTICE, "refused (uid %u): %s", (unsigned)la_caller, cause);
    size_t n = la_launch_refusal(cause, frame, sizeof frame);
    for (size_t done = 0; done < n;) {
        ssize_t w = write(1, frame + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    alarm(10);
    char sink[512];
    for (;;) {
        ssize_t r = read(0, sink, sizeof sink);
        if (r <= 0 && !(r < 0 && errno == EINTR))
            _exit(0);
    }
}

/* 0, 1 and 2 open (a caller may have closed them to have our files land there), and
 * nothing above them: the helper inherits only the module's pipes. */
static void la_descriptors(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
            _exit(127);
    if (close_range(3, ~0U, 0) != 0)
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
}

/* The caller's environment is dropped whole (the loader has already dropped LD_PRELOAD and
 * its kin, since the launcher is setuid). The names of what was there go to the log, so that
 * an attempt to steer the helper (DBUS_SYSTEM_BUS_ADDRESS, SWIFT_BACKTRACE, ...) shows. */
static void la_drop_environment(void)
{
    extern char **environ;
    char names[LA_LAUNCH_CAUSE_MAX + 1] = "";
    size_t len = 0;
    bool cut = false;
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        size_t n = strcspn(*e, "=");
        if (n == 4 && strncmp(*e, "PATH", 4) == 0)
            continue;
        if (len + n + 2 > sizeof names) {
            cut = true;
            break;
        }
        if (len > 0)
            names[len++] = ' ';
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)(*e)[i];
            names[len++] = c > 0x20 && c < 0x7f ? (char)c : '?';
        }
        names[len] = '\0';
    }
    clearenv();
    if (len > 0)
        syslog(LOG_NOTICE, "the caller's environment is ignored: %s%s", names, cut ? " ..." : "");
}

/* Its own session, away from the caller's terminal: no hangup, job-control or terminal
 * signal reaches the helper, and it cannot be stopped with the caller's job. The module's
 * child is a session leader already. A caller that leads a process group of its own (a
 * shell job run by hand) cannot have setsid() for it: then a child takes its place, and
 * this process only waits for it and passes its exit status on. */
static void la_own_session(void)
{
    if (getsid(0) == getpid() || setsid() >= 0)
        return;
    pid_t child = fork();
    if (child < 0)
        la_refuse("could not leave the caller's session: %s", strerror(errno));
    if (child == 0) {
        if (setsid() < 0)
            _exit(127);
        return;
    }
    /* The pipes are the helper's alone: the module must see their end when it ends. */
    for (int fd = 0; fd <= 2; fd++)
        close(fd);
    int status;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR)
            _exit(127);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* Limits, scheduling and signal settings survive execve. A caller's RLIMIT_FSIZE could
 * make the helper's state writes fail and lose a failure count; a core file could hold a
 * password; nice 19 or SCHED_IDLE would let the caller decide when the helper runs. */
static void la_reset_process(void)
{
    const char *limit = la_reset_limits();
    if (limit != NULL)
        la_refuse("resource limit %s was lowered by the caller and cannot be restored", limit);
    la_reset_scheduling();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, NULL);
    umask(022);
}

/* The helper and every directory above it root-owned and writable by nobody else (a
 * sticky directory such as /tmp is allowed above): nobody but root can swap it. */
static void la_check_helper(const char *path)
{
    char dir[PATH_MAX];
    struct stat st;
    if (path[0] != '/' || strlen(path) >= sizeof dir)
        la_refuse("helper %s refused: not an absolute path", path);
    if (stat(path, &st) != 0)
        la_refuse("helper %s refused: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
        la_refuse("helper %s refused: not a regular file owned by root and writable by root "
                  "only", path);
    strcpy(dir, path);
    for (char *slash = strrchr(dir, '/'); slash != NULL; slash = strrchr(dir, '/')) {
        slash[slash == dir ? 1 : 0] = '\0';
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0
            || ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)))
            la_refuse("helper %s refused: directory %s is not root's alone", path, dir);
        if (slash == dir)
            break;
    }
}

/* Root in every id and no supplementary group: the helper is not in secure mode and the
 * caller cannot signal or trace it. */
static void la_become_root(void)
{
    uid_t r, e, s;
    gid_t gr, ge, gs;
    if (setgroups(0, NULL) != 0 || setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0
        || getresuid(&r, &e, &s) != 0 || getresgid(&gr, &ge, &gs) != 0
        || (r | e | s) != 0 || (gr | ge | gs) != 0)
        la_refuse("could not switch to root (is the launcher installed setuid root?)");
}

int main(int argc, char *argv[])
{
    la_descriptors();
    openlog("localauth-launcher", LOG_PID, LOG_AUTHPRIV);
    la_caller = getuid();
    la_drop_environment();
    if (!la_launch_args_ok(argc, argv))
        la_refuse("called with arguments; the launcher takes none");
    uid_t uid = la_caller = getuid();
    if (uid == 0)
        la_refuse("called by root; root runs the helper directly");
    if (getpwuid(uid) == NULL)
        la_refuse("uid %u is not in the user database", (unsigned)uid);
    /* The program that called PAM: the helper asks logind and /proc about it. Taken now,
     * before la_own_session may put a process of ours in between. */
    pid_t caller_pid = getppid();
    la_reset_process();
    la_check_helper(LA_HELPER_PATH);
    la_become_root();
    /* After becoming root in every id: a waiting parent left by la_own_session cannot be
     * signalled by the caller either. */
    la_own_session();
    if (chdir("/") != 0)
        la_refuse("could not change to /: %s", strerror(errno));
    char uid_text[16], pid_text[16];
    snprintf(uid_text, sizeof uid_text, "%u", (unsigned)uid);
    snprintf(pid_text, sizeof pid_text, "%d", (int)caller_pid);
    char *const helper_argv[] = { "localauth-helper", "--unprivileged-uid", uid_text,
                                  "--config", LA_CONFIG_PATH, "--caller-pid", pid_text, NULL };
    closelog();
    execve(LA_HELPER_PATH, helper_argv, la_env);
    openlog("localauth-launcher", LOG_PID, LOG_AUTHPRIV);
    la_refuse("could not start %s: %s", LA_HELPER_PATH, strerror(errno));
}
