/* One request through localauthd; see session.h. */
#include "session.h"

#include "frame.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_ext.h>

/* How long the helper gets to answer a `C`, and to close the connection after its `R`. */
enum { LA_GRACE_MS = 2000 };

/* How long the service may take from the connect to the first frame. A healthy one sends
 * `S` within milliseconds; but its first connection after boot, or after it exited when
 * idle, also starts the service itself (socket activation): in the Debian 13 guest under a
 * loaded host, GDM's first login took longer than 3 s to hear from it, and lost the finger
 * and the password's record. A service that accepts and says nothing is still bounded,
 * and localauthctl doctor names it. */
enum { LA_START_TIMEOUT_MS = 10000 };

struct la_session {
    pam_handle_t *pamh;
    const struct la_args *args;
    int fd;                  /* the connection to the service */
    int interrupt[2];        /* the self-pipe SIGINT writes to (la_interrupt_handler) */
    bool armed;              /* our SIGINT handler is installed; old_sigint is the host's */
    struct sigaction old_sigint;
    int64_t budget_ms;       /* what is left of helper_timeout; only waits on the helper
                              * are charged, never the time a person takes at a prompt */
    int64_t cancel_deadline; /* monotonic ms by which a cancelled helper must answer; 0: none */
    int64_t start_deadline;  /* monotonic ms by which the first frame must come */
    bool started;            /* a frame came: the helper is there and has the request */
    uint8_t in[LA_FRAME_WIRE_MAX];
    size_t in_len;
    struct la_outcome *out;
};

/* Milliseconds on the monotonic clock: all timing, never the wall clock. */
static int64_t la_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Records why the run failed; the first reason is the one that counts. */
__attribute__((format(printf, 2, 3)))
static void la_fail(struct la_session *s, const char *fmt, ...)
{
    if (s->out->failure[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->out->failure, sizeof s->out->failure, fmt, ap);
    va_end(ap);
}

/* --- the connection --------------------------------------------------------------- */

/* Connects s->fd to root's service at path; false with the reason recorded. */
static bool la_connect(struct la_session *s, const char *path)
{
    /* Root's socket, as SSSD's client checks its responder's: a socket file owned by root;
     * what answers on it is checked again after connect. A path that does not exist is the
     * service's absence, known after this one lstat: no wait of any kind. */
    struct stat st;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int err = lstat(path, &st) == 0 ? 0 : errno;
    if (err == ENOENT || err == ENOTDIR) {
        /* Not installed, not started, no systemd: nothing is started in its place. */
        s->out->no_service = true;
        la_fail(s, "localauthd is not running (no socket at %s): the fingerprint is reached "
                "only through it", path);
        return false;
    }
    if (err != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != 0
        || strlen(path) >= sizeof addr.sun_path) {
        la_fail(s, "service socket %s refused: %s", path,
                err != 0 ? strerror(err) : "not a socket of root's");
        return false;
    }
    strcpy(addr.sun_path, path);
    /* Above fd 2 (a host that closed its standard descriptors must not get frames on
     * them), and close-on-exec: the connection is root's and never reaches the host's
     * children. */
    int raw = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    s->fd = raw < 0 ? -1 : fcntl(raw, F_DUPFD_CLOEXEC, 3);
    if (raw >= 0 && raw != s->fd)
        close(raw);
    /* connect(2) on a stream socket waits while the service's backlog is full; SO_SNDTIMEO
     * bounds that wait (the kernel's unix_stream_connect takes its timeout from it), and
     * then each write: a helper that stops reading holds the caller no longer. */
    struct timeval tv = { .tv_sec = LA_START_TIMEOUT_MS / 1000 };
    struct ucred cred;
    socklen_t len = sizeof cred;
    int r = -1;
    if (s->fd >= 0 && setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0)
        do
            r = connect(s->fd, (const struct sockaddr *)&addr, sizeof addr);
        while (r != 0 && errno == EINTR);
    if (r != 0)
        la_fail(s, "service at %s did not take the connection: %s", path, strerror(errno));
    else if (getsockopt(s->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != 0)
        la_fail(s, "service at %s refused: its end is not root's", path);
    else
        return true;
    if (s->fd >= 0)
        close(s->fd);
    return false;
}

/* Writes one frame; false with the reason recorded. The frame buffer is zeroed afterwards
 * because an answer may be a secret. */
static bool la_send(struct la_session *s, uint8_t type, const void *payload, size_t len)
{
    uint8_t wire[LA_FRAME_WIRE_MAX];
    size_t wire_len, done = 0;
    enum la_frame_status st = la_frame_encode(type, payload, len, wire, sizeof wire, &wire_len);
    if (st != LA_FRAME_OK) {
        la_fail(s, "could not encode a '%c' frame: %s", type, la_frame_status_text(st));
        return false;
    }
    while (done < wire_len) {
        /* MSG_NOSIGNAL: a helper that is gone is EPIPE here, not a SIGPIPE that would end
         * sudo or login. */
        ssize_t n = send(s->fd, wire + done, wire_len - done, MSG_NOSIGNAL);
        if (n > 0) {
            done += (size_t)n;
        } else if (n < 0 && errno == EAGAIN) {
            la_fail(s, "helper timed out: it stopped reading");
            break;
        } else if (n == 0 || errno != EINTR) {
            la_fail(s, "could not write to the helper: %s", strerror(errno));
            break;
        }
    }
    explicit_bzero(wire, sizeof wire);
    return done == wire_len;
}

/* --- the application's conversation ----------------------------------------------- */

/* Shows the frame's text in `style` through the application's conversation; *answer (for
 * a prompt) gets the reply. PAM_SILENT is the helper's to honour (the request says
 * `silent=1`): it knows which lines are chatter and which tell the user what to do with
 * the reader. sudo passes PAM_SILENT by default, so dropping everything here would leave a
 * sudo user with a silent reader. */
static int la_conv(struct la_session *s, const struct la_frame *f, int style, char **answer)
{
    char text[LA_FRAME_MAX];
    memcpy(text, f->payload, f->payload_len); /* no NUL in a payload: the decoder checks */
    text[f->payload_len] = '\0';
    return pam_prompt(s->pamh, style, answer, "%s", text);
}

/* Asks the application; NULL when its conversation failed or gave no answer (then the
 * run's PAM code says so: PAM_CONV_ERR for the cancel codes). */
static char *la_ask(struct la_session *s, const struct la_frame *f)
{
    char *answer = NULL;
    /* Both prompts shown while the reader waits are echo-off: a sudo user's habit is to
     * type the password at whatever prompt comes, and it must not show on the screen. */
    int style = f->type == 'p' ? PAM_PROMPT_ECHO_ON : PAM_PROMPT_ECHO_OFF;
    if (la_conv(s, f, style, &answer) != PAM_SUCCESS || answer == NULL) {
        free(answer);
        s->out->conv_failed = true;
        return NULL;
    }
    return answer;
}

static void la_forget(char *answer)
{
    if (answer == NULL)
        return;
    explicit_bzero(answer, strlen(answer));
    free(answer);
}

/* `P`/`p` → PAM_PROMPT_ECHO_OFF/ON; the reply is `A` with the answer, or `N` when the
 * conversation failed. */
static bool la_prompt(struct la_session *s, const struct la_frame *f)
{
    char *answer = la_ask(s, f);
    /* An answer that cannot travel as one frame (too long, not UTF-8) counts as no answer:
     * the helper must not get a cut or altered secret. */
    size_t len = answer ? strlen(answer) : 0;
    if (answer != NULL && (len > LA_FRAME_MAX - 1
                           || !la_utf8_valid((const uint8_t *)answer, len))) {
        la_forget(answer);
        answer = NULL;
        s->out->conv_failed = true;
    }
    bool sent = answer ? la_send(s, 'A', answer, len) : la_send(s, 'N', NULL, 0);
    la_forget(answer);
    return sent;
}

/*
 * The prompts shown while the reader waits: `W` asks for the password or a finger, `K` for
 * Enter to skip to the password. Whatever is typed at either is the password: it becomes
 * PAM_AUTHTOK for the password module after this one (try_first_pass/use_first_pass), and
 * the helper gets only `T` (the password never crosses the socket, and is typed once). An
 * empty line is `A` with nothing; when the finger matches, the helper ends the prompt by
 * putting a newline into the terminal's input. A failed conversation is `N`.
 */
static bool la_scan_prompt(struct la_session *s, const struct la_frame *f)
{
    char *answer = la_ask(s, f);
    bool sent;
    if (answer == NULL) {
        sent = la_send(s, 'N', NULL, 0);
    } else if (answer[0] != '\0') {
        if (pam_set_item(s->pamh, PAM_AUTHTOK, answer) != PAM_SUCCESS)
            pam_syslog(s->pamh, LOG_WARNING, "could not hand the typed password on");
        sent = la_send(s, 'T', NULL, 0);
    } else {
        sent = la_send(s, 'A', NULL, 0);
    }
    la_forget(answer);
    return sent;
}

/* --- Ctrl-C ------------------------------------------------------------------------ */

/*
 * Ctrl-C while the module waits for the helper: SIGINT becomes a byte on a self-pipe, which
 * the wait sees next to the connection and turns into a `C` frame (the helper then ends
 * with userFallback and the password prompt follows). Without this, Ctrl-C would do
 * whatever the application does with SIGINT, usually end it.
 *
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

/* Installs the handler, saving the application's disposition. */
static void la_interrupt_arm(struct la_session *s)
{
    struct sigaction sa = { .sa_handler = la_interrupt_handler };
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, NULL, &s->old_sigint) != 0)
        return;
    /* Ignored stays ignored: Ctrl-C then keeps meaning nothing. Our own handler already
     * there means another thread of this process is waiting on its helper: saving it would
     * restore it after that thread put the application's back, so this wait simply goes
     * without Ctrl-C. */
    bool siginfo = (s->old_sigint.sa_flags & SA_SIGINFO) != 0;
    if (!siginfo && (s->old_sigint.sa_handler == SIG_IGN
                     || s->old_sigint.sa_handler == la_interrupt_handler))
        return;
    la_interrupt_fd = s->interrupt[1];
    s->armed = sigaction(SIGINT, &sa, NULL) == 0;
    if (!s->armed)
        la_interrupt_fd = -1;
}

/* Puts the application's disposition back. */
static void la_interrupt_disarm(struct la_session *s)
{
    if (!s->armed)
        return;
    sigaction(SIGINT, &s->old_sigint, NULL);
    la_interrupt_fd = -1;
    s->armed = false;
}

/* Takes what the self-pipe holds; true when a SIGINT had arrived (any left over wakes
 * the next wait, which takes it as the same Ctrl-C). */
static bool la_interrupt_take(struct la_session *s)
{
    char buf[64];
    return read(s->interrupt[0], buf, sizeof buf) > 0;
}

/* --- the wait for the helper's frames ---------------------------------------------- */

/* How long the next wait may last: the budget, or less while a `C` is pending or the first
 * frame has not come. */
static int64_t la_wait_limit(const struct la_session *s)
{
    int64_t limit = s->budget_ms;
    int64_t now = la_clock_ms();
    if (s->cancel_deadline != 0 && s->cancel_deadline - now < limit)
        limit = s->cancel_deadline - now;
    if (!s->started && s->start_deadline - now < limit)
        limit = s->start_deadline - now;
    return limit;
}

static void la_fail_timeout(struct la_session *s)
{
    if (!s->started && s->budget_ms > 0)
        la_fail(s, "the service sent nothing within %d ms of the connection", LA_START_TIMEOUT_MS);
    else if (s->out->have_result)
        la_fail(s, "helper did not close the connection within %d ms after its result",
                LA_GRACE_MS);
    else if (s->cancel_deadline != 0 && s->budget_ms > 0)
        la_fail(s, "helper did not answer the cancel within %d ms", LA_GRACE_MS);
    else
        la_fail(s, "helper timed out after %ld s", s->args->helper_timeout_ms / 1000);
}

/* Ctrl-C: ask the helper to stop scanning, once, and give it a short grace to answer. A
 * helper that has not said a word yet gets none: Ctrl-C means the password, now. */
static bool la_on_interrupt(struct la_session *s)
{
    if (s->cancel_deadline != 0 || s->out->have_result)
        return true;
    if (!s->started) {
        la_fail(s, "interrupted before the helper's first frame");
        return false;
    }
    la_log_debug(s->pamh, s->args, "interrupted: sending cancel to the helper");
    s->cancel_deadline = la_clock_ms() + LA_GRACE_MS;
    return la_send(s, 'C', NULL, 0);
}

/* Reads what has come; false on end of file or error (recorded). */
static bool la_read_some(struct la_session *s)
{
    ssize_t n;
    do
        n = read(s->fd, s->in + s->in_len, sizeof s->in - s->in_len);
    while (n < 0 && errno == EINTR);
    /* ECONNRESET: the helper ended with something of ours unread (an `A` it did not need,
     * a `C` after its result); what it wrote before was read first. An end all the same. */
    if (n > 0)
        s->in_len += (size_t)n;
    else if (n < 0 && errno != ECONNRESET)
        la_fail(s, "could not read from the helper: %s", strerror(errno));
    else if (s->in_len != 0)
        la_fail(s, "garbled frame: %s", la_frame_status_text(LA_FRAME_INCOMPLETE));
    else if (!s->out->have_result)
        la_fail(s, "helper ended without a result");
    return n > 0;
}

/*
 * Waits until the helper wrote something and reads it. SIGINT is caught only here, while
 * nothing but the helper is being waited for; during a prompt the application's own
 * handling applies. False when the run cannot go on (the reason is recorded).
 */
static bool la_read_more(struct la_session *s)
{
    for (;;) {
        int64_t limit = la_wait_limit(s);
        if (limit <= 0) {
            la_fail_timeout(s);
            return false;
        }
        struct pollfd fds[2] = {
            { .fd = s->fd, .events = POLLIN },
            { .fd = s->interrupt[0], .events = POLLIN },
        };
        la_interrupt_arm(s);
        int64_t start = la_clock_ms();
        int r = poll(fds, 2, (int)limit);
        s->budget_ms -= la_clock_ms() - start;
        la_interrupt_disarm(s);
        if (r < 0 && errno != EINTR) {
            la_fail(s, "could not wait for the helper: %s", strerror(errno));
            return false;
        }
        if (r > 0 && (fds[1].revents & POLLIN) && la_interrupt_take(s)
            && !la_on_interrupt(s))
            return false;
        if (r > 0 && fds[0].revents != 0)
            return la_read_some(s);
    }
}

/* The next complete frame in s->in, reading as needed. *size is its wire size. */
static bool la_next_frame(struct la_session *s, struct la_frame *f, size_t *size)
{
    for (;;) {
        enum la_frame_status st = la_frame_decode(s->in, s->in_len, f, size);
        if (st == LA_FRAME_OK)
            return true;
        if (st == LA_FRAME_BAD_TYPE) {
            la_fail(s, "garbled frame: unknown frame type 0x%02x", s->in[LA_FRAME_HEADER]);
            return false;
        }
        if (st != LA_FRAME_INCOMPLETE) {
            la_fail(s, "garbled frame: %s", la_frame_status_text(st));
            return false;
        }
        if (!la_read_more(s))
            return false;
    }
}

/* Handles one frame; false when the exchange cannot go on (the reason is recorded). */
static bool la_dispatch(struct la_session *s, const struct la_frame *f, bool *done)
{
    const char *why = NULL;
    la_log_debug(s->pamh, s->args, "helper frame '%c', %zu bytes", f->type, f->payload_len);
    s->started = true;
    switch (f->type) {
    case 'S':
        return true;
    case 'I':
    case 'E':
        /* A failing display is not a reason to stop: no reply is needed. */
        la_conv(s, f, f->type == 'E' ? PAM_ERROR_MSG : PAM_TEXT_INFO, NULL);
        return true;
    case 'P':
    case 'p':
        return la_prompt(s, f);
    case 'W':
    case 'K':
        return la_scan_prompt(s, f);
    case 'R':
        *done = true;
        if (!la_result_parse(f->payload, f->payload_len, &s->out->result, &why)) {
            la_fail(s, "garbled frame: %s", why);
            return false;
        }
        s->out->have_result = true;
        return true;
    default:
        la_fail(s, "unexpected frame type '%c' from the helper", f->type);
        return false;
    }
}

/* Frames until the result, then only end of file may come: anything else makes the whole
 * run a failure. Our sending side is shut first, so a helper that reads to the end before
 * exiting is not left waiting for us while we wait for it. */
static void la_exchange(struct la_session *s)
{
    bool done = false;
    while (!done) {
        struct la_frame f;
        size_t size;
        if (!la_next_frame(s, &f, &size) || !la_dispatch(s, &f, &done))
            return;
        memmove(s->in, s->in + size, s->in_len - size);
        s->in_len -= size;
    }
    shutdown(s->fd, SHUT_WR);
    /* The result is in, whatever was left of helper_timeout: the grace is for the close. */
    s->budget_ms = LA_GRACE_MS;
    if (s->in_len != 0 || la_read_more(s))
        la_fail(s, "frame after the result");
}

/* The unprivileged authsucc line proves the password to the helper (docs/PROTOCOL.md):
 * PAM_AUTHTOK as an `A` right after the request, or `N` when there is none or it cannot
 * travel as one frame. */
static bool la_send_authtok(struct la_session *s)
{
    if (s->args->proof == NULL) /* the first line has no password to prove */
        return true;
    const char *tok = s->args->authtok;
    size_t len = tok ? strlen(tok) : 0;
    if (tok == NULL || len == 0 || len >= LA_FRAME_MAX
        || !la_utf8_valid((const uint8_t *)tok, len))
        return la_send(s, 'N', NULL, 0);
    return la_send(s, 'A', tok, len);
}

void la_session_run(pam_handle_t *pamh, const struct la_args *args, const char *request,
                    size_t request_len, struct la_outcome *out)
{
    struct la_session s = {
        .pamh = pamh, .args = args, .fd = -1, .interrupt = { -1, -1 },
        .budget_ms = args->helper_timeout_ms,
        .start_deadline = la_clock_ms() + LA_START_TIMEOUT_MS, .out = out,
    };
    memset(out, 0, sizeof *out);
    /* The one door: no service here is the password at once. */
    if (!la_connect(&s, args->service_path))
        return;
    if (pipe2(s.interrupt, O_CLOEXEC | O_NONBLOCK) != 0)
        la_fail(&s, "could not create the interrupt pipe: %s", strerror(errno));
    else if (la_send(&s, 'Q', request, request_len) && la_send_authtok(&s))
        la_exchange(&s);
    /* Closing ends the request on the service's side: its helper is the service's to end
     * and reap. */
    close(s.fd);
    for (int i = 0; i < 2; i++)
        if (s.interrupt[i] >= 0)
            close(s.interrupt[i]);
    if (out->failure[0] != '\0')
        out->have_result = false;
}

int la_outcome_pam(const struct la_outcome *out)
{
    if (!out->have_result)
        return PAM_AUTHINFO_UNAVAIL;
    return la_result_to_pam(out->result.code, out->conv_failed);
}
