/*
 * Log lines through pam_syslog: one summary line per outcome, plus debug lines when asked.
 * Text from the helper or the user is cleaned first: a log line is one line, and no
 * password ever goes into one (only the helper's `cause`, user, service and names).
 */
#ifndef LA_LOG_H
#define LA_LOG_H

#include <security/pam_modules.h>

struct la_args;

/* Result names the module uses for outcomes that are not a helper result. */
#define LA_RESULT_HELPER_FAILURE "helperFailure"
#define LA_RESULT_NO_USER "noUser"

/* The priority that follows from the outcome: info for success, an error for a broken
 * helper or service, a notice for a denial. */
enum { LA_LOG_BY_CODE = -1 };

/*
 * The summary: user, service, terminal, remote host and user (as an administrator reading
 * auth.log next to pam_unix's lines expects), the result's name (an LAError name,
 * "success", "notOptedIn", or the module's own "helperFailure"/"noUser"), the rule that
 * applied (the helper's `reason`; NULL or "" for none), the PAM code's name and why.
 */
void la_log_outcome(pam_handle_t *pamh, int priority, const char *user, const char *result_name,
                    const char *reason, int pam_code, const char *cause);

/* A debug line, written only with the `debug` argument. */
void la_log_debug(pam_handle_t *pamh, const struct la_args *args, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
