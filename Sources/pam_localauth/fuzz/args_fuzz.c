/*
 * libFuzzer harness for what the module takes from outside before it asks the service:
 * the module arguments (la_args_parse) and the request built from PAM items anyone can set,
 * PAM_USER first (la_request_encode). scripts/fuzz builds and runs it:
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -fsanitize=fuzzer,address,undefined \
 *       -I Sources/pam_localauth \
 *       Sources/pam_localauth/fuzz/args_fuzz.c Sources/pam_localauth/[a-z]*.c \
 *       -lpam -o build/fuzz/args_fuzz
 *
 * Input: one byte picks the caller's effective uid (root or not, bit 0) and the line
 * (bits 1-2: the first line, the authsucc line with proof=authtok, the account phase with
 * proof=account), then NUL-separated fields: user, service, tty, rhost, ruser, then one
 * module argument per field.
 *
 * Checked: the parsed timeout is within its bounds; a service path taken from an argument
 * is one of the arguments, absolute, and only for root (any other caller has the compiled-in
 * one); an encoded request has exactly one line per key, each value the field as given
 * (no field can add a line, such as `mode=authsucc`, `first_line=1` or `proof=account`:
 * those appear once, and only in the requests of the lines after the password); a request
 * is refused only when a field is not one line of UTF-8 or it does not fit in a frame.
 */
#include "args.h"
#include "frame.h"
#include "request.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <security/pam_ext.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_FIELDS = 64, FIXED_FIELDS = 5 };

/* The module's logging and the caller's uid, replaced for the fuzzer: the format and its
 * arguments are still evaluated, nothing is sent anywhere. */
static uid_t fuzz_euid;

uid_t geteuid(void)
{
    return fuzz_euid;
}

void pam_syslog(const pam_handle_t *pamh, int priority, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    (void)pamh;
    (void)priority;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
}

static void check(int ok)
{
    if (!ok)
        __builtin_trap();
}

static int one_line_utf8(const char *s)
{
    return strchr(s, '\n') == NULL && la_utf8_valid((const uint8_t *)s, strlen(s));
}

/* The encoded payload, line by line: each fixed key once with its field, args in order. */
static void check_request(const char *buf, size_t len, const struct la_request *req,
                          int argc, const char **argv)
{
    static const char *const keys[] = { "user", "service", "tty", "rhost", "ruser" };
    const char *values[] = { req->user, req->service, req->tty, req->rhost, req->ruser };
    int seen[5] = { 0 }, modes = 0, args_seen = 0, first_lines = 0, proofs = 0;
    const char *line = buf, *end = buf + len;
    check(memchr(buf, '\0', len) == NULL);
    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *stop = nl ? nl : end;
        const char *eq = memchr(line, '=', (size_t)(stop - line));
        check(eq != NULL && eq > line);
        size_t klen = (size_t)(eq - line), vlen = (size_t)(stop - eq - 1);
        const char *value = eq + 1;
        for (int k = 0; k < 5; k++) {
            if (strlen(keys[k]) == klen && memcmp(line, keys[k], klen) == 0) {
                check(strlen(values[k]) == vlen && memcmp(value, values[k], vlen) == 0);
                seen[k]++;
            }
        }
        if (klen == 4 && memcmp(line, "mode", 4) == 0) {
            check(vlen == strlen(req->mode) && memcmp(value, req->mode, vlen) == 0);
            modes++;
        }
        if (klen == 10 && memcmp(line, "first_line", 10) == 0) {
            check(vlen == 1 && value[0] == '1');
            first_lines++;
        }
        if (klen == 5 && memcmp(line, "proof", 5) == 0) {
            check(req->proof != NULL && vlen == strlen(req->proof)
                  && memcmp(value, req->proof, vlen) == 0);
            proofs++;
        }
        if (klen == 3 && memcmp(line, "arg", 3) == 0) {
            check(args_seen < argc);
            check(strlen(argv[args_seen]) == vlen && memcmp(value, argv[args_seen], vlen) == 0);
            args_seen++;
        }
        line = nl ? nl + 1 : end;
        check(!(nl && line == end)); /* no newline after the last line */
    }
    for (int k = 0; k < 5; k++)
        check(seen[k] == 1);
    check(modes == 1 && args_seen == argc);
    /* Only the lines after the password say the first line ran, and name their proof. */
    check(first_lines == (req->first_line ? 1 : 0));
    check(proofs == (req->proof != NULL ? 1 : 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 16384)
        return 0;
    fuzz_euid = (data[0] & 1) ? 1000 : 0;
    /* Bits 1-2: the first line, or the authsucc line's or the account phase's request. */
    static const char *const proofs[] = { NULL, "authtok", "account", NULL };
    const char *proof = proofs[(data[0] >> 1) & 3];
    char *copy = malloc(size); /* data[1..] plus a terminating NUL */
    if (copy == NULL)
        return 0;
    memcpy(copy, data + 1, size - 1);
    copy[size - 1] = '\0';
    const char *fields[MAX_FIELDS];
    int n = 0;
    for (char *p = copy; n < MAX_FIELDS && p < copy + size; p += strlen(p) + 1)
        fields[n++] = p;
    while (n < FIXED_FIELDS)
        fields[n++] = "";
    int argc = n - FIXED_FIELDS;
    const char **argv = fields + FIXED_FIELDS;

    struct la_args args;
    la_args_parse(NULL, argc, argv, &args);
    check(args.argc == argc && args.argv == argv);
    check(args.helper_timeout_ms >= LA_HELPER_TIMEOUT_MIN_MS
          && args.helper_timeout_ms <= LA_HELPER_TIMEOUT_MAX_MS);
    /* A caller that is not root cannot move the service; root's is an absolute path. */
    check(args.unprivileged == (fuzz_euid != 0));
    check(args.service_path != NULL && args.service_path[0] == '/');
    if (args.unprivileged)
        check(strcmp(args.service_path, LA_SERVICE_PATH) == 0);
    bool from_arg = strcmp(args.service_path, LA_SERVICE_PATH) != 0;
    uintptr_t at = (uintptr_t)args.service_path;
    for (int i = 0; i < argc; i++) {
        uintptr_t from = (uintptr_t)argv[i], to = from + strlen(argv[i]);
        if (at >= from && at <= to) {
            check(fuzz_euid == 0);
            check(strncmp(argv[i], "service=", 8) == 0 && args.service_path == argv[i] + 8);
            from_arg = false;
        }
    }
    check(!from_arg); /* the compiled-in path, or one of root's arguments */

    struct la_request req = {
        .mode = proof ? "authsucc" : "authenticate",
        .first_line = proof != NULL,
        .proof = proof,
        .user = fields[0],
        .service = fields[1],
        .tty = fields[2],
        .rhost = fields[3],
        .ruser = fields[4],
        .args = &args,
    };
    char buf[LA_FRAME_MAX - 1];
    char why[256];
    size_t len = 0;
    if (la_request_encode(&req, buf, sizeof buf, &len, why, sizeof why)) {
        check(len <= sizeof buf);
        check_request(buf, len, &req, argc, argv);
    } else {
        /* Refused: some field is not one line of UTF-8, or it all does not fit. */
        size_t total = 0;
        int all_plain = 1;
        for (int i = 0; i < n; i++) {
            all_plain &= one_line_utf8(fields[i]);
            total += strlen(fields[i]) + 16;
        }
        check(!all_plain || total + 256 > sizeof buf);
    }
    free(copy);
    return 0;
}
