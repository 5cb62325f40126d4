/*
 * Log lines through pam_syslog: one summary line per outcome, plus debug lines when asked.
 * Text from the helper or the user is cleaned first: a log line is one line, and no
 * password ever goes into one (only the helper's `cause`, user, service and names).
 */
#ifndef LA_LOG_H
#define LA_LOG_H

#include <stddef.h>

#include <security/pam_modules.h>

struct la_args;

/* Result names the module uses for outcomes that are not a helper result. */
#define LA_RESULT_HELPER_FAILURE "helperFailure"
#define LA_RESULT_NO_USER "noUser"

/*
 * The summary: user, service, the result's name (an LAError name, "success", "notOptedIn",
 * or the module's own "helperFailure"/"noUser"), the PAM code's name and why.
 */
void la_log_outcome(pam_handle_t *pamh, const char *user, const char *result_name,
                    int pam_code, const char *cause);

/* The same line at a priority of the caller's choosing (the lines after the password,
 * whose PAM code says nothing about how it went). */
void la_log_outcome_at(pam_handle_t *pamh, int priority, const char *user,
                       const char *result_name, int pam_code, const char *cause);

/* The same with the rule that applied (the helper's `reason`, "" for none). The line also
 * names the terminal, remote host and remote user (PAM_TTY, PAM_RHOST, PAM_RUSER), as an
 * administrator reading auth.log next to pam_unix's lines expects. */
void la_log_outcome_reason(pam_handle_t *pamh, const char *user, const char *result_name,
                           const char *reason, int pam_code, const char *cause);

/* A debug line, written only with the `debug` argument. */
void la_log_debug(pam_handle_t *pamh, const struct la_args *args, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copies in to out (cap > 0) with control characters and `"` replaced by `?`. */
void la_log_clean(const char *in, char *out, size_t cap);

#endif
