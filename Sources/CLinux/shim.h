/* glibc headers that Swift's Glibc module does not bring in. */
#include <shadow.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <syslog.h>

/* The C library's standard streams. To Swift 6 `stdout` and `stderr` are mutable globals
 * that any thread could reassign; these programs never do (no freopen, no assignment), and
 * stdio locks each FILE itself, so reading them from any thread is safe. */
#include <stdio.h>
static inline FILE *la_stdout(void)
{
    return stdout;
}
static inline FILE *la_stderr(void)
{
    return stderr;
}

/* syslog(3) is variadic, which Swift cannot call: one message with a fixed format. */
static inline void la_syslog_text(int priority, const char *text)
{
    syslog(priority, "%s", text);
}

/* System call numbers, for reading /proc/PID/syscall (Swift does not import the macros). */
static const long la_sys_read = SYS_read;
static const long la_sys_readv = SYS_readv;
static const long la_sys_pread64 = SYS_pread64;

/* gettext (glibc's libintl): dgettext, dngettext, bindtextdomain. */
#include <libintl.h>
/* Bumped to make gettext forget the translations it looked up, after LANGUAGE changes
 * (GNU gettext's documented way; glibc exports it). Swift reaches it only through
 * la_gettext_forget(), which Catalog calls under its lock. */
extern int _nl_msg_cat_cntr;
static inline void la_gettext_forget(void)
{
    ++_nl_msg_cat_cntr;
}
static const long la_sys_poll = SYS_poll;
static const long la_sys_select = SYS_select;
static const long la_sys_pselect6 = SYS_pselect6;
static const long la_sys_ppoll = SYS_ppoll;

/* pidfd_open(2) has no glibc wrapper in Debian 12, and syscall(2) is variadic: a descriptor
 * that stays bound to one process, so that a pid reused after the caller ended cannot be
 * taken for the caller (-1 with errno on failure). */
#include <unistd.h>
static inline int la_pidfd_open(int pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}
