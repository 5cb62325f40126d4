/*
 * One run of the helper: start it, send the request, relay its frames until its result,
 * check that it ended cleanly, and always reap it. Any doubt is a failure with a reason.
 */
#ifndef LA_SESSION_H
#define LA_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include <security/pam_modules.h>

#include "args.h"
#include "result_map.h"

struct la_outcome {
    bool have_result;       /* a valid `R` arrived and the helper then ended cleanly */
    struct la_result result;
    bool conv_failed;       /* the application's conversation failed at a prompt */
    char failure[384];      /* why the run failed; empty when have_result */
};

/* Runs the helper with the encoded request payload. silent: PAM_SILENT was passed. */
void la_session_run(pam_handle_t *pamh, const struct la_args *args, const char *request,
                    size_t request_len, bool silent, struct la_outcome *out);

/* The PAM code for an outcome: the table's answer for a result, else PAM_AUTHINFO_UNAVAIL. */
int la_outcome_pam(const struct la_outcome *out);

#endif
