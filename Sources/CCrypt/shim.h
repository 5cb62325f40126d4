/* libcrypt (Debian: libcrypt-dev, libxcrypt): crypt_r(3), for the helper's password check on
 * the unprivileged path. */
#include <crypt.h>
