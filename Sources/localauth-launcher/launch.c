/* The launcher's pure parts; see launch.h. */
#include "launch.h"

#include <string.h>

bool la_launch_args_ok(int argc, char *const argv[])
{
    return argc == 1 && argv != NULL && argv[0] != NULL && argv[1] == NULL;
}

size_t la_launch_refusal(const char *cause, unsigned char *out, size_t cap)
{
    static const char head[] = "code=-6\nname=biometryNotAvailable\ncause=localauth-launcher: ";
    size_t head_len = sizeof head - 1;
    size_t n = strnlen(cause, LA_LAUNCH_CAUSE_MAX);
    size_t payload = head_len + n;
    if (cap < 5 + payload)
        return 0;
    size_t length = payload + 1; /* the length field counts the type byte too */
    out[0] = (unsigned char)(length >> 24);
    out[1] = (unsigned char)(length >> 16);
    out[2] = (unsigned char)(length >> 8);
    out[3] = (unsigned char)length;
    out[4] = 'R';
    memcpy(out + 5, head, head_len);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)cause[i];
        out[5 + head_len + i] = c >= 0x20 && c < 0x7f ? c : '?';
    }
    return 5 + payload;
}
