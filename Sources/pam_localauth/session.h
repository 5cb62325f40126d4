/*
 * One request through localauthd, the module's one door to root's side
 * (docs/ARCHITECTURE.md, "The one door"): connect, send the request, relay the helper's
 * frames through the application's conversation until its result, and expect the
 * connection to close after it. Any doubt is a failure with a reason. The module starts no
 * process: without the service it answers at once and the password follows. The service
 * learns who asks from the kernel (the peer's credentials and pidfd).
 */
#ifndef LA_SESSION_H
#define LA_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include <security/pam_modules.h>

#include "args.h"
#include "result_map.h"

struct la_outcome {
    bool have_result;       /* a valid `R` arrived and the connection then closed cleanly */
    struct la_result result;
    bool conv_failed;       /* the application's conversation failed at a prompt */
    bool no_service;        /* no socket at the service's path: nothing was asked */
    char failure[384];      /* why the run failed; empty when have_result */
};

/* Runs the encoded request payload through the service. */
void la_session_run(pam_handle_t *pamh, const struct la_args *args, const char *request,
                    size_t request_len, struct la_outcome *out);

/* The PAM code for an outcome: the table's answer for a result, else PAM_AUTHINFO_UNAVAIL. */
int la_outcome_pam(const struct la_outcome *out);

#endif
