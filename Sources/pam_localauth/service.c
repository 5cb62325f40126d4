#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* Root's socket, as SSSD's client checks its responder's: a socket file owned by root.
 * What answers on it is checked again after connect (la_peer_is_root). */
static enum la_connect la_socket_file(const char *path, char *why, size_t cap)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return LA_CONNECT_ABSENT;
        snprintf(why, cap, "service socket %s: %s", path, strerror(errno));
        return LA_CONNECT_FAILED;
    }
    if (!S_ISSOCK(st.st_mode) || st.st_uid != 0) {
        snprintf(why, cap, "service socket %s refused: not a socket of root's", path);
        return LA_CONNECT_FAILED;
    }
    return LA_CONNECT_OK;
}

static bool la_peer_is_root(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred
        && cred.uid == 0;
}

/* connect(2) on a stream socket waits while the service's backlog is full; SO_SNDTIMEO
 * bounds that wait (the kernel's unix_stream_connect takes its timeout from it). */
static bool la_connect_within(int fd, const char *path, int64_t budget_ms)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return false;
    }
    strcpy(addr.sun_path, path);
    int64_t ms = budget_ms < 1 ? 1 : budget_ms;
    struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
        return false;
    int r;
    do
        r = connect(fd, (const struct sockaddr *)&addr, sizeof addr);
    while (r != 0 && errno == EINTR);
    return r == 0;
}

enum la_connect la_service_connect(struct la_helper *h, const char *path, int64_t budget_ms,
                                   char *why, size_t cap)
{
    h->pid = -1;
    h->pidfd = -1;
    h->to_helper = h->from_helper = -1;
    h->gone = false;
    h->service = false;
    enum la_connect file = la_socket_file(path, why, cap);
    if (file != LA_CONNECT_OK)
        return file;
    /* Above fd 2 (a host that closed its standard descriptors must not get frames on
     * them), and close-on-exec: the connection is root's and never reaches the host's
     * children. */
    int raw = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int fd = raw < 0 ? -1 : fcntl(raw, F_DUPFD_CLOEXEC, 3);
    if (raw >= 0 && raw != fd)
        close(raw);
    if (fd < 0) {
        snprintf(why, cap, "could not create a socket for the service: %s", strerror(errno));
        return LA_CONNECT_FAILED;
    }
    if (!la_connect_within(fd, path, budget_ms)) {
        snprintf(why, cap, "service at %s did not take the connection: %s", path, strerror(errno));
        close(fd);
        return LA_CONNECT_FAILED;
    }
    int flags = fcntl(fd, F_GETFL);
    int reader = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (!la_peer_is_root(fd) || flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 || reader < 0) {
        snprintf(why, cap, "service at %s refused: %s", path,
                 reader < 0 || flags < 0 ? strerror(errno) : "its end is not root's");
        if (reader >= 0)
            close(reader);
        close(fd);
        return LA_CONNECT_FAILED;
    }
    h->to_helper = fd;
    h->from_helper = reader;
    h->service = true;
    return LA_CONNECT_OK;
}
