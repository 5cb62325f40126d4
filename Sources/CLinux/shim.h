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

/* The peer of a connected AF_UNIX socket, as the kernel recorded it at connect(2): never
 * what the peer says about itself. struct ucred is behind _GNU_SOURCE, which a module map
 * cannot set for glibc's headers: the same three fields, in the kernel's order. */
/* pipe2(2) is a GNU extension the Glibc module leaves out: both ends close-on-exec and
 * non-blocking in one call (an evaluation makes one; localauthd makes one per preflight). */
#include <fcntl.h>
static inline int la_pipe_cloexec_nonblock(int fds[2])
{
    return (int)syscall(SYS_pipe2, fds, O_CLOEXEC | O_NONBLOCK);
}

/* ppoll(2) with the signal mask swapped in for the wait alone (a GNU extension the Glibc
 * module leaves out): localauthd keeps SIGTERM and SIGINT blocked while it works, so one
 * that comes then stays pending and ends the next wait, instead of arriving between the
 * check of its flag and the wait, which would then sleep through it. The kernel's sigset
 * is 8 bytes. */
#include <poll.h>
#include <signal.h>
#include <time.h>
static inline int la_ppoll_millis(struct pollfd *fds, unsigned long n, int timeout_ms, const sigset_t *mask)
{
    struct timespec ts, *tp = 0;
    if (timeout_ms >= 0) {
        ts.tv_sec = timeout_ms / 1000;
        ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
        tp = &ts;
    }
    return (int)syscall(SYS_ppoll, fds, n, tp, mask, 8);
}

#include <sys/socket.h>
struct la_peer_cred {
    int pid;
    unsigned int uid;
    unsigned int gid;
};
static inline int la_socket_peer_cred(int fd, struct la_peer_cred *out)
{
    socklen_t len = sizeof *out;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, out, &len) != 0)
        return -1;
    return len == sizeof *out ? 0 : -1;
}

/* SO_PEERPIDFD (Linux 6.5): a pidfd of the peer taken at connect(2), so no pid reuse can
 * stand in for it. Debian 12's headers lack the constant (77 on the architectures Debian
 * builds this for, but parisc and sparc). -1 with errno: ENOPROTOOPT on an older kernel,
 * EINVAL when the peer has already been reaped (before 6.16). */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
static inline int la_socket_peer_pidfd(int fd)
{
    int pidfd = -1;
    socklen_t len = sizeof pidfd;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0)
        return -1;
    return pidfd;
}

/* A copy of descriptor `target` of the process `pidfd` refers to (pidfd_getfd, Linux 5.6):
 * the caller needs ptrace rights over that process, which root's helper has. The copy is
 * close-on-exec. */
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
static inline int la_pidfd_getfd(int pidfd, int target)
{
    return (int)syscall(SYS_pidfd_getfd, pidfd, target, 0);
}

/* The address family of a socket (SO_DOMAIN), or -1 when `fd` is not one. */
static inline int la_socket_domain(int fd)
{
    int domain = -1;
    socklen_t len = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
        return -1;
    return domain;
}

/* POSIX_SPAWN_SETSID (glibc 2.26) is behind _GNU_SOURCE: the service's helpers lead a
 * session of their own, as the module's do. */
#include <spawn.h>
#ifdef POSIX_SPAWN_SETSID
static const int la_posix_spawn_setsid = POSIX_SPAWN_SETSID;
#else
static const int la_posix_spawn_setsid = 0x80;
#endif

/* accept4(2) is behind _GNU_SOURCE: the service's connections close-on-exec from the start. */
static inline int la_accept_cloexec(int fd)
{
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
}

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

/* One message with descriptors (SCM_RIGHTS): localauthd hands a request's connection and
 * its peer's pidfd to a helper it started ahead (SpareHelper). CMSG_* are macros Swift
 * cannot call. Returns sendmsg's result. */
static inline long la_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
    if (nfds < 0 || nfds > 4)
        return -1;
    char control[CMSG_SPACE(4 * sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec iov = { (void *)buf, len };
    struct msghdr msg = { 0 };
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    return sendmsg(sock, &msg, MSG_NOSIGNAL);
}

/* The counterpart: the message into `buf`, up to `maxfds` descriptors (close-on-exec) into
 * `fds` and their number into `*nfds`. A message whose descriptors were cut short
 * (MSG_CTRUNC) closes what came and fails with EMSGSIZE. */
static inline long la_recv_fds(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds)
{
    char control[CMSG_SPACE(4 * sizeof(int))];
    struct iovec iov = { buf, len };
    struct msghdr msg = { 0 };
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    *nfds = 0;
    long n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0)
        return n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *got = (int *)CMSG_DATA(c);
        for (int i = 0; i < count; i++) {
            if (*nfds < maxfds && *nfds < 4)
                fds[(*nfds)++] = got[i];
            else
                close(got[i]);
        }
    }
    if (msg.msg_flags & MSG_CTRUNC) {
        for (int i = 0; i < *nfds; i++)
            close(fds[i]);
        *nfds = 0;
        errno = EMSGSIZE;
        return -1;
    }
    return n;
}

/* The inode of the other end of a connected Unix socket, asked of the kernel's socket
 * diagnostics (NETLINK_SOCK_DIAG, unix_diag with UDIAG_SHOW_PEER: Linux 3.3). Before
 * SO_PEERPIDFD (Linux 6.5) this is how a pid read from SO_PEERCRED is proved to be the
 * peer's: the process holds a descriptor of that inode. The diagnostics see the sockets of
 * the caller's network namespace only. A raw netlink socket, as audit's is: the one kind
 * of network the AppArmor profile allows (apparmor/abstractions/localauth). 0 with *out
 * set, or -1 with errno. */
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/stat.h>
static inline int la_unix_peer_inode(int fd, unsigned long *out)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return -1;
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } ask = { 0 };
    ask.header.nlmsg_len = sizeof ask;
    ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    ask.header.nlmsg_flags = NLM_F_REQUEST;
    ask.request.sdiag_family = AF_UNIX;
    ask.request.udiag_states = ~0u;
    ask.request.udiag_ino = (unsigned int)st.st_ino;
    ask.request.udiag_show = UDIAG_SHOW_PEER;
    ask.request.udiag_cookie[0] = ask.request.udiag_cookie[1] = ~0u;   /* no cookie: by inode */
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    long answer_len = -1;
    long buffer[1024];
    if (sendto(nl, &ask, sizeof ask, 0, (struct sockaddr *)&kernel, sizeof kernel) == (long)sizeof ask)
        answer_len = recv(nl, buffer, sizeof buffer, 0);
    int saved = errno;
    close(nl);
    errno = saved;
    if (answer_len < 0)
        return -1;
    struct nlmsghdr *h = (struct nlmsghdr *)buffer;
    size_t left = (size_t)answer_len;
    for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_type == NLMSG_ERROR) {
            struct nlmsgerr *e = (struct nlmsgerr *)NLMSG_DATA(h);
            errno = e->error < 0 ? -e->error : ENOENT;
            return -1;
        }
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
            continue;
        struct unix_diag_msg *m = (struct unix_diag_msg *)NLMSG_DATA(h);
        if (m->udiag_ino != (unsigned int)st.st_ino)
            continue;
        size_t attrs_len = h->nlmsg_len - NLMSG_LENGTH(sizeof *m);
        struct nlattr *a = (struct nlattr *)(m + 1);
        while (attrs_len >= sizeof *a && a->nla_len >= sizeof *a && a->nla_len <= attrs_len) {
            if (a->nla_type == UNIX_DIAG_PEER && a->nla_len >= NLA_HDRLEN + sizeof(unsigned int)) {
                *out = *(unsigned int *)((char *)a + NLA_HDRLEN);
                return 0;
            }
            size_t step = NLA_ALIGN(a->nla_len);
            if (step >= attrs_len)
                break;
            attrs_len -= step;
            a = (struct nlattr *)((char *)a + step);
        }
        errno = ENOTCONN;   /* the socket is there but has no peer now */
        return -1;
    }
    errno = ENOENT;
    return -1;
}

/* The process's capability sets as 64-bit masks, through capget(2)/capset(2) directly (the
 * kernel's version 3 interface: two 32-bit words per set), so localauthd needs no libcap.
 * la_caps_get: 0, or -1 with errno. */
#include <linux/capability.h>
struct la_caps {
    unsigned long long effective;
    unsigned long long permitted;
    unsigned long long inheritable;
};
static inline int la_caps_get(struct la_caps *out)
{
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0)
        return -1;
    out->effective = (unsigned long long)data[1].effective << 32 | data[0].effective;
    out->permitted = (unsigned long long)data[1].permitted << 32 | data[0].permitted;
    out->inheritable = (unsigned long long)data[1].inheritable << 32 | data[0].inheritable;
    return 0;
}

/* Sets all three sets at once (capset(2) replaces them): 0, or -1 with errno. */
static inline int la_caps_set(const struct la_caps *caps)
{
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    data[0].effective = (unsigned int)caps->effective;
    data[1].effective = (unsigned int)(caps->effective >> 32);
    data[0].permitted = (unsigned int)caps->permitted;
    data[1].permitted = (unsigned int)(caps->permitted >> 32);
    data[0].inheritable = (unsigned int)caps->inheritable;
    data[1].inheritable = (unsigned int)(caps->inheritable >> 32);
    return (int)syscall(SYS_capset, &header, data);
}
