/* Hashes from libgcrypt (Debian: libgcrypt20-dev), the crypto library libsystemd already
 * loads into the helper, and random bytes from the kernel (getrandom). */
#include <gcrypt.h>
#include <string.h>
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

/* ECDSA over NIST P-256 (the rights store's keys, docs/API.md "Rights"). gcry_sexp_build
 * is variadic (Swift cannot call it), so the key and signature handling is here, in three
 * calls. A private key is its scalar d (32 bytes, big-endian), a public key its point q in
 * the X9.63 uncompressed form (0x04 || x || y, 65 bytes), a signature its (r, s) pair
 * (32 bytes each). Every function returns 0 on success. */

/* The unsigned big-endian value of `name` in `sexp`, right-aligned in `out` (len bytes). */
static inline int la_p256_take(gcry_sexp_t sexp, const char *name, unsigned char *out, size_t len)
{
    gcry_sexp_t token = gcry_sexp_find_token(sexp, name, 0);
    if (token == NULL)
        return -1;
    gcry_mpi_t mpi = gcry_sexp_nth_mpi(token, 1, GCRYMPI_FMT_USG);
    gcry_sexp_release(token);
    if (mpi == NULL)
        return -1;
    unsigned char buffer[80];
    size_t written = 0;
    int rc = gcry_mpi_print(GCRYMPI_FMT_USG, buffer, sizeof buffer, &written, mpi) == 0 && written <= len ? 0 : -1;
    gcry_mpi_release(mpi);
    if (rc == 0) {
        memset(out, 0, len - written);
        memcpy(out + (len - written), buffer, written);
    }
    memset(buffer, 0, sizeof buffer);
    return rc;
}

/* An unsigned big-endian integer as an MPI (%b would be read as a signed one). */
static inline gcry_mpi_t la_p256_mpi(const unsigned char *bytes, size_t len)
{
    gcry_mpi_t mpi = NULL;
    return gcry_mpi_scan(&mpi, GCRYMPI_FMT_USG, bytes, len, NULL) == 0 ? mpi : NULL;
}

static inline int la_p256_generate(unsigned char d[32], unsigned char q[65])
{
    gcry_sexp_t params = NULL, key = NULL;
    int rc = -1;
    if (gcry_sexp_new(&params, "(genkey (ecc (curve \"NIST P-256\")))", 0, 1) == 0 &&
        gcry_pk_genkey(&key, params) == 0 &&
        la_p256_take(key, "q", q, 65) == 0 && q[0] == 0x04 &&
        la_p256_take(key, "d", d, 32) == 0)
        rc = 0;
    gcry_sexp_release(params);
    gcry_sexp_release(key);
    return rc;
}

/* Signs a SHA-256 digest; k is derived from the key and the digest (RFC 6979). */
static inline int la_p256_sign(const unsigned char d[32], const unsigned char q[65],
                               const unsigned char digest[32], unsigned char r[32], unsigned char s[32])
{
    gcry_sexp_t key = NULL, data = NULL, sig = NULL;
    gcry_mpi_t scalar = la_p256_mpi(d, 32);
    int rc = -1;
    if (scalar != NULL &&
        gcry_sexp_build(&key, NULL, "(private-key (ecc (curve \"NIST P-256\") (q %b) (d %m)))",
                        65, q, scalar) == 0 &&
        gcry_sexp_build(&data, NULL, "(data (flags rfc6979) (hash sha256 %b))", 32, digest) == 0 &&
        gcry_pk_sign(&sig, data, key) == 0 &&
        la_p256_take(sig, "r", r, 32) == 0 && la_p256_take(sig, "s", s, 32) == 0)
        rc = 0;
    gcry_mpi_release(scalar);
    gcry_sexp_release(key);
    gcry_sexp_release(data);
    gcry_sexp_release(sig);
    return rc;
}

static inline int la_p256_verify(const unsigned char q[65], const unsigned char digest[32],
                                 const unsigned char r[32], const unsigned char s[32])
{
    gcry_sexp_t key = NULL, data = NULL, sig = NULL;
    gcry_mpi_t mr = la_p256_mpi(r, 32), ms = la_p256_mpi(s, 32);
    int rc = -1;
    if (mr != NULL && ms != NULL &&
        gcry_sexp_build(&key, NULL, "(public-key (ecc (curve \"NIST P-256\") (q %b)))", 65, q) == 0 &&
        gcry_sexp_build(&data, NULL, "(data (flags rfc6979) (hash sha256 %b))", 32, digest) == 0 &&
        gcry_sexp_build(&sig, NULL, "(sig-val (ecdsa (r %m) (s %m)))", mr, ms) == 0 &&
        gcry_pk_verify(sig, data, key) == 0)
        rc = 0;
    gcry_mpi_release(mr);
    gcry_mpi_release(ms);
    gcry_sexp_release(key);
    gcry_sexp_release(data);
    gcry_sexp_release(sig);
    return rc;
}

/* Verifying an SSH server's host key signature (the session-bind of the ssh-agent
 * protocol): Ed25519, ECDSA over NIST P-256/384/521, RSA PKCS#1 v1.5. Only public keys and
 * public data; every length comes from the caller, who has bounded it. Each returns 0 when
 * the signature is good, anything else when it is not or cannot be checked. */

/* Ed25519 (RFC 8032, pure: the data itself is signed): a 32-byte key, a 64-byte R || S. */
static inline int la_ed25519_verify(const unsigned char q[32], const unsigned char sig[64],
                                    const unsigned char *data, size_t len)
{
    gcry_sexp_t key = NULL, msg = NULL, sv = NULL;
    int rc = -1;
    if (gcry_sexp_build(&key, NULL, "(public-key (ecc (curve Ed25519) (flags eddsa) (q %b)))", 32, q) == 0 &&
        gcry_sexp_build(&msg, NULL, "(data (flags eddsa) (hash-algo sha512) (value %b))", (int)len, data) == 0 &&
        gcry_sexp_build(&sv, NULL, "(sig-val (eddsa (r %b) (s %b)))", 32, sig, 32, sig + 32) == 0 &&
        gcry_pk_verify(sv, msg, key) == 0)
        rc = 0;
    gcry_sexp_release(key);
    gcry_sexp_release(msg);
    gcry_sexp_release(sv);
    return rc;
}

/* ECDSA: `curve` is libgcrypt's name ("NIST P-256", "NIST P-384", "NIST P-521"), q the
 * uncompressed point, `digest` the hash of the data the curve's SSH algorithm names
 * (`hash` "sha256", "sha384", "sha512"), r and s unsigned big-endian. */
static inline int la_ecdsa_verify(const char *curve, const unsigned char *q, size_t qlen,
                                  const char *hash, const unsigned char *digest, size_t dlen,
                                  const unsigned char *r, size_t rlen, const unsigned char *s, size_t slen)
{
    gcry_sexp_t key = NULL, msg = NULL, sv = NULL;
    gcry_mpi_t mr = la_p256_mpi(r, rlen), ms = la_p256_mpi(s, slen);
    int rc = -1;
    if (mr != NULL && ms != NULL &&
        gcry_sexp_build(&key, NULL, "(public-key (ecc (curve %s) (q %b)))", curve, (int)qlen, q) == 0 &&
        gcry_sexp_build(&msg, NULL, "(data (flags raw) (hash %s %b))", hash, (int)dlen, digest) == 0 &&
        gcry_sexp_build(&sv, NULL, "(sig-val (ecdsa (r %m) (s %m)))", mr, ms) == 0 &&
        gcry_pk_verify(sv, msg, key) == 0)
        rc = 0;
    gcry_mpi_release(mr);
    gcry_mpi_release(ms);
    gcry_sexp_release(key);
    gcry_sexp_release(msg);
    gcry_sexp_release(sv);
    return rc;
}

/* RSA PKCS#1 v1.5 (RFC 8332): n and e unsigned big-endian, `digest` the data's hash with
 * `hash` ("sha256", "sha512"), sig the signature as an unsigned big-endian integer. */
static inline int la_rsa_verify(const unsigned char *n, size_t nlen, const unsigned char *e, size_t elen,
                                const char *hash, const unsigned char *digest, size_t dlen,
                                const unsigned char *sig, size_t siglen)
{
    gcry_sexp_t key = NULL, msg = NULL, sv = NULL;
    gcry_mpi_t mn = la_p256_mpi(n, nlen), me = la_p256_mpi(e, elen), ms = la_p256_mpi(sig, siglen);
    int rc = -1;
    if (mn != NULL && me != NULL && ms != NULL &&
        gcry_sexp_build(&key, NULL, "(public-key (rsa (n %m) (e %m)))", mn, me) == 0 &&
        gcry_sexp_build(&msg, NULL, "(data (flags pkcs1) (hash %s %b))", hash, (int)dlen, digest) == 0 &&
        gcry_sexp_build(&sv, NULL, "(sig-val (rsa (s %m)))", ms) == 0 &&
        gcry_pk_verify(sv, msg, key) == 0)
        rc = 0;
    gcry_mpi_release(mn);
    gcry_mpi_release(me);
    gcry_mpi_release(ms);
    gcry_sexp_release(key);
    gcry_sexp_release(msg);
    gcry_sexp_release(sv);
    return rc;
}

/* A hash (algo: GCRY_MD_SHA1, _SHA256, _SHA384, _SHA512), or with `key` an HMAC of it (the
 * HMAC-SHA1 of hashed known_hosts names). `out` holds gcry_md_get_algo_dlen(algo) bytes. */
static inline int la_md(int algo, const unsigned char *key, size_t klen,
                        const unsigned char *data, size_t len, unsigned char *out)
{
    gcry_buffer_t iov[2];
    memset(iov, 0, sizeof iov);
    int n = 0;
    if (key != NULL) {
        iov[n].size = iov[n].len = klen;
        iov[n].data = (void *)key;
        n++;
    }
    iov[n].size = iov[n].len = len;
    iov[n].data = (void *)data;
    n++;
    return gcry_md_hash_buffers(algo, key != NULL ? GCRY_MD_FLAG_HMAC : 0, out, iov, n) == 0 ? 0 : -1;
}
