/* Ctrl-C handling; see interrupt.h. */
#include "interrupt.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/*
 * The one piece of file-scope state in the module: a signal handler gets no argument, so
 * the write end it writes to has to live here. It only holds while armed, and is -1
 * otherwise, so a stray SIGINT after disarming writes nowhere.
 */
static volatile sig_atomic_t la_interrupt_fd = -1;

static void la_interrupt_handler(int sig)
{
    (void)sig;
    int saved = errno;
    int fd = la_interrupt_fd;
    if (fd >= 0) {
        ssize_t ignored = write(fd, "C", 1); /* a full pipe already holds the news */
        (void)ignored;
    }
    errno = saved;
}

bool la_interrupt_open(struct la_interrupt *in)
{
    int fds[2];
    in->read_fd = in->write_fd = -1;
    in->armed = false;
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
        return false;
    in->read_fd = fds[0];
    in->write_fd = fds[1];
    return true;
}

void la_interrupt_arm(struct la_interrupt *in)
{
    if (in->armed || in->write_fd < 0)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = la_interrupt_handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, NULL, &in->old) != 0)
        return;
    /* Ignored stays ignored. Our own handler already there means another thread of this
     * process is waiting on its helper: saving it would restore it after that thread put
     * the application's back, so this wait simply goes without Ctrl-C. */
    bool siginfo = (in->old.sa_flags & SA_SIGINFO) != 0;
    if (!siginfo && (in->old.sa_handler == SIG_IGN || in->old.sa_handler == la_interrupt_handler))
        return;
    la_interrupt_fd = in->write_fd;
    if (sigaction(SIGINT, &sa, NULL) != 0) {
        la_interrupt_fd = -1;
        return;
    }
    in->armed = true;
}

void la_interrupt_disarm(struct la_interrupt *in)
{
    if (!in->armed)
        return;
    sigaction(SIGINT, &in->old, NULL);
    la_interrupt_fd = -1;
    in->armed = false;
}

bool la_interrupt_take(struct la_interrupt *in)
{
    char buf[16];
    bool any = false;
    ssize_t n;
    while ((n = read(in->read_fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        any = any || n > 0;
    return any;
}

void la_interrupt_close(struct la_interrupt *in)
{
    la_interrupt_disarm(in);
    if (in->read_fd >= 0)
        close(in->read_fd);
    if (in->write_fd >= 0)
        close(in->write_fd);
    in->read_fd = in->write_fd = -1;
}
