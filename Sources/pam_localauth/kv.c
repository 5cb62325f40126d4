/* Key/value payloads; see kv.h. */
#include "kv.h"

#include "frame.h"

#include <string.h>

void la_kv_init(struct la_kv_writer *w, char *buf, size_t cap)
{
    w->buf = buf;
    w->cap = cap;
    w->len = 0;
    w->failed_key = NULL;
    w->too_long = false;
}

static bool la_kv_value_ok(const char *value, size_t len)
{
    return memchr(value, '\n', len) == NULL && la_utf8_valid((const uint8_t *)value, len);
}

void la_kv_add(struct la_kv_writer *w, const char *key, const char *value)
{
    if (w->failed_key != NULL)
        return;
    size_t klen = strlen(key), vlen = strlen(value);
    size_t sep = w->len == 0 ? 0 : 1;
    if (!la_kv_value_ok(value, vlen)) {
        w->failed_key = key;
        return;
    }
    if (w->cap - w->len < sep + klen + 1 + vlen) {
        w->failed_key = key;
        w->too_long = true;
        return;
    }
    char *p = w->buf + w->len;
    if (sep)
        *p++ = '\n';
    memcpy(p, key, klen);
    p[klen] = '=';
    memcpy(p + klen + 1, value, vlen);
    w->len += sep + klen + 1 + vlen;
}

/* Splits one line at its first `=`; false when there is none or the key is empty. */
static bool la_kv_split(const uint8_t *line, size_t len, size_t *eq)
{
    const uint8_t *p = memchr(line, '=', len);
    if (p == NULL || p == line)
        return false;
    *eq = (size_t)(p - line);
    return true;
}

enum la_kv_status la_kv_find(const uint8_t *payload, size_t len, const char *key,
                             const uint8_t **value, size_t *value_len)
{
    size_t klen = strlen(key);
    bool found = false;
    size_t pos = 0;
    if (len > 0 && payload[len - 1] == '\n')
        return LA_KV_MALFORMED; /* an empty last line */
    while (pos < len) {
        const uint8_t *line = payload + pos;
        const uint8_t *nl = memchr(line, '\n', len - pos);
        size_t llen = nl ? (size_t)(nl - line) : len - pos;
        size_t eq;
        if (!la_kv_split(line, llen, &eq))
            return LA_KV_MALFORMED;
        if (eq == klen && memcmp(line, key, klen) == 0) {
            if (found)
                return LA_KV_DUPLICATE;
            found = true;
            *value = line + eq + 1;
            *value_len = llen - eq - 1;
        }
        pos += llen + 1; /* past the `\n` */
    }
    return found ? LA_KV_FOUND : LA_KV_ABSENT;
}

bool la_kv_parse_int(const uint8_t *s, size_t len, long *out)
{
    bool negative = len > 0 && s[0] == '-';
    size_t i = negative ? 1 : 0;
    if (len - i < 1 || len - i > 6)
        return false;
    long n = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        n = n * 10 + (s[i] - '0');
    }
    *out = negative ? -n : n;
    return true;
}
