/* Log lines; see log.h. */
#include "log.h"

#include "args.h"
#include "request.h"
#include "result_map.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>

/* Copies in to out (cap > 0) with control characters and `"` replaced by `?`. */
static void la_log_clean(const char *in, char *out, size_t cap)
{
    size_t i = 0;
    for (; in[i] != '\0' && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)in[i];
        out[i] = (c < 0x20 || c == 0x7f || c == '"') ? '?' : (char)c;
    }
    out[i] = '\0';
}

void la_log_outcome(pam_handle_t *pamh, int priority, const char *user, const char *result_name,
                    const char *reason, int pam_code, const char *cause)
{
    char u[128], s[128], t[128], rh[256], ru[128], c[512], why[48] = "";
    if (priority == LA_LOG_BY_CODE)
        priority = pam_code == PAM_SUCCESS ? LOG_INFO
            : strcmp(result_name, LA_RESULT_HELPER_FAILURE) == 0 ? LOG_ERR : LOG_NOTICE;
    la_log_clean(user ? user : "", u, sizeof u);
    la_log_clean(la_item_string(pamh, PAM_SERVICE), s, sizeof s);
    la_log_clean(la_item_string(pamh, PAM_TTY), t, sizeof t);
    la_log_clean(la_item_string(pamh, PAM_RHOST), rh, sizeof rh);
    la_log_clean(la_item_string(pamh, PAM_RUSER), ru, sizeof ru);
    la_log_clean(cause ? cause : "", c, sizeof c);
    if (reason != NULL && reason[0] != '\0')
        snprintf(why, sizeof why, " reason=%s", reason);
    pam_syslog(pamh, priority,
               "user=\"%s\" service=\"%s\" tty=\"%s\" rhost=\"%s\" ruser=\"%s\" result=%s%s pam=%s "
               "cause=\"%s\"", u, s, t, rh, ru, result_name, why, la_pam_code_name(pam_code), c);
}

void la_log_debug(pam_handle_t *pamh, const struct la_args *args, const char *fmt, ...)
{
    if (!args->debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    pam_vsyslog(pamh, LOG_DEBUG, fmt, ap);
    va_end(ap);
}
