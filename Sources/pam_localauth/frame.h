/*
 * Length-prefixed frames on the connection between the module and the helper (docs/PROTOCOL.md):
 * u32 big-endian length (type byte + payload, 1..LA_FRAME_MAX), type byte, payload.
 *
 * Pure functions on caller-owned buffers: no I/O, no allocation, no PAM. The decoder is the
 * one place that reads bytes the helper wrote, so it must stay drivable by a fuzzer.
 */
#ifndef LA_FRAME_H
#define LA_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    LA_FRAME_HEADER = 4,
    LA_FRAME_MAX = 4096, /* largest length field: type byte + payload */
    LA_FRAME_WIRE_MAX = LA_FRAME_HEADER + LA_FRAME_MAX,
};

enum la_frame_status {
    LA_FRAME_OK = 0,
    LA_FRAME_INCOMPLETE,  /* more bytes needed; only an error at end of file */
    LA_FRAME_BAD_LENGTH,  /* length field 0 or above LA_FRAME_MAX */
    LA_FRAME_BAD_TYPE,    /* a byte that is no frame type of the protocol */
    LA_FRAME_BAD_PAYLOAD, /* NUL byte, invalid UTF-8, or a payload where none belongs */
    LA_FRAME_NO_ROOM,     /* encoding: payload too long or output buffer too small */
};

struct la_frame {
    uint8_t type;
    const uint8_t *payload; /* points into the decoded buffer; not NUL-terminated */
    size_t payload_len;
};

/*
 * Decodes the first frame of buf[0..len). On LA_FRAME_OK fills *out and sets *consumed to the
 * frame's wire size. A bad length is reported as soon as the header is there, without
 * waiting for the bytes it announces.
 */
enum la_frame_status la_frame_decode(const uint8_t *buf, size_t len,
                                     struct la_frame *out, size_t *consumed);

/* Writes one frame into out[0..cap) and sets *written. Validates like the decoder. */
enum la_frame_status la_frame_encode(uint8_t type, const void *payload, size_t payload_len,
                                     uint8_t *out, size_t cap, size_t *written);

/* A short phrase for logs: "length out of range" etc. */
const char *la_frame_status_text(enum la_frame_status status);

/* True when the bytes are well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
bool la_utf8_valid(const uint8_t *s, size_t len);

#endif
