/*
 * The module arguments the module itself acts on. The helper owns the full option table
 * (Sources/LocalAuth/Config): every argument, these included, is forwarded to it verbatim.
 * Built per call on the stack, never kept in globals, so nothing leaks between handles.
 */
#ifndef LA_ARGS_H
#define LA_ARGS_H

#include <stdbool.h>

#include <security/pam_modules.h>

/* Where localauthd listens; scripts/build --service-path moves it for a test installation. */
#ifndef LA_SERVICE_PATH
#define LA_SERVICE_PATH "/run/localauth/socket"
#endif

enum {
    LA_HELPER_TIMEOUT_DEFAULT_MS = 120 * 1000,
    LA_HELPER_TIMEOUT_MIN_MS = 1 * 1000,
    LA_HELPER_TIMEOUT_MAX_MS = 3600 * 1000,
};

struct la_args {
    bool authsucc;           /* the line after the password module (docs/ARCHITECTURE.md) */
    bool debug;              /* more log lines */
    bool unprivileged;       /* the caller is not root (a screen locker): localauthd serves
                              * the peer's own uid only (docs/PROTOCOL.md) */
    const char *service_path; /* localauthd's socket (`service=`, root only) */
    const char *authtok;     /* PAM_AUTHTOK for the lines after the password, sent as an
                              * `A` (`N`: none) right after their request; a secret */
    const char *proof;       /* authsucc mode: "authtok" (auth line) or "account" (account
                              * phase); NULL in authenticate mode */
    bool reader_unreachable; /* authsucc mode: fprintd failed earlier in this handle, so the
                              * helper does not ask it again (`reader=unreachable`) */
    bool first_line;         /* authsucc mode: this handle's first line ran for the user
                              * without a match (`first_line=1`) */
    long helper_timeout_ms;  /* `helper_timeout=SECONDS`: time waiting on the helper, in all */
    int argc;                /* every argument, for `arg=` request lines */
    const char **argv;
};

/* Fills *out from the arguments. Bad values are logged and the default is kept. */
void la_args_parse(pam_handle_t *pamh, int argc, const char **argv, struct la_args *out);

#endif
