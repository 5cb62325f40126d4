/* One helper run; see session.h. */
#include "session.h"
#include "service.h"

#include "conv.h"
#include "frame.h"
#include "helper_spawn.h"
#include "interrupt.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the helper gets to answer a `C`, and to exit after its `R`. */
enum { LA_GRACE_MS = 2000 };

/* How long a helper may take to send its first frame. A healthy one sends `S` within tens
 * of milliseconds; one that hangs in its start-up (a frozen library call) must not hold
 * the application for the whole helper_timeout. */
enum { LA_START_TIMEOUT_MS = 3000 };

/* The same through localauthd, whose first connection after boot or after it exited when
 * idle also starts the service itself (socket activation): in the Debian 13 guest under a
 * loaded host, GDM's first login took longer than 3 s to hear from it, and lost the
 * finger and the password's record. A service that accepts and says nothing is still
 * bounded, and localauthctl doctor names it. */
enum { LA_SERVICE_START_TIMEOUT_MS = 10000 };

struct la_session {
    const struct la_args *args;
    struct la_helper helper;
    struct la_interrupt interrupt;
    struct la_relay relay;
    int64_t budget_ms;       /* what is left of helper_timeout */
    int64_t cancel_deadline; /* monotonic ms by which a cancelled helper must answer; 0: none */
    int64_t start_deadline;  /* monotonic ms by which the first frame must come */
    bool started;            /* a frame came: the helper is alive and has the request */
    bool helper_ended;       /* end of file or a broken pipe: it is gone or going */
    uint8_t in[LA_FRAME_WIRE_MAX];
    size_t in_len;
    struct la_outcome *out;
};

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

static bool la_send(struct la_session *s, uint8_t type, const void *payload, size_t len)
{
    char why[192];
    if (la_helper_send(&s->helper, type, payload, len, &s->budget_ms, why, sizeof why))
        return true;
    s->helper_ended = s->helper_ended || s->helper.gone;
    la_fail(s, "%s", why);
    return false;
}

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
    if (!s->started && s->budget_ms > 0 && s->helper.service)
        la_fail(s, "the service sent nothing within %d ms of the connection", LA_SERVICE_START_TIMEOUT_MS);
    else if (!s->started && s->budget_ms > 0)
        la_fail(s, "helper sent nothing within %d ms of its start", LA_START_TIMEOUT_MS);
    else if (s->out->have_result)
        la_fail(s, "helper did not end within %d ms after its result", LA_GRACE_MS);
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
    la_log_debug(s->relay.pamh, s->args, "interrupted: sending cancel to the helper");
    s->cancel_deadline = la_clock_ms() + LA_GRACE_MS;
    return la_send(s, 'C', NULL, 0);
}

/* Reads what the helper has written; false on end of file or error (recorded). */
static bool la_read_some(struct la_session *s)
{
    ssize_t n;
    do
        n = read(s->helper.from_helper, s->in + s->in_len, sizeof s->in - s->in_len);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
        s->in_len += (size_t)n;
        return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return true; /* the service's connection is non-blocking: nothing yet */
    if (n == 0) {
        s->helper_ended = true;
        if (s->in_len != 0)
            la_fail(s, "garbled frame: %s", la_frame_status_text(LA_FRAME_INCOMPLETE));
        else if (!s->out->have_result)
            la_fail(s, "helper ended without a result");
        return false;
    }
    la_fail(s, "could not read from the helper: %s", strerror(errno));
    return false;
}

/* One poll on the helper's pipe and the self-pipe, charged to the budget. */
static int la_poll_once(struct la_session *s, struct pollfd fds[2], int64_t limit)
{
    la_interrupt_arm(&s->interrupt);
    int64_t start = la_clock_ms();
    int r = poll(fds, 2, (int)limit);
    s->budget_ms -= la_clock_ms() - start;
    la_interrupt_disarm(&s->interrupt);
    return r;
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
            { .fd = s->helper.from_helper, .events = POLLIN },
            { .fd = s->interrupt.read_fd, .events = POLLIN },
        };
        int r = la_poll_once(s, fds, limit);
        if (r < 0 && errno != EINTR) {
            la_fail(s, "could not wait for the helper: %s", strerror(errno));
            return false;
        }
        if (r > 0 && (fds[1].revents & POLLIN) && la_interrupt_take(&s->interrupt)
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

static void la_consume(struct la_session *s, size_t size)
{
    memmove(s->in, s->in + size, s->in_len - size);
    s->in_len -= size;
}

static bool la_take_result(struct la_session *s, const struct la_frame *f)
{
    const char *why = NULL;
    if (!la_result_parse(f->payload, f->payload_len, &s->out->result, &why)) {
        la_fail(s, "garbled frame: %s", why);
        return false;
    }
    s->out->have_result = true;
    return true;
}

/* Handles one frame; false when the exchange is over (result taken, or failure). */
static bool la_dispatch(struct la_session *s, const struct la_frame *f, bool *done)
{
    char why[192];
    la_log_debug(s->relay.pamh, s->args, "helper frame '%c', %zu bytes", f->type,
                 f->payload_len);
    s->started = true;
    switch (f->type) {
    case 'S':
        return true;
    case 'I':
    case 'E':
        la_conv_show(&s->relay, f);
        return true;
    case 'P':
    case 'p':
        if (la_conv_prompt(&s->relay, f, why, sizeof why))
            return true;
        s->helper_ended = s->helper_ended || s->helper.gone;
        la_fail(s, "%s", why);
        return false;
    case 'W':
    case 'K':
        if (la_conv_scan_prompt(&s->relay, f, why, sizeof why))
            return true;
        s->helper_ended = s->helper_ended || s->helper.gone;
        la_fail(s, "%s", why);
        return false;
    case 'R':
        *done = true;
        return la_take_result(s, f);
    default:
        la_fail(s, "unexpected frame type '%c' from the helper", f->type);
        return false;
    }
}

/* Frames until the result. False on any failure (recorded). */
static bool la_exchange(struct la_session *s)
{
    bool done = false;
    while (!done) {
        struct la_frame f;
        size_t size;
        if (!la_next_frame(s, &f, &size) || !la_dispatch(s, &f, &done))
            return false;
        la_consume(s, size);
    }
    return true;
}

/* After `R` only end of file may come; anything else makes the whole run a failure.
 * Our side is closed first, so a helper that reads to the end before exiting is not
 * left waiting for us while we wait for it. */
static bool la_expect_end(struct la_session *s)
{
    la_helper_close_input(&s->helper);
    if (s->in_len != 0) {
        la_fail(s, "frame after the result");
        return false;
    }
    /* The result is in, whatever was left of helper_timeout: the grace is for the exit. */
    s->budget_ms = LA_GRACE_MS;
    if (la_read_more(s)) {
        la_fail(s, "frame after the result");
        return false;
    }
    /* End of file sets no failure once the result is in; a timeout or error did. */
    return s->out->failure[0] == '\0';
}

/*
 * Ends the helper: a helper that went away on its own (or is expected to) gets a grace to
 * exit and its status is checked; any other is killed at once. Always reaped.
 */
static void la_finish(struct la_session *s)
{
    bool clean = s->out->failure[0] == '\0';
    la_helper_close_pipes(&s->helper);
    int status;
    bool killed;
    enum la_reap reap = la_helper_reap(&s->helper, clean || s->helper_ended ? LA_GRACE_MS : 0,
                                       &status, &killed);
    bool known = reap == LA_REAP_STATUS;
    char how[64];
    la_helper_describe_status(status, how, sizeof how);
    /* LA_REAP_EXITED: the host reaped it; after a result and end of file that is a clean
     * end, since nothing more was expected from it but its exit. */
    if (reap == LA_REAP_LOST)
        la_fail(s, "helper did not end when it was killed");
    else if (killed && clean)
        la_fail(s, "helper did not exit after its result");
    else if (known && clean && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        la_fail(s, "helper ended with %s after its result", how);
    else if (known && s->helper_ended && !killed && !clean) {
        size_t n = strlen(s->out->failure);
        snprintf(s->out->failure + n, sizeof s->out->failure - n, " (%s)", how);
    }
    if (s->out->failure[0] != '\0')
        s->out->have_result = false;
}

static void la_session_init(struct la_session *s, pam_handle_t *pamh,
                            const struct la_args *args, bool silent, struct la_outcome *out)
{
    memset(s, 0, sizeof *s);
    memset(out, 0, sizeof *out);
    s->args = args;
    s->out = out;
    s->budget_ms = args->helper_timeout_ms;
    s->start_deadline = la_clock_ms() + LA_START_TIMEOUT_MS;
    s->helper.pid = -1;
    s->helper.to_helper = s->helper.from_helper = -1;
    s->relay = (struct la_relay){
        .pamh = pamh, .helper = &s->helper, .budget_ms = &s->budget_ms, .silent = silent,
    };
}

/* The unprivileged authsucc line proves the password to the helper (docs/PROTOCOL.md):
 * PAM_AUTHTOK as an `A` right after the request, or `N` when there is none or it cannot
 * travel as one frame. */
static bool la_send_authtok(struct la_session *s)
{
    if (!s->args->pass_authtok)
        return true;
    const char *tok = s->args->authtok;
    size_t len = tok ? strlen(tok) : 0;
    if (tok == NULL || len == 0 || len >= LA_FRAME_MAX
        || !la_utf8_valid((const uint8_t *)tok, len))
        return la_send(s, 'N', NULL, 0);
    return la_send(s, 'A', tok, len);
}

void la_session_run(pam_handle_t *pamh, const struct la_args *args, const char *request,
                    size_t request_len, bool silent, struct la_outcome *out)
{
    struct la_session s;
    char why[256];
    la_session_init(&s, pamh, args, silent, out);
    enum la_connect via = args->service_path == NULL ? LA_CONNECT_ABSENT
        : la_service_connect(&s.helper, args->service_path, s.start_deadline - la_clock_ms(),
                             why, sizeof why);
    if (via == LA_CONNECT_FAILED) {
        la_fail(&s, "%s", why);
        return;
    }
    if (via == LA_CONNECT_OK)
        s.start_deadline = la_clock_ms() + LA_SERVICE_START_TIMEOUT_MS;
    /* A caller that is not root has no setuid program to fall back on: without the service
     * its user types the password (the locker's own check). */
    if (via == LA_CONNECT_ABSENT && args->helper_path == NULL) {
        la_fail(&s, "localauthd is not running (no socket at %s): a caller that is not root "
                "reaches the fingerprint only through it",
                args->service_path ? args->service_path : "(none)");
        return;
    }
    /* No service here (no systemd: a container, a rescue shell): the same helper, started
     * for this one request. */
    if (via == LA_CONNECT_ABSENT && !la_helper_path_trusted(args->helper_path, why, sizeof why)) {
        la_fail(&s, "%s", why);
        return;
    }
    if (!la_interrupt_open(&s.interrupt)) {
        la_fail(&s, "could not create the interrupt pipe: %s", strerror(errno));
        la_helper_close_pipes(&s.helper);
        return;
    }
    if (via == LA_CONNECT_ABSENT && !la_helper_start(&s.helper, args->helper_path, why, sizeof why)) {
        la_fail(&s, "%s", why);
    } else {
        if (la_send(&s, 'Q', request, request_len) && la_send_authtok(&s) && la_exchange(&s))
            la_expect_end(&s);
        la_finish(&s);
    }
    la_interrupt_close(&s.interrupt);
    out->conv_failed = s.relay.conv_failed;
}

int la_outcome_pam(const struct la_outcome *out)
{
    if (!out->have_result)
        return PAM_AUTHINFO_UNAVAIL;
    return la_result_to_pam(out->result.code, out->conv_failed);
}
