/* Hashes from libgcrypt (Debian: libgcrypt20-dev), the crypto library libsystemd already
 * loads into the helper, and random bytes from the kernel (getrandom). */
#include <gcrypt.h>
#include <sys/random.h>

/* libgcrypt wants its version checked and its set-up finished before first use, and
 * gcry_control is variadic (Swift cannot call it): the whole set-up as one call. Secure
 * memory stays off: nothing here asks for it, and locking pages needs privileges the
 * unprivileged callers of the library do not have. Returns 0 when libgcrypt is older than
 * the headers or will not start. */
static inline int la_gcrypt_setup(void)
{
    if (gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P))
        return 1;
    if (gcry_check_version(GCRYPT_VERSION) == NULL)
        return 0;
    gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
    gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
    return 1;
}
