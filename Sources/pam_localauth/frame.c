/* Frame encoding and decoding; see frame.h. */
#include "frame.h"

#include <string.h>

/* Every type of the protocol, both directions; which direction may send which is the
 * reader's business (session.c), the decoder only rejects bytes that are no type at all. */
static const char la_frame_types[] = "QANCTSIEPpWKR";

/* Types whose payload must be empty: a byte there means the peer is confused. */
static bool la_frame_type_is_empty(uint8_t type)
{
    return type == 'N' || type == 'C' || type == 'T' || type == 'S';
}

static bool la_frame_type_known(uint8_t type)
{
    return type != 0 && memchr(la_frame_types, type, sizeof la_frame_types - 1) != NULL;
}

/* Length of the UTF-8 sequence led by byte b, or 0 when b cannot lead one. */
static size_t la_utf8_seq_len(uint8_t b)
{
    if (b < 0x80)
        return 1;
    if (b >= 0xc2 && b <= 0xdf)
        return 2;
    if (b >= 0xe0 && b <= 0xef)
        return 3;
    if (b >= 0xf0 && b <= 0xf4)
        return 4;
    return 0;
}

/* The second byte's range depends on the lead byte: this is what rules out overlong
 * forms, UTF-16 surrogates and code points above U+10FFFF. */
static bool la_utf8_second_ok(uint8_t lead, uint8_t b)
{
    switch (lead) {
    case 0xe0: return b >= 0xa0 && b <= 0xbf;
    case 0xed: return b >= 0x80 && b <= 0x9f;
    case 0xf0: return b >= 0x90 && b <= 0xbf;
    case 0xf4: return b >= 0x80 && b <= 0x8f;
    default: return b >= 0x80 && b <= 0xbf;
    }
}

bool la_utf8_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t n = la_utf8_seq_len(s[i]);
        if (n == 0 || n > len - i)
            return false;
        if (n > 1 && !la_utf8_second_ok(s[i], s[i + 1]))
            return false;
        for (size_t k = 2; k < n; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        i += n;
    }
    return true;
}

static enum la_frame_status la_frame_check(uint8_t type, const uint8_t *payload, size_t len)
{
    if (!la_frame_type_known(type))
        return LA_FRAME_BAD_TYPE;
    if (la_frame_type_is_empty(type) && len != 0)
        return LA_FRAME_BAD_PAYLOAD;
    if (len != 0 && memchr(payload, 0, len) != NULL)
        return LA_FRAME_BAD_PAYLOAD;
    if (!la_utf8_valid(payload, len))
        return LA_FRAME_BAD_PAYLOAD;
    return LA_FRAME_OK;
}

enum la_frame_status la_frame_decode(const uint8_t *buf, size_t len,
                                     struct la_frame *out, size_t *consumed)
{
    if (len < LA_FRAME_HEADER)
        return LA_FRAME_INCOMPLETE;
    uint32_t length = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16
                    | (uint32_t)buf[2] << 8 | (uint32_t)buf[3];
    if (length < 1 || length > LA_FRAME_MAX)
        return LA_FRAME_BAD_LENGTH;
    if (len - LA_FRAME_HEADER < length)
        return LA_FRAME_INCOMPLETE;

    const uint8_t *payload = buf + LA_FRAME_HEADER + 1;
    size_t payload_len = length - 1;
    enum la_frame_status status = la_frame_check(buf[LA_FRAME_HEADER], payload, payload_len);
    if (status != LA_FRAME_OK)
        return status;

    out->type = buf[LA_FRAME_HEADER];
    out->payload = payload;
    out->payload_len = payload_len;
    *consumed = LA_FRAME_HEADER + length;
    return LA_FRAME_OK;
}

enum la_frame_status la_frame_encode(uint8_t type, const void *payload, size_t payload_len,
                                     uint8_t *out, size_t cap, size_t *written)
{
    if (payload_len > LA_FRAME_MAX - 1 || cap < LA_FRAME_HEADER + 1 + payload_len)
        return LA_FRAME_NO_ROOM;
    enum la_frame_status status = la_frame_check(type, payload, payload_len);
    if (status != LA_FRAME_OK)
        return status;

    uint32_t length = (uint32_t)payload_len + 1;
    out[0] = (uint8_t)(length >> 24);
    out[1] = (uint8_t)(length >> 16);
    out[2] = (uint8_t)(length >> 8);
    out[3] = (uint8_t)length;
    out[LA_FRAME_HEADER] = type;
    if (payload_len != 0)
        memcpy(out + LA_FRAME_HEADER + 1, payload, payload_len);
    *written = LA_FRAME_HEADER + 1 + payload_len;
    return LA_FRAME_OK;
}

const char *la_frame_status_text(enum la_frame_status status)
{
    switch (status) {
    case LA_FRAME_OK: return "ok";
    case LA_FRAME_INCOMPLETE: return "end of file in the middle of a frame";
    case LA_FRAME_BAD_LENGTH: return "frame length out of range (oversized or zero)";
    case LA_FRAME_BAD_TYPE: return "unknown frame type";
    case LA_FRAME_BAD_PAYLOAD: return "malformed frame payload";
    case LA_FRAME_NO_ROOM: return "frame too large";
    }
    return "unknown frame status";
}
