/* OpenSSL's libcrypto (Debian: libssl-dev): SHA-256, HMAC and random bytes. */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
