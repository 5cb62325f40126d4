/*
 * Key/value payloads (docs/PROTOCOL.md): lines `key=value` separated by `\n`.
 * The writer builds the request; the reader looks keys up in the helper's result.
 * Pure functions on caller-owned buffers, like frame.c.
 */
#ifndef LA_KV_H
#define LA_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct la_kv_writer {
    char *buf;
    size_t cap;
    size_t len;
    const char *failed_key; /* first key whose line was refused; NULL while all is well */
    bool too_long;          /* the refusal was for size, not for the value's text */
};

void la_kv_init(struct la_kv_writer *w, char *buf, size_t cap);

/*
 * Appends `key=value`. A value that is not one line of UTF-8 text is refused rather than
 * cleaned: a user name with a newline would otherwise smuggle in a second key.
 */
void la_kv_add(struct la_kv_writer *w, const char *key, const char *value);

enum la_kv_status {
    LA_KV_FOUND,
    LA_KV_ABSENT,
    LA_KV_MALFORMED, /* a line without `=`, an empty key, or an empty line */
    LA_KV_DUPLICATE, /* the key appears more than once */
};

/*
 * Finds `key` in payload[0..len). Every line is checked, not only up to the match, so a
 * malformed or repeated line anywhere fails the whole payload.
 */
enum la_kv_status la_kv_find(const uint8_t *payload, size_t len, const char *key,
                             const uint8_t **value, size_t *value_len);

/* Strict decimal: optional `-`, 1 to 6 digits, nothing else. */
bool la_kv_parse_int(const uint8_t *s, size_t len, long *out);

#endif
