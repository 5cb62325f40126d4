/* Conversation relay; see conv.h. */
#include "conv.h"

#include <stdlib.h>
#include <string.h>

#include <syslog.h>

#include <security/pam_ext.h>

/* Frame payloads carry no NUL (the decoder checks), so a copy with one added is the text. */
static void la_conv_text(const struct la_frame *f, char out[LA_FRAME_MAX])
{
    memcpy(out, f->payload, f->payload_len);
    out[f->payload_len] = '\0';
}

/* PAM_SILENT is the helper's to honour (the request says `silent=1`): it knows which lines
 * are chatter and which tell the user what to do with the reader. sudo passes PAM_SILENT
 * by default, so dropping everything here would leave a sudo user with a silent reader. */
void la_conv_show(struct la_relay *r, const struct la_frame *f)
{
    char text[LA_FRAME_MAX];
    la_conv_text(f, text);
    int style = f->type == 'E' ? PAM_ERROR_MSG : PAM_TEXT_INFO;
    pam_prompt(r->pamh, style, NULL, "%s", text);
}

/* Asks the application; NULL when its conversation failed or gave no answer. */
static char *la_conv_ask(struct la_relay *r, const struct la_frame *f)
{
    char text[LA_FRAME_MAX];
    char *answer = NULL;
    la_conv_text(f, text);
    /* Both prompts shown while the reader waits are echo-off: a sudo user's habit is to
     * type the password at whatever prompt comes, and it must not show on the screen. */
    int style = f->type == 'p' ? PAM_PROMPT_ECHO_ON : PAM_PROMPT_ECHO_OFF;
    if (pam_prompt(r->pamh, style, &answer, "%s", text) != PAM_SUCCESS || answer == NULL) {
        free(answer);
        return NULL;
    }
    return answer;
}

static void la_conv_forget(char *answer)
{
    if (answer == NULL)
        return;
    explicit_bzero(answer, strlen(answer));
    free(answer);
}

bool la_conv_prompt(struct la_relay *r, const struct la_frame *f, char *why, size_t cap)
{
    char *answer = la_conv_ask(r, f);
    /* An answer that cannot travel as one frame (too long, not UTF-8) counts as no answer:
     * the helper must not get a cut or altered secret. */
    size_t len = answer ? strlen(answer) : 0;
    if (answer != NULL && (len > LA_FRAME_MAX - 1
                           || !la_utf8_valid((const uint8_t *)answer, len))) {
        la_conv_forget(answer);
        answer = NULL;
    }
    if (answer == NULL)
        r->conv_failed = true;
    bool sent = answer
        ? la_helper_send(r->helper, 'A', answer, len, r->budget_ms, why, cap)
        : la_helper_send(r->helper, 'N', NULL, 0, r->budget_ms, why, cap);
    la_conv_forget(answer);
    return sent;
}

bool la_conv_scan_prompt(struct la_relay *r, const struct la_frame *f, char *why, size_t cap)
{
    char *answer = la_conv_ask(r, f);
    bool sent;
    if (answer == NULL) {
        r->conv_failed = true;
        sent = la_helper_send(r->helper, 'N', NULL, 0, r->budget_ms, why, cap);
    } else if (answer[0] != '\0') {
        /* Typed at either scan prompt, it is the password: the password module after this
         * one takes it (try_first_pass/use_first_pass), so it is typed once. */
        if (pam_set_item(r->pamh, PAM_AUTHTOK, answer) != PAM_SUCCESS)
            pam_syslog(r->pamh, LOG_WARNING, "could not hand the typed password on");
        sent = la_helper_send(r->helper, 'T', NULL, 0, r->budget_ms, why, cap);
    } else {
        sent = la_helper_send(r->helper, 'A', NULL, 0, r->budget_ms, why, cap);
    }
    la_conv_forget(answer);
    return sent;
}
