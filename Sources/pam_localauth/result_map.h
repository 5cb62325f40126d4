/*
 * The one table from the helper's result to a PAM return code (docs/ARCHITECTURE.md,
 * "Where each rule lives"), and the parser of the helper's `R` frame. Nothing else in the
 * module decides a PAM code from a helper result.
 */
#ifndef LA_RESULT_MAP_H
#define LA_RESULT_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Result codes: Apple's LAError raw values, 0 for success, 1 for "not opted in" (the Swift
 * sides' table is ResultCode, Sources/LocalAuthProtocol/ResultCode.swift; the root side never
 * gives the three it has and this table has not: -11, -12, -14). */
enum {
    LA_CODE_SUCCESS = 0,
    LA_CODE_NOT_OPTED_IN = 1,
    LA_CODE_AUTHENTICATION_FAILED = -1,
    LA_CODE_USER_CANCEL = -2,
    LA_CODE_USER_FALLBACK = -3,
    LA_CODE_SYSTEM_CANCEL = -4,
    LA_CODE_PASSCODE_NOT_SET = -5,
    LA_CODE_BIOMETRY_NOT_AVAILABLE = -6,
    LA_CODE_BIOMETRY_NOT_ENROLLED = -7,
    LA_CODE_BIOMETRY_LOCKOUT = -8,
    LA_CODE_APP_CANCEL = -9,
    LA_CODE_INVALID_CONTEXT = -10,
    LA_CODE_BIOMETRY_DISCONNECTED = -13,
    LA_CODE_NOT_INTERACTIVE = -1004,
};

/*
 * The PAM code for a result. conv_failed: the module's own conversation with the
 * application failed during this run (turns the cancel codes into PAM_CONV_ERR).
 * A code missing from the table gives PAM_AUTHINFO_UNAVAIL, never success.
 */
int la_result_to_pam(long code, bool conv_failed);

/* "success", "authenticationFailed", ... or NULL for a code the table does not know. */
const char *la_result_name(long code);

/* "PAM_SUCCESS", "PAM_AUTH_ERR", ... for the codes this module returns; else "PAM_?". */
const char *la_pam_code_name(int pam_code);

/* The parsed `R` payload. cause is NUL-terminated, possibly truncated, maybe empty.
 * reason names the rule that applied ("lockout", "idle", ...; empty when none): a word of
 * lowercase letters and `-`, anything else is dropped. */
struct la_result {
    long code;
    char reason[32];
    char cause[256];
};

/* Parses an `R` payload; false (with *why set to a phrase) when it is not valid. */
bool la_result_parse(const uint8_t *payload, size_t len, struct la_result *out,
                     const char **why);

#endif
