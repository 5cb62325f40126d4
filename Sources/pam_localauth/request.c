/* The request; see request.h. */
#include "request.h"

#include "kv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <security/pam_ext.h>

const char *la_item_string(pam_handle_t *pamh, int item)
{
    const void *v = NULL;
    if (pam_get_item(pamh, item, &v) != PAM_SUCCESS || v == NULL)
        return "";
    return v;
}

/* A locale name is only for picking message texts: anything but a plain name such as
 * de_DE.UTF-8@euro is dropped rather than forwarded. */
static bool la_locale_plain(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n >= 64)
        return false;
    return strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.@-") == n;
}

/* The message locale: LC_ALL, LC_MESSAGES, LANG of the PAM environment first (what the
 * application set up for the session), then of the process. */
static void la_request_locale(pam_handle_t *pamh, char *out, size_t cap)
{
    static const char *const names[] = { "LC_ALL", "LC_MESSAGES", "LANG" };
    out[0] = '\0';
    for (int from_process = 0; from_process <= 1; from_process++) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            const char *v = from_process ? getenv(names[i]) : pam_getenv(pamh, names[i]);
            if (v != NULL && v[0] != '\0') {
                if (la_locale_plain(v))
                    snprintf(out, cap, "%s", v);
                return;
            }
        }
    }
}

/* LANGUAGE (gettext's list of languages, `zh_TW:zh_CN:en`), from the PAM environment, then
 * the process; only letters, digits and `_.@:-` are forwarded. */
static void la_request_language(pam_handle_t *pamh, char *out, size_t cap)
{
    const char *v = pam_getenv(pamh, "LANGUAGE");
    if (v == NULL || v[0] == '\0')
        v = getenv("LANGUAGE");
    out[0] = '\0';
    if (v != NULL && strlen(v) < cap
        && strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.@:-") == strlen(v))
        snprintf(out, cap, "%s", v);
}

/* Whether a graphical session is named: the application's X display item, or a display
 * in the PAM or process environment. Only a hint for "is anyone there"; never trusted for
 * anything else. */
static bool la_request_display(pam_handle_t *pamh)
{
    static const char *const names[] = { "WAYLAND_DISPLAY", "DISPLAY" };
    if (la_item_string(pamh, PAM_XDISPLAY)[0] != '\0')
        return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *p = pam_getenv(pamh, names[i]);
        const char *e = getenv(names[i]);
        if ((p != NULL && p[0] != '\0') || (e != NULL && e[0] != '\0'))
            return true;
    }
    return false;
}

void la_request_gather(pam_handle_t *pamh, int flags, const struct la_args *args,
                       const char *mode, const char *user, struct la_request *req)
{
    *req = (struct la_request){
        .mode = mode,
        .user = user,
        .service = la_item_string(pamh, PAM_SERVICE),
        .tty = la_item_string(pamh, PAM_TTY),
        .rhost = la_item_string(pamh, PAM_RHOST),
        .ruser = la_item_string(pamh, PAM_RUSER),
        .silent = (flags & PAM_SILENT) != 0,
        .first_line = strcmp(mode, "authsucc") == 0 && args->first_line,
        .proof = args->proof,
        .caller_uid = (unsigned long)getuid(),
        .caller_pid = (long)getpid(),
        .stdin_tty = isatty(STDIN_FILENO) == 1,
        .display = la_request_display(pamh),
        .args = args,
    };
    la_request_locale(pamh, req->locale, sizeof req->locale);
    la_request_language(pamh, req->language, sizeof req->language);
}

bool la_request_encode(const struct la_request *req, char *buf, size_t cap, size_t *len,
                       char *why, size_t why_cap)
{
    struct la_kv_writer w;
    char uid[24], pid[24];
    snprintf(uid, sizeof uid, "%lu", req->caller_uid);
    snprintf(pid, sizeof pid, "%ld", req->caller_pid);
    la_kv_init(&w, buf, cap);
    la_kv_add(&w, "version", "1");
    la_kv_add(&w, "mode", req->mode);
    la_kv_add(&w, "user", req->user);
    la_kv_add(&w, "service", req->service);
    la_kv_add(&w, "tty", req->tty);
    la_kv_add(&w, "rhost", req->rhost);
    la_kv_add(&w, "ruser", req->ruser);
    la_kv_add(&w, "silent", req->silent ? "1" : "0");
    la_kv_add(&w, "stdin_tty", req->stdin_tty ? "1" : "0");
    la_kv_add(&w, "display", req->display ? "1" : "0");
    la_kv_add(&w, "locale", req->locale);
    la_kv_add(&w, "language", req->language);
    la_kv_add(&w, "caller_uid", uid);
    la_kv_add(&w, "pid", pid);
    if (req->first_line)
        la_kv_add(&w, "first_line", "1");
    if (req->proof != NULL)
        la_kv_add(&w, "proof", req->proof);
    if (req->args->reader_unreachable)
        la_kv_add(&w, "reader", "unreachable");
    for (int i = 0; i < req->args->argc; i++)
        la_kv_add(&w, "arg", req->args->argv[i]);
    if (w.failed_key != NULL) {
        snprintf(why, why_cap, w.too_long ? "request too large at `%s`"
                 : "request value for `%s` is not one line of UTF-8 text", w.failed_key);
        return false;
    }
    *len = w.len;
    return true;
}
