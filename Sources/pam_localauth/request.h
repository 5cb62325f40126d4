/*
 * The `Q` request (docs/PROTOCOL.md): what the helper needs to know about this PAM call,
 * gathered from the handle, then encoded as key/value lines.
 */
#ifndef LA_REQUEST_H
#define LA_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include <security/pam_modules.h>

#include "args.h"

struct la_request {
    const char *mode;    /* "authenticate" or "authsucc" */
    const char *user;    /* PAM_USER, never prompted for */
    const char *service; /* the rest may be empty, never NULL */
    const char *tty;
    const char *rhost;
    const char *ruser;
    char locale[64];     /* empty when unset or not a plain locale name */
    char language[128];  /* LANGUAGE: empty when unset or not plain */
    bool silent;
    bool first_line;
    const char *proof;   /* authsucc mode: "authtok" or "account"; NULL otherwise */
    bool stdin_tty;      /* the application's stdin is a terminal (a person can type there) */
    bool display;        /* a graphical session is named (PAM_XDISPLAY, DISPLAY, WAYLAND_DISPLAY) */
    unsigned long caller_uid;
    long caller_pid;     /* the helper asks logind whether this process's session is remote */
    const struct la_args *args;
};

/* Fills *req from the handle; user is the caller's PAM_USER. */
void la_request_gather(pam_handle_t *pamh, int flags, const struct la_args *args,
                       const char *mode, const char *user, struct la_request *req);

/* Encodes the payload into buf; false with a reason when a value cannot be sent as is. */
bool la_request_encode(const struct la_request *req, char *buf, size_t cap, size_t *len,
                       char *why, size_t why_cap);

/* A PAM item as a string; "" when unset. */
const char *la_item_string(pam_handle_t *pamh, int item);

#endif
