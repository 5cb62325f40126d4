/* The result table; see result_map.h. */
#include "result_map.h"

#include "kv.h"

#include <string.h>

#include <security/pam_modules.h>

struct la_result_row {
    long code;
    const char *name;
    int pam;              /* the answer when the conversation worked */
    int pam_conv_failed;  /* the answer when our conversation with the application failed */
};

/* docs/ARCHITECTURE.md, "Where each rule lives". userCancel and appCancel deny this module's
 * line but let the stack go on; when the application's conversation itself broke,
 * PAM_CONV_ERR says so. Everything that only means "no fingerprint now" is
 * PAM_AUTHINFO_UNAVAIL so the password module runs.
 * No row is PAM_IGNORE: at a `required` line followed by a module that succeeds
 * (pam_permit, pam_env, ...), PAM_IGNORE would let the user in with nothing. This table is
 * the auth phase's; the account phase judges no account and always answers PAM_IGNORE
 * (pam_sm_acct_mgmt), whatever the helper said. */
/* Both columns: unavailable whether or not the conversation failed. */
#define LA_UNAVAIL PAM_AUTHINFO_UNAVAIL, PAM_AUTHINFO_UNAVAIL

static const struct la_result_row la_result_table[] = {
    { LA_CODE_SUCCESS, "success", PAM_SUCCESS, PAM_SUCCESS },
    { LA_CODE_NOT_OPTED_IN, "notOptedIn", LA_UNAVAIL },
    { LA_CODE_AUTHENTICATION_FAILED, "authenticationFailed", PAM_AUTH_ERR, PAM_AUTH_ERR },
    { LA_CODE_USER_CANCEL, "userCancel", PAM_AUTH_ERR, PAM_CONV_ERR },
    { LA_CODE_USER_FALLBACK, "userFallback", LA_UNAVAIL },
    { LA_CODE_SYSTEM_CANCEL, "systemCancel", LA_UNAVAIL },
    { LA_CODE_PASSCODE_NOT_SET, "passcodeNotSet", LA_UNAVAIL },
    { LA_CODE_BIOMETRY_NOT_AVAILABLE, "biometryNotAvailable", LA_UNAVAIL },
    { LA_CODE_BIOMETRY_NOT_ENROLLED, "biometryNotEnrolled", LA_UNAVAIL },
    { LA_CODE_BIOMETRY_LOCKOUT, "biometryLockout", LA_UNAVAIL },
    { LA_CODE_APP_CANCEL, "appCancel", PAM_AUTH_ERR, PAM_CONV_ERR },
    { LA_CODE_INVALID_CONTEXT, "invalidContext", LA_UNAVAIL },
    { LA_CODE_BIOMETRY_DISCONNECTED, "biometryDisconnected", LA_UNAVAIL },
    { LA_CODE_NOT_INTERACTIVE, "notInteractive", LA_UNAVAIL },
};

static const struct la_result_row *la_result_row(long code)
{
    for (size_t i = 0; i < sizeof la_result_table / sizeof la_result_table[0]; i++)
        if (la_result_table[i].code == code)
            return &la_result_table[i];
    return NULL;
}

int la_result_to_pam(long code, bool conv_failed)
{
    const struct la_result_row *row = la_result_row(code);
    if (row == NULL)
        return PAM_AUTHINFO_UNAVAIL;
    return conv_failed ? row->pam_conv_failed : row->pam;
}

const char *la_result_name(long code)
{
    const struct la_result_row *row = la_result_row(code);
    return row ? row->name : NULL;
}

/* Names come from the header's own macros, so a number is never written down here. */
#define LA_PAM_NAME(c) { c, #c }
static const struct { int code; const char *name; } la_pam_names[] = {
    LA_PAM_NAME(PAM_SUCCESS),
    LA_PAM_NAME(PAM_AUTH_ERR),
    LA_PAM_NAME(PAM_AUTHINFO_UNAVAIL),
    LA_PAM_NAME(PAM_IGNORE),
    LA_PAM_NAME(PAM_CONV_ERR),
};

const char *la_pam_code_name(int pam_code)
{
    for (size_t i = 0; i < sizeof la_pam_names / sizeof la_pam_names[0]; i++)
        if (la_pam_names[i].code == pam_code)
            return la_pam_names[i].name;
    return "PAM_?";
}

/* Looks key up: false (with *why) for a payload that is not a valid result; *v NULL when
 * the key is absent. */
static bool la_result_field(const uint8_t *payload, size_t len, const char *key,
                            const uint8_t **v, size_t *vlen, const char **why)
{
    *v = NULL;
    switch (la_kv_find(payload, len, key, v, vlen)) {
    case LA_KV_FOUND: return true;
    case LA_KV_ABSENT: return true;
    case LA_KV_DUPLICATE: *why = "result with a repeated key"; return false;
    case LA_KV_MALFORMED: break;
    }
    *why = "malformed result payload";
    return false;
}

/* The cause is only for the log: a missing one is fine, a long one is cut. The reason is
 * only for the log line too: a plain word, or nothing. */
bool la_result_parse(const uint8_t *payload, size_t len, struct la_result *out,
                     const char **why)
{
    const uint8_t *v;
    size_t n;
    out->reason[0] = out->cause[0] = '\0';
    if (!la_result_field(payload, len, "code", &v, &n, why))
        return false;
    if (v == NULL || !la_kv_parse_int(v, n, &out->code)) {
        *why = v == NULL ? "result without a code" : "result code is not a number";
        return false;
    }
    if (!la_result_field(payload, len, "reason", &v, &n, why))
        return false;
    size_t plain = 0;
    while (v != NULL && plain < n && ((v[plain] >= 'a' && v[plain] <= 'z') || v[plain] == '-'))
        plain++;
    if (v != NULL && plain == n && n < sizeof out->reason) {
        memcpy(out->reason, v, n);
        out->reason[n] = '\0';
    }
    if (!la_result_field(payload, len, "cause", &v, &n, why))
        return false;
    if (v != NULL) {
        n = n < sizeof out->cause ? n : sizeof out->cause - 1;
        memcpy(out->cause, v, n);
        out->cause[n] = '\0';
    }
    return true;
}
