/*
 * localauthd's socket instead of a helper of the module's own (DESIGN.md §1): the same
 * frames over one connection. The service learns who asks from the kernel (the peer's
 * credentials and pidfd), so nothing about the caller is sent that it does not check.
 */
#ifndef LA_SERVICE_H
#define LA_SERVICE_H

#include <stddef.h>
#include <stdint.h>

#include "helper_spawn.h"

/* Where localauthd listens; scripts/build --service-path moves it for a test installation. */
#ifndef LA_SERVICE_PATH
#define LA_SERVICE_PATH "/run/localauth/socket"
#endif

enum la_connect {
    LA_CONNECT_OK,      /* connected to root's service: h holds the connection */
    LA_CONNECT_ABSENT,  /* no service is installed or started here: root starts the helper;
                        * a caller that is not root has no other way to root's side */
    LA_CONNECT_FAILED,  /* a service is there but could not be used: the password */
};

/*
 * Connects to the socket at path within budget_ms. A path that does not exist is
 * LA_CONNECT_ABSENT; one that is not a socket of root's, a refused or timed-out
 * connection, or a peer that is not root is LA_CONNECT_FAILED with a reason.
 */
enum la_connect la_service_connect(struct la_helper *h, const char *path, int64_t budget_ms,
                                   char *why, size_t cap);

#endif
