/*
 * Relays the helper's messages and prompts through the application's PAM conversation,
 * and the user's answer back to the helper.
 */
#ifndef LA_CONV_H
#define LA_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <security/pam_modules.h>

#include "frame.h"
#include "helper_spawn.h"

/* What a relay needs; one per helper run. */
struct la_relay {
    pam_handle_t *pamh;
    struct la_helper *helper;
    int64_t *budget_ms;   /* charged only for time spent waiting on the helper */
    bool silent;          /* PAM_SILENT (the helper filters what it sends) */
    bool conv_failed;     /* set when the application's conversation failed at a prompt */
};

/* `I` → PAM_TEXT_INFO, `E` → PAM_ERROR_MSG. Under PAM_SILENT the helper sends only what
 * the user needs to act. A failing display is not a reason to stop: no reply is needed. */
void la_conv_show(struct la_relay *r, const struct la_frame *f);

/*
 * `P`/`p` → PAM_PROMPT_ECHO_OFF/ON; replies `A` with the answer or `N` when the
 * conversation failed. The answer is zeroed and freed once sent. False (with a reason)
 * only when the reply could not be sent to the helper.
 */
bool la_conv_prompt(struct la_relay *r, const struct la_frame *f, char *why, size_t cap);

/*
 * The prompts shown while the reader waits: `W` asks for the password or a finger, `K` for
 * Enter to skip to the password. Both are echo-off, and whatever is typed at either is the
 * password: it becomes PAM_AUTHTOK for the password module after this one and the helper
 * gets only `T` (the password never crosses the pipe, and is typed once). An empty line is
 * `A` with nothing. When the finger matches, the helper ends the prompt by putting a
 * newline into the terminal's input. A failed conversation is `N`.
 */
bool la_conv_scan_prompt(struct la_relay *r, const struct la_frame *f, char *why, size_t cap);

#endif
