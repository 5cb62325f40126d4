/*
 * localauth-launcher: the setuid-root step between pam_localauth.so in a program that does
 * not run as root (a screen locker such as swaylock or i3lock) and localauth-helper, which
 * needs root to keep the lockout state. It plays the part unix_chkpwd plays for pam_unix:
 * whatever the caller asks, it can only ever start the helper for the user who called it.
 *
 * The pure parts are here, apart from main.c, so that the fuzz harness can drive them.
 */
#ifndef LA_LAUNCH_H
#define LA_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>

/* The largest `cause` a refusal carries; the module logs at most 255 bytes of it. */
enum { LA_LAUNCH_CAUSE_MAX = 200 };

/* The caller may pass nothing: argv[0] and nothing else. A missing argv[0] (argc 0) is
 * refused too, as a program that counts on it could be tricked. */
bool la_launch_args_ok(int argc, char *const argv[]);

/*
 * Encodes a result frame (docs/PROTOCOL.md) that answers for the helper when the launcher
 * refuses to start it: code -6 (biometryNotAvailable), so the module goes on to the
 * password and logs `cause`. The cause is cut to LA_LAUNCH_CAUSE_MAX bytes and every byte
 * that is not printable ASCII becomes `?`, so the frame is always valid. Returns the frame's
 * size, or 0 when cap is too small.
 */
size_t la_launch_refusal(const char *cause, unsigned char *out, size_t cap);

#endif
