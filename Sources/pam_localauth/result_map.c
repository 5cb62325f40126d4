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

/* DESIGN.md §3. userCancel and appCancel deny this module's line but let the stack go on;
 * when the application's conversation itself broke, PAM_CONV_ERR says so. Everything that
 * only means "no fingerprint now" is PAM_AUTHINFO_UNAVAIL so the password module runs.
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
    LA_PAM_NAME(PAM_USER_UNKNOWN),
    LA_PAM_NAME(PAM_MAXTRIES),
    LA_PAM_NAME(PAM_BUF_ERR),
    LA_PAM_NAME(PAM_SYSTEM_ERR),
};

const char *la_pam_code_name(int pam_code)
{
    for (size_t i = 0; i < sizeof la_pam_names / sizeof la_pam_names[0]; i++)
        if (la_pam_names[i].code == pam_code)
            return la_pam_names[i].name;
    return "PAM_?";
}

static bool la_result_code(const uint8_t *payload, size_t len, long *code, const char **why)
{
    const uint8_t *v;
    size_t vlen;
    switch (la_kv_find(payload, len, "code", &v, &vlen)) {
    case LA_KV_FOUND:
        if (la_kv_parse_int(v, vlen, code))
            return true;
        *why = "result code is not a number";
        return false;
    case LA_KV_ABSENT: *why = "result without a code"; return false;
    case LA_KV_DUPLICATE: *why = "result with a repeated key"; return false;
    case LA_KV_MALFORMED: break;
    }
    *why = "malformed result payload";
    return false;
}

/* The cause is only for the log; a missing one is fine, a repeated one is not. */
static bool la_result_cause(const uint8_t *payload, size_t len, char *cause, size_t cap,
                            const char **why)
{
    const uint8_t *v;
    size_t vlen;
    cause[0] = '\0';
    switch (la_kv_find(payload, len, "cause", &v, &vlen)) {
    case LA_KV_FOUND:
        if (vlen >= cap)
            vlen = cap - 1;
        memcpy(cause, v, vlen);
        cause[vlen] = '\0';
        return true;
    case LA_KV_ABSENT: return true;
    case LA_KV_DUPLICATE: *why = "result with a repeated key"; return false;
    case LA_KV_MALFORMED: break;
    }
    *why = "malformed result payload";
    return false;
}

/* The reason is only for the log line: a plain word or nothing. */
static bool la_result_reason(const uint8_t *payload, size_t len, char *reason, size_t cap,
                             const char **why)
{
    const uint8_t *v;
    size_t vlen;
    reason[0] = '\0';
    switch (la_kv_find(payload, len, "reason", &v, &vlen)) {
    case LA_KV_FOUND:
        if (vlen >= cap)
            return true;
        for (size_t i = 0; i < vlen; i++)
            if (!((v[i] >= 'a' && v[i] <= 'z') || v[i] == '-'))
                return true;
        memcpy(reason, v, vlen);
        reason[vlen] = '\0';
        return true;
    case LA_KV_ABSENT: return true;
    case LA_KV_DUPLICATE: *why = "result with a repeated key"; return false;
    case LA_KV_MALFORMED: break;
    }
    *why = "malformed result payload";
    return false;
}

bool la_result_parse(const uint8_t *payload, size_t len, struct la_result *out,
                     const char **why)
{
    return la_result_code(payload, len, &out->code, why)
        && la_result_reason(payload, len, out->reason, sizeof out->reason, why)
        && la_result_cause(payload, len, out->cause, sizeof out->cause, why);
}
