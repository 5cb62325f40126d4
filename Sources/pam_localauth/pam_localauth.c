/*
 * pam_localauth: the PAM entry points. Each one only decides which path to take; the
 * helper localauthd starts does the policy (Sources/localauth-helper), session.c asks it
 * through the service's socket, result_map.c turns its result into a PAM code. The module
 * never starts a process (docs/ARCHITECTURE.md, "The one door"); docs/PROTOCOL.md is the
 * contract.
 */
#include "args.h"
#include "frame.h"
#include "log.h"
#include "request.h"
#include "result_map.h"
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#define LA_EXPORT __attribute__((visibility("default")))

/* Set by the first line, read by the `authsucc` line of the same handle: clearing a
 * lockout is only allowed when this module's first line ran before the password module
 * and did not succeed itself (pam-auth-update's `success=end` jumps over the password
 * module to the Additional block, so authsucc can follow a fingerprint success too; that
 * must not count as a password). The data is the user name the first line saw. */
static const char la_marker[] = "pam_localauth_first_line";

/* Set when the first line ended without success in this handle. sudo re-runs the whole
 * stack with the same handle for each password retry: the finger is not asked for again. */
static const char la_tried[] = "pam_localauth_tried";

/* What failed on the reader's side in this handle's first line, for the lines after the
 * password: "absent" (no localauthd here), "helper" (the helper said nothing, died or
 * garbled its answer) or "reader" (fprintd unreachable, frozen, gone from the bus). Those
 * lines then do the password's bookkeeping without waiting for the same failure a second
 * time (la_clear_after_password). */
static const char la_reader_failed[] = "pam_localauth_reader_failed";
static const char la_failed_absent[] = "absent";
static const char la_failed_helper[] = "helper";
static const char la_failed_reader[] = "reader";

static void la_marker_cleanup(pam_handle_t *pamh, void *data, int status)
{
    (void)pamh;
    (void)status;
    free(data);
}

static void la_marker_set(pam_handle_t *pamh, const char *user)
{
    char *copy = strdup(user);
    if (copy == NULL || pam_set_data(pamh, la_marker, copy, la_marker_cleanup) != PAM_SUCCESS)
        free(copy);
}

/* Never pam_get_user: it would prompt for a name, and this module must not be the one
 * that asks "login:". No user set means nothing to do. */
static const char *la_user(pam_handle_t *pamh)
{
    const char *user = la_item_string(pamh, PAM_USER);
    return user[0] != '\0' ? user : NULL;
}

/* Asks the service in `mode`; a request that cannot be encoded is a failure, not a run. */
static void la_run_helper(pam_handle_t *pamh, int flags, const struct la_args *args,
                          const char *mode, const char *user, struct la_outcome *out)
{
    struct la_request req;
    char payload[LA_FRAME_MAX];
    size_t len;
    la_request_gather(pamh, flags, args, mode, user, &req);
    memset(out, 0, sizeof *out);
    /* A payload is at most LA_FRAME_MAX - 1 bytes: the length field also counts the type. */
    if (la_request_encode(&req, payload, sizeof payload - 1, &len, out->failure,
                          sizeof out->failure))
        la_session_run(pamh, args, payload, len, out);
}

/* The outcome's summary line. The result's name, or the module's own for a run without
 * one; a result code the table does not know is named in the cause. */
static void la_log_run(pam_handle_t *pamh, int priority, const char *user,
                       const struct la_outcome *out, int pam_code)
{
    char buf[384];
    const char *name = out->have_result ? la_result_name(out->result.code)
                                        : LA_RESULT_HELPER_FAILURE;
    const char *cause = out->have_result ? out->result.cause : out->failure;
    if (name == NULL) {
        snprintf(buf, sizeof buf, "unknown result code %ld from the helper; %s",
                 out->result.code, out->result.cause);
        name = "unknownCode";
        cause = buf;
    }
    la_log_outcome(pamh, priority, user, name, out->have_result ? out->result.reason : NULL,
                   pam_code, cause);
}

/* Records on the handle what failed on the reader's side (la_reader_failed). The static
 * strings need no cleanup. */
static void la_note_reader_failure(pam_handle_t *pamh, const struct la_outcome *out)
{
    const char *what = NULL;
    if (out->no_service)
        what = la_failed_absent;
    else if (!out->have_result)
        what = la_failed_helper;
    else if (strcmp(out->result.reason, "reader-unreachable") == 0)
        what = la_failed_reader;
    if (what != NULL)
        pam_set_data(pamh, la_reader_failed, (void *)what, NULL);
}

/* The service `localauthctl enable` and `disable` check the password with. It includes
 * the site's common-auth, so that directory users (SSSD, Kerberos, winbind) can pass it
 * too; localauthctl has just scanned the finger itself, so there this module steps aside
 * for the password modules (and sets no marker: nothing is cleared or recorded here,
 * localauthctl records the password itself). */
static const char la_ctl_service[] = "localauthctl";

/* The line before the password module: fingerprint first. */
static int la_authenticate(pam_handle_t *pamh, int flags, const struct la_args *args)
{
    const char *user = la_user(pamh);
    if (user == NULL) {
        la_log_outcome(pamh, LA_LOG_BY_CODE, "", LA_RESULT_NO_USER, NULL, PAM_AUTHINFO_UNAVAIL,
                       "no user name set (PAM_USER); the module never asks for one");
        return PAM_AUTHINFO_UNAVAIL;
    }
    if (strcmp(la_item_string(pamh, PAM_SERVICE), la_ctl_service) == 0) {
        la_log_outcome(pamh, LA_LOG_BY_CODE, user, "skipped", NULL, PAM_AUTHINFO_UNAVAIL,
                       "localauthctl checks the password only (it scanned the finger itself)");
        return PAM_AUTHINFO_UNAVAIL;
    }
    /* A remote PAM_RHOST is the helper's to refuse (Presence): it answers notInteractive
     * without a scan, and refuses to clear a lockout on such a handle afterwards. */
    la_marker_set(pamh, user);
    const void *tried = NULL;
    if (pam_get_data(pamh, la_tried, &tried) == PAM_SUCCESS && tried != NULL) {
        la_log_outcome(pamh, LA_LOG_BY_CODE, user, "skipped", NULL, PAM_AUTHINFO_UNAVAIL,
                       "the fingerprint was already tried in this transaction");
        return PAM_AUTHINFO_UNAVAIL;
    }
    struct la_outcome out;
    la_run_helper(pamh, flags, args, "authenticate", user, &out);
    int pam_code = la_outcome_pam(&out);
    la_log_run(pamh, LA_LOG_BY_CODE, user, &out, pam_code);
    if (pam_code == PAM_SUCCESS)
        pam_set_data(pamh, la_marker, NULL, NULL);  /* a fingerprint is not a password */
    else
        pam_set_data(pamh, la_tried, (void *)la_tried, NULL);
    la_note_reader_failure(pamh, &out);
    return pam_code;
}

/* Whether this handle's first line ran for `user` without a fingerprint success; logs
 * why not. `line` names the caller for the log ("authsucc", "account"). The account line
 * says nothing when the first line did not run: that is every SSH login by key and every
 * service whose auth stack does not use the module, one line of noise each. */
static bool la_first_line_ran(pam_handle_t *pamh, const char *user, const char *line)
{
    const void *first_user = NULL; /* the first line's user, when it ran in this handle */
    if (pam_get_data(pamh, la_marker, &first_user) != PAM_SUCCESS || first_user == NULL) {
        if (strcmp(line, "account") != 0)
            pam_syslog(pamh, LOG_INFO, "%s: the first line did not run in this handle, or a "
                       "finger matched there: nothing changed", line);
        return false;
    }
    if (user == NULL || strcmp(user, first_user) != 0) {
        pam_syslog(pamh, LOG_NOTICE, "%s: another user than the first line's: nothing changed",
                   line);
        return false;
    }
    return true;
}

/*
 * Asks the helper to clear the lockout and record the password, with the proof this line
 * has: `authtok` (the auth line after the password module: PAM_AUTHTOK goes along and the
 * helper checks it against the account, since `required` does not stop a stack and the
 * line also runs after a wrong password) or `account` (the account phase, which sudo, su,
 * login and polkit reach only after the whole auth stack succeeded; root's path only).
 * `first_line`: this handle's first line ran for the user without a match. What that
 * proves, and what a networked handle proves, is the helper's to judge (AuthSucc.swift).
 * True when the helper changed something (it answers success).
 */
static bool la_clear_after_password(pam_handle_t *pamh, int flags, const struct la_args *args,
                                    const char *user, const char *proof, bool first_line,
                                    int pam_code)
{
    struct la_args a = *args;
    const void *tok = NULL;
    const void *failed = NULL;
    if (pam_get_data(pamh, la_reader_failed, &failed) != PAM_SUCCESS)
        failed = NULL;
    /* The first line's one line said that no localauthd runs here: nothing to say again. */
    if (failed == la_failed_absent)
        return false;
    if (failed == la_failed_helper) {
        /* A second helper would most likely be as silent, and the person who just typed the
         * password would wait for it again: the lockout stays until a helper answers. */
        pam_syslog(pamh, LOG_NOTICE, "%s: the helper did not answer earlier in this transaction: "
                   "the password is not recorded and no lockout is cleared", proof);
        return false;
    }
    a.reader_unreachable = failed == la_failed_reader;
    a.proof = proof;
    a.first_line = first_line;
    a.authtok = pam_get_item(pamh, PAM_AUTHTOK, &tok) == PAM_SUCCESS ? tok : NULL;
    struct la_outcome out;
    la_run_helper(pamh, flags, &a, "authsucc", user, &out);
    bool changed = out.have_result && out.result.code == LA_CODE_SUCCESS;
    /* Without a first line nothing was to be cleared: no notice that nothing was. */
    la_log_run(pamh, changed || !first_line ? LOG_INFO : LOG_NOTICE, user, &out, pam_code);
    if (changed)
        pam_set_data(pamh, la_marker, NULL, NULL); /* used up: a new first line is needed */
    return changed;
}

/* The auth line after the password module. It authenticates nobody: whatever happened it
 * answers PAM_AUTHINFO_UNAVAIL, which an `optional` line ignores (never PAM_SUCCESS, which
 * a misplaced `sufficient` line would turn into a way in, and never PAM_IGNORE). */
static int la_authsucc(pam_handle_t *pamh, int flags, const struct la_args *args)
{
    const char *user = la_user(pamh);
    if (strcmp(la_item_string(pamh, PAM_SERVICE), la_ctl_service) == 0)
        return PAM_AUTHINFO_UNAVAIL;  /* localauthctl records the password itself */
    if (la_first_line_ran(pamh, user, "authsucc"))
        la_clear_after_password(pamh, flags, args, user, "authtok", true, PAM_AUTHINFO_UNAVAIL);
    return PAM_AUTHINFO_UNAVAIL;
}

LA_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    struct la_args args;
    la_args_parse(pamh, argc, argv, &args);
    return args.authsucc ? la_authsucc(pamh, flags, &args) : la_authenticate(pamh, flags, &args);
}

/* Whether the handle says where the login comes from: a PAM_RHOST, or sshd's PAM_TTY
 * `ssh`. Only whether there is anything to tell the helper when the first line did not run
 * (every local sudo after a finger would otherwise ask the service); what such a handle
 * means (a login from elsewhere to record, no password proven) is the helper's to judge. */
static bool la_handle_names_an_origin(pam_handle_t *pamh)
{
    return la_item_string(pamh, PAM_RHOST)[0] != '\0'
        || strcmp(la_item_string(pamh, PAM_TTY), "ssh") == 0;
}

/*
 * `account optional pam_localauth.so`: where a lockout is cleared after the password in
 * any stack, and where sshd's logins (by key as by password) are told to the helper, which
 * records a login from elsewhere in root's state (PresenceRule, rule 5). sudo, su, login and
 * polkit call the account phase only after pam_authenticate succeeded, so a first line that
 * ran here without a match means another module (the password) let the user in; sshd does
 * not, and the helper refuses to clear on its handles. It judges no account: PAM_IGNORE,
 * whatever happened, so the stack's verdict is the account modules' (pam_unix: expired,
 * locked, password change due). PAM_SUCCESS would let a misplaced `account sufficient
 * pam_localauth.so` skip them all; and a stack where nothing else answers fails, as libpam
 * fails a stack of ignores. (PAM_IGNORE is wrong in the auth phase, result_map.c; here it
 * is the one honest answer.) Written `optional`, so that a stack without the module (the
 * package removed) skips the line instead of failing with PAM_MODULE_UNKNOWN.
 */
static const int la_account_answer = PAM_IGNORE;

LA_EXPORT int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    struct la_args args;
    la_args_parse(pamh, argc, argv, &args);
    /* A caller that is not root could call this phase after any outcome (the helper
     * refuses `account` from a peer that is not root): nothing to ask there. */
    if (args.unprivileged)
        return la_account_answer;
    const char *user = la_user(pamh);
    if (user == NULL)
        return la_account_answer;
    bool first_line = la_first_line_ran(pamh, user, "account");
    if (first_line || la_handle_names_an_origin(pamh))
        la_clear_after_password(pamh, flags, &args, user, "account", first_line, la_account_answer);
    return la_account_answer;
}

/* Nothing to set: the module holds no credentials. */
LA_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}
